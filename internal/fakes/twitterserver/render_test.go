package twitterserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// urlEntity is one entities.urls entry as the tests read it.
type urlEntity struct {
	URL         string `json:"url"`
	ExpandedURL string `json:"expanded_url"`
	Indices     [2]int `json:"indices"`
}

type streamedTweet struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
	Entities  struct {
		URLs []urlEntity `json:"urls"`
	} `json:"entities"`
	ExtendedTweet *struct {
		FullText string `json:"full_text"`
		Entities struct {
			URLs []urlEntity `json:"urls"`
		} `json:"entities"`
	} `json:"extended_tweet"`
	RetweetedStatus *streamedTweet `json:"retweeted_status"`
}

// TestStream_SendsTextAsTwitterDoes follows the native payloads of X's
// data dictionary: text HTML-escaped, links t.co-shortened with their
// entities, a long text cut to 115 characters and "… " with a link to the
// tweet (the whole text in extended_tweet), a retweet "RT @user: …" cut to
// 140 UTF-16 units with the original in retweeted_status.
func TestStream_SendsTextAsTwitterDoes(t *testing.T) {
	s, base := Start(t, Options{Credentials: creds})
	resp, r := openStream(t, signed(creds), base, url.Values{"track": {"golang"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	testkit.WaitFor(t, waitTimeout, "open stream", func() bool { return s.Open() == 1 })
	read := func() streamedTweet {
		var d streamedTweet
		if err := json.Unmarshal([]byte(nextMessage(t, r)), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}

	s.Publish(Tweet{Text: "golang <3 & more: https://go.dev/blog/go1.24"})
	d := read()
	if len(d.Entities.URLs) != 1 {
		t.Fatalf("entities %+v", d.Entities)
	}
	u := d.Entities.URLs[0]
	if d.Text != "golang &lt;3 &amp; more: "+u.URL || len(u.URL) != 23 || u.ExpandedURL != "https://go.dev/blog/go1.24" {
		t.Errorf("text %q entity %+v", d.Text, u)
	}
	if rs := []rune(unescaper.Replace(d.Text)); string(rs[u.Indices[0]:u.Indices[1]]) != u.URL {
		t.Errorf("indices %v point at %q", u.Indices, string(rs[u.Indices[0]:u.Indices[1]]))
	}

	long := "golang " + strings.Repeat("long & longer ", 15) + "https://example.org/end"
	s.Publish(Tweet{Text: long})
	d = read()
	rs := []rune(unescaper.Replace(d.Text))
	if !d.Truncated || len(rs) != compatCutRunes+2+23 || string(rs[compatCutRunes:compatCutRunes+2]) != "… " || d.ExtendedTweet == nil {
		t.Fatalf("long tweet %q (%d characters), extended %+v", d.Text, len(rs), d.ExtendedTweet)
	}
	if self := d.Entities.URLs[len(d.Entities.URLs)-1]; !strings.HasPrefix(self.ExpandedURL, "https://twitter.com/i/web/status/") {
		t.Errorf("self link %+v", self)
	}
	if e := d.ExtendedTweet; !strings.HasPrefix(e.FullText, "golang long &amp; longer") || len(e.Entities.URLs) != 1 || e.Entities.URLs[0].ExpandedURL != "https://example.org/end" {
		t.Errorf("extended tweet %+v", e)
	}

	s.Publish(Tweet{Text: long, RetweetOf: "orig"})
	d = read()
	if !strings.HasPrefix(d.Text, "RT @orig: golang long &amp;") || !strings.HasSuffix(d.Text, "…") || len(utf16.Encode([]rune(unescaper.Replace(d.Text)))) != retweetTextUnits {
		t.Errorf("retweet text %q", d.Text)
	}
	if o := d.RetweetedStatus; o == nil || o.ExtendedTweet == nil || o.ExtendedTweet.FullText != escape(strings.Replace(long, "https://example.org/end", o.ExtendedTweet.Entities.URLs[0].URL, 1)) {
		t.Errorf("retweeted status %+v", o)
	}
}

// TestPublishMessage_MatchesRecordedTweetsAsTwitterDoes sends X's
// documented retweet of a quote tweet: its track term is a word of the
// quoted tweet's expanded link only.
func TestPublishMessage_MatchesRecordedTweetsAsTwitterDoes(t *testing.T) {
	s, base := Start(t, Options{Credentials: creds})
	_, r := openStream(t, signed(creds), base, url.Values{"track": {"3od0"}})
	testkit.WaitFor(t, waitTimeout, "open stream", func() bool { return s.Open() == 1 })
	doc, err := os.ReadFile("../../../spawn/internal/source/twitterv1/testdata/x-docs/native-enriched-retweeted-quote-tweet.json")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PublishMessage(doc); err != nil || n != 1 {
		t.Fatalf("sent to %d streams: %v", n, err)
	}
	if got := nextMessage(t, r); !strings.Contains(got, `"id_str":"1225470895902412800"`) {
		t.Fatalf("sent %s", got)
	}
	if n, _ := s.PublishMessage([]byte(`{"id_str":"1","text":"nothing tracked"}`)); n != 0 {
		t.Fatalf("an unmatched tweet went to %d streams", n)
	}
	if _, err := s.PublishMessage([]byte(`{"text":"no id"}`)); err == nil {
		t.Fatal("a tweet without id_str was accepted")
	}
}
