package xv2

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf16"
)

// allFields is what the spawn's source asks for.
var allFields = url.Values{
	"tweet.fields": {"author_id,conversation_id,created_at,entities,lang,note_tweet,public_metrics,referenced_tweets"},
	"expansions":   {"author_id,referenced_tweets.id,referenced_tweets.id.author_id"},
}

// openStream connects to the server's stream with the query q and
// returns a function reading the next message that is not a keep-alive.
func openStream(t *testing.T, base string, q url.Values) func() []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", base+StreamPath+"?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	return func() []byte {
		t.Helper()
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line = bytes.TrimSpace(line); len(line) > 0 {
				return line
			}
		}
	}
}

func decodeMessage(t *testing.T, line []byte) messageJSON {
	t.Helper()
	var m messageJSON
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return m
}

// TestStream_SendsTextAsXDoes: the text is HTML-escaped (&, <, > only),
// each link is a 23-character t.co address with an entities.urls entry
// holding the link as written, and a long post's whole text is in
// note_tweet.
func TestStream_SendsTextAsXDoes(t *testing.T) {
	srv, base := Start(t, Options{BearerToken: "tok"})
	srv.AddRule("golang", "")
	next := openStream(t, base, allFields)

	srv.Publish(Post{ID: "10", Text: `golang <generics> & "iterators": https://go.dev/blog/range-functions?a=1&b=2.`, Username: "gopher", Lang: "en"})
	m := decodeMessage(t, next())
	d := m.Data
	if d.Entities == nil || len(d.Entities.URLs) != 1 {
		t.Fatalf("entities %+v", d.Entities)
	}
	u := d.Entities.URLs[0]
	if !strings.HasPrefix(u.URL, "https://t.co/") || len(u.URL) != 23 || u.ExpandedURL != "https://go.dev/blog/range-functions?a=1&b=2" {
		t.Errorf("url entity %+v", u)
	}
	want := `golang &lt;generics&gt; &amp; "iterators": ` + u.URL + `.`
	if d.Text != want {
		t.Errorf("text %q, want %q", d.Text, want)
	}
	if runes := []rune(unescaper.Replace(d.Text)); string(runes[u.Start:u.End]) != u.URL {
		t.Errorf("entity %d..%d is %q in the unescaped text", u.Start, u.End, string(runes[u.Start:u.End]))
	}
	if m.Includes == nil || len(m.Includes.Users) != 1 || m.Includes.Users[0].Username != "gopher" || d.AuthorID != m.Includes.Users[0].ID {
		t.Errorf("author %q includes %+v", d.AuthorID, m.Includes)
	}

	long := "golang " + strings.Repeat("& more ", 60)
	srv.Publish(Post{ID: "11", Text: long, Username: "gopher"})
	d = decodeMessage(t, next()).Data
	if d.NoteTweet == nil || d.NoteTweet.Text != escape(long) {
		t.Fatalf("note_tweet %+v", d.NoteTweet)
	}
	if n := len([]rune(unescaper.Replace(d.Text))); n != shortTextRunes || !strings.HasSuffix(d.Text, "…") {
		t.Errorf("cut text has %d characters: %q", n, d.Text)
	}
}

// TestStream_SendsRepostsAndQuotesAsXDoes follows the Retweet and Quote
// Tweet examples of X's data dictionary: a repost's text is "RT @user: "
// and the original cut to 140 UTF-16 units ending in "…", referenced as
// "retweeted", with the whole original (and its author) in includes; a
// quote post ends with the quoted post's t.co link, referenced as
// "quoted".
func TestStream_SendsRepostsAndQuotesAsXDoes(t *testing.T) {
	srv, base := Start(t, Options{BearerToken: "tok"})
	srv.AddRule("golang", "")
	next := openStream(t, base, allFields)

	origText := "golang 1.24 is out 🎉 with generic type aliases & faster maps, swiss tables, weak pointers, and a lot more: https://go.dev/blog/go1.24 #golang"
	orig, _ := srv.Publish(Post{ID: "20", Text: origText, Username: "golang", AuthorID: "113419064", Lang: "en"})
	next()
	srv.Publish(Post{ID: "21", RepostOf: orig.ID, Username: "gopher", AuthorID: "42"})
	m := decodeMessage(t, next())
	d := m.Data
	rt := unescaper.Replace(d.Text)
	if !strings.HasPrefix(rt, "RT @golang: golang 1.24") || !strings.HasSuffix(rt, "…") || len(utf16.Encode([]rune(rt))) != repostTextUnits {
		t.Errorf("repost text %q (%d UTF-16 units)", rt, len(utf16.Encode([]rune(rt))))
	}
	if len(d.ReferencedTweets) != 1 || d.ReferencedTweets[0] != (refJSON{Type: "retweeted", ID: "20"}) || d.AuthorID != "42" || d.Lang != "en" {
		t.Errorf("repost %+v", d)
	}
	if m.Includes == nil || len(m.Includes.Tweets) != 1 || len(m.Includes.Users) != 2 {
		t.Fatalf("includes %+v", m.Includes)
	}
	o := m.Includes.Tweets[0]
	if o.ID != "20" || o.AuthorID != "113419064" || !strings.Contains(o.Text, "&amp; faster maps") || o.Entities == nil || o.Entities.URLs[0].ExpandedURL != "https://go.dev/blog/go1.24" {
		t.Errorf("original %+v", o)
	}

	srv.Publish(Post{ID: "22", Text: "worth reading", QuoteOf: orig.ID, Username: "rustacean", Lang: "en"})
	m = decodeMessage(t, next())
	d = m.Data
	if len(d.ReferencedTweets) != 1 || d.ReferencedTweets[0] != (refJSON{Type: "quoted", ID: "20"}) || d.Entities == nil {
		t.Fatalf("quote %+v", d)
	}
	q := d.Entities.URLs[len(d.Entities.URLs)-1]
	if q.ExpandedURL != "https://x.com/golang/status/20" || d.Text != "worth reading "+q.URL {
		t.Errorf("quote text %q, link %+v", d.Text, q)
	}
	if m.Includes == nil || len(m.Includes.Tweets) != 1 || m.Includes.Tweets[0].ID != "20" {
		t.Errorf("includes %+v", m.Includes)
	}
}

// TestPublish_RulesSeeWhatXsRulesSee: X matches a post on its text as
// written (unescaped, links in full), a repost on its whole original and a
// quote post on the quoted post's text too.
func TestPublish_RulesSeeWhatXsRulesSee(t *testing.T) {
	srv := New(Options{})
	domain := srv.AddRule(`"go.dev"`, "")
	amp := srv.AddRule(`"tom & jerry"`, "")
	tail := srv.AddRule("swisstables", "")
	quoted := srv.AddRule("quotedword", "")
	orig, ids := srv.Publish(Post{Text: "see https://go.dev/doc " + strings.Repeat("padding ", 20) + "swisstables quotedword", Username: "a"})
	if strings.Join(ids, ",") != strings.Join([]string{domain.ID, tail.ID, quoted.ID}, ",") {
		t.Errorf("original matched %v", ids)
	}
	if _, ids := srv.Publish(Post{Text: "Tom & Jerry", Username: "b"}); len(ids) != 1 || ids[0] != amp.ID {
		t.Errorf("escaped text matched %v", ids)
	}
	if _, ids := srv.Publish(Post{RepostOf: orig.ID, Username: "c"}); len(ids) != 3 {
		t.Errorf("repost matched %v, want the original's three rules", ids)
	}
	if _, ids := srv.Publish(Post{Text: "look", QuoteOf: orig.ID, Username: "d"}); len(ids) != 3 {
		t.Errorf("quote matched %v, want the quoted post's three rules", ids)
	}
}

// TestEndStream_SendsXsDisconnectDocument: the operational-disconnect
// error of X's guide reaches the client, then the stream ends.
func TestEndStream_SendsXsDisconnectDocument(t *testing.T) {
	srv, base := Start(t, Options{BearerToken: "tok"})
	next := openStream(t, base, nil) // the server holds the connection before it answers
	if !srv.EndStream(OperationalDisconnect) {
		t.Fatal("no stream open")
	}
	var doc struct {
		Errors []struct {
			Title          string `json:"title"`
			DisconnectType string `json:"disconnect_type"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(next(), &doc); err != nil || len(doc.Errors) != 1 || doc.Errors[0].DisconnectType != "UpstreamOperationalDisconnect" {
		t.Fatalf("document %+v: %v", doc, err)
	}
}

// TestPublishMessage_SendsRecordedMessageWithMatchingRules sends X's
// Retweet example: its rules match the original's expanded link.
func TestPublishMessage_SendsRecordedMessageWithMatchingRules(t *testing.T) {
	srv, base := Start(t, Options{BearerToken: "tok"})
	r := srv.AddRule("1aj0", "alexa")
	next := openStream(t, base, nil)
	recorded, err := os.ReadFile("../../../spawn/internal/source/twitterv2/testdata/x-docs/reference-retweet.json")
	if err != nil {
		t.Fatal(err)
	}
	var lookup struct {
		Data     []json.RawMessage `json:"data"`
		Includes json.RawMessage   `json:"includes"`
	}
	if err := json.Unmarshal(recorded, &lookup); err != nil {
		t.Fatal(err)
	}
	msg, _ := json.Marshal(map[string]json.RawMessage{"data": lookup.Data[0], "includes": lookup.Includes})
	ids, err := srv.PublishMessage(msg)
	if err != nil || len(ids) != 1 || ids[0] != r.ID {
		t.Fatalf("matched %v, %v", ids, err)
	}
	line := next()
	if !bytes.Contains(line, []byte(`"matching_rules":[{"id":"`+r.ID+`","tag":"alexa"}]`)) || !bytes.Contains(line, []byte(`"RT @suhemparack: I built`)) {
		t.Fatalf("sent %s", line)
	}
	if _, err := srv.PublishMessage([]byte(`{"errors":[]}`)); err == nil {
		t.Fatal("a message without a post was accepted")
	}
}
