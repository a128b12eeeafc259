package twitterv2

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestDecodeLine_Posts(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	users := `"includes":{"users":[{"id":"42","username":"gopher"}]}`
	cases := []struct {
		name string
		line string
		want func(t *testing.T, m message)
	}{
		{"post with author, reply and thread",
			`{"data":{"id":"1800","text":"go &amp; rust","author_id":"42","created_at":"2025-03-01T11:00:00.000Z","lang":"EN","conversation_id":"1700","referenced_tweets":[{"type":"quoted","id":"9"},{"type":"replied_to","id":"1750"}]},` + users + `,"matching_rules":[{"id":"5","tag":"bw:a"},{"id":"6","tag":"bw:b"}]}`,
			func(t *testing.T, m message) {
				it := m.item
				if it.ID != "tw:1800" || it.Author != "gopher" || it.URL != "https://twitter.com/gopher/status/1800" {
					t.Errorf("id %q author %q url %q", it.ID, it.Author, it.URL)
				}
				if it.Text != "go & rust" || it.Lang != "en" || it.ReplyTo != "tw:1750" || it.ThreadID != "tw:1700" {
					t.Errorf("text %q lang %q reply %q thread %q", it.Text, it.Lang, it.ReplyTo, it.ThreadID)
				}
				if !it.PublishedAt.Equal(now.Add(-time.Hour)) || !it.FetchedAt.Equal(now) {
					t.Errorf("published %v fetched %v", it.PublishedAt, it.FetchedAt)
				}
				if !slices.Equal(m.tags, []string{"bw:a", "bw:b"}) {
					t.Errorf("tags %q", m.tags)
				}
			}},
		{"long post takes note_tweet, no author expansion, own conversation",
			`{"data":{"id":"7","text":"short…","author_id":"1","conversation_id":"7","lang":"und","note_tweet":{"text":"the whole long text"},"created_at":"2999-01-01T00:00:00Z"}}`,
			func(t *testing.T, m message) {
				it := m.item
				if it.Text != "the whole long text" || it.Author != "" || it.URL != "https://twitter.com/i/web/status/7" {
					t.Errorf("text %q author %q url %q", it.Text, it.Author, it.URL)
				}
				if it.ThreadID != "" || it.Lang != "" || !it.PublishedAt.Equal(now) {
					t.Errorf("thread %q lang %q published %v (a future date counts as now)", it.ThreadID, it.Lang, it.PublishedAt)
				}
			}},
		{"operational disconnect is a notice",
			`{"errors":[{"title":"operational-disconnect","disconnect_type":"UpstreamOperationalDisconnect","detail":"This stream has been disconnected upstream for operational reasons."}]}`,
			func(t *testing.T, m message) {
				if m.post || !strings.Contains(m.notice, "operational reasons") {
					t.Errorf("message %+v", m)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := decodeLine([]byte(tc.line), now)
			if err != nil {
				t.Fatal(err)
			}
			tc.want(t, m)
		})
	}
}

// TestDecodeLine_Engagement reads a post's public_metrics: retweets are
// its reposts and likes its likes; a post without the field (tweet.fields
// did not ask for it) has unknown engagement, not zero.
func TestDecodeLine_Engagement(t *testing.T) {
	cases := []struct {
		name string
		line string
		want *api.Engagement
	}{
		{"public metrics", `{"data":{"id":"1","text":"x","public_metrics":{"retweet_count":7,"reply_count":2,"like_count":31,"quote_count":1,"bookmark_count":0,"impression_count":900}}}`,
			&api.Engagement{Reposts: 7, Likes: 31}},
		{"a new post has zero", `{"data":{"id":"2","text":"x","public_metrics":{"retweet_count":0,"reply_count":0,"like_count":0,"quote_count":0}}}`,
			&api.Engagement{}},
		{"no public metrics", `{"data":{"id":"3","text":"x"}}`, nil},
		{"a count missing", `{"data":{"id":"4","text":"x","public_metrics":{"retweet_count":3}}}`, nil},
		{"a count that is not a number", `{"data":{"id":"5","text":"x","public_metrics":{"retweet_count":"3","like_count":null}}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := decodeLine([]byte(tc.line), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := m.item.Engagement; (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("engagement %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeLine_RefusesMalformed(t *testing.T) {
	for _, line := range []string{
		`not json`,
		`[1,2]`,
		`{}`,
		`{"data":{"id":"12a","text":"x"}}`,
		`{"data":{"id":"","text":"x"}}`,
		`{"data":{"id":"123456789012345678901234","text":"x"}}`,
		`{"data":null}`,
	} {
		if _, err := decodeLine([]byte(line), time.Now()); !errors.Is(err, ErrMalformed) {
			t.Errorf("decodeLine(%q) = %v, want ErrMalformed", line, err)
		}
	}
}

func TestLineReader_SkipsOversizedAndGoesOn(t *testing.T) {
	body := "first\r\n" + strings.Repeat("x", 100) + "\r\n\r\nsecond\r\n" + strings.Repeat("y", 40) + "\nthird\r\nhalf"
	lr := newLineReader(strings.NewReader(body), 32)
	var got []string
	var oversized int
	for {
		line, err := lr.Next()
		if errors.Is(err, ErrOversized) {
			oversized++
			continue
		}
		if err != nil {
			if !errors.Is(err, errTruncated) {
				t.Fatalf("end of stream: %v, want errTruncated", err)
			}
			break
		}
		got = append(got, string(line))
	}
	if want := []string{"first", "", "second", "third"}; !slices.Equal(got, want) || oversized != 2 {
		t.Fatalf("lines %q oversized %d; want %q and 2", got, oversized, want)
	}
	if _, err := newLineReader(strings.NewReader("a\r\n"), 8).Next(); err != nil {
		t.Fatal(err)
	}
	lr = newLineReader(strings.NewReader(""), 8)
	if _, err := lr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v, want io.EOF", err)
	}
}

// TestDecodeLine_TextAsTheAuthorWroteIt: X's text is HTML-escaped once
// and its links are t.co addresses; the item has the text unescaped once
// and every link in full, matched on the t.co address itself.
func TestDecodeLine_TextAsTheAuthorWroteIt(t *testing.T) {
	cases := []struct {
		name      string
		data      string
		wantText  string
		wantLinks []string
	}{
		{"entities unescaped once",
			`"text":"a &amp;lt;b&amp;gt; &lt;i&gt; AT&amp;T &amp;amp; &copy;"`,
			"a &lt;b&gt; <i> AT&T &amp; &copy;", nil},
		{"t.co replaced wherever it is, whatever the indices say",
			`"text":"read https://t.co/abc and https://t.co/abcd, again https://t.co/abc","entities":{"urls":[` +
				`{"start":0,"end":1,"url":"https://t.co/abc","expanded_url":"https://go.dev/doc?a=1&b=2"},` +
				`{"start":99,"end":3,"url":"https://t.co/abcd","expanded_url":"https://example.com/&amp;"}]}`,
			"read https://go.dev/doc?a=1&b=2 and https://example.com/&amp;, again https://go.dev/doc?a=1&b=2",
			[]string{"https://go.dev/doc?a=1&b=2", "https://example.com/&amp;"}},
		{"a link that is not a web address stays shortened",
			`"text":"x https://t.co/js","entities":{"urls":[{"url":"https://t.co/js","expanded_url":"javascript:alert(1)"}]}`,
			"x https://t.co/js", []string{"https://t.co/js"}},
		{"a long post's whole text with its own entities",
			`"text":"cut https://t.co/a…","entities":{"urls":[]},"note_tweet":{"text":"whole &amp; long https://t.co/a","entities":{"urls":[{"url":"https://t.co/a","expanded_url":"https://example.org/long"}]}}`,
			"whole & long https://example.org/long", []string{"https://example.org/long"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := decodeLine([]byte(`{"data":{"id":"1",`+tc.data+`}}`), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if m.item.Text != tc.wantText || !slices.Equal(m.item.Links, tc.wantLinks) {
				t.Fatalf("text %q links %q\nwant %q links %q", m.item.Text, m.item.Links, tc.wantText, tc.wantLinks)
			}
		})
	}
}

// TestDecodeLine_RepostsAndQuotes: a repost is stored whole, from
// includes.tweets, with repost_of and the original's engagement; a quote
// post keeps the quoted post's text and address.
func TestDecodeLine_RepostsAndQuotes(t *testing.T) {
	users := `"users":[{"id":"42","username":"gopher"},{"id":"7","username":"golang"}]`
	repost := `{"data":{"id":"300","text":"RT @golang: Go 1.24 &amp; more: swiss tab…","author_id":"42","lang":"en","conversation_id":"300",` +
		`"referenced_tweets":[{"type":"retweeted","id":"200"}],"public_metrics":{"retweet_count":9,"like_count":0}},` +
		`"includes":{` + users + `,"tweets":[{"id":"200","author_id":"7","text":"Go 1.24 &amp; more: swiss tables, weak pointers https://t.co/x1",` +
		`"entities":{"urls":[{"url":"https://t.co/x1","expanded_url":"https://go.dev/blog/go1.24"}]},"public_metrics":{"retweet_count":9,"like_count":40}}]}}`
	m, err := decodeLine([]byte(repost), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	it := m.item
	if it.ID != "tw:300" || it.Author != "gopher" || it.AuthorID != "42" || it.RepostOf != "tw:200" || it.URL != "https://twitter.com/gopher/status/300" {
		t.Errorf("repost %+v", it)
	}
	if it.Text != "Go 1.24 & more: swiss tables, weak pointers https://go.dev/blog/go1.24" || !slices.Equal(it.Links, []string{"https://go.dev/blog/go1.24"}) {
		t.Errorf("repost text %q links %q", it.Text, it.Links)
	}
	if e := it.Engagement; e == nil || *e != (api.Engagement{Reposts: 9, Likes: 40}) {
		t.Errorf("repost engagement %+v, want the original's", e)
	}

	if _, err := decodeLine([]byte(`{"data":{"id":"301","text":"RT @golang: cut…","referenced_tweets":[{"type":"retweeted","id":"200"}]}}`), time.Now()); !errors.Is(err, ErrMalformed) {
		t.Errorf("repost without its original: %v, want ErrMalformed", err)
	}

	quote := `{"data":{"id":"400","text":"so good","author_id":"42","referenced_tweets":[{"type":"quoted","id":"200"}]},` +
		`"includes":{` + users + `,"tweets":[{"id":"200","author_id":"7","text":"swiss &lt;tables&gt;"}]}}`
	m, err = decodeLine([]byte(quote), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m.item.Text != "so good\n\nswiss <tables>" || !slices.Equal(m.item.Links, []string{"https://twitter.com/golang/status/200"}) || m.item.RepostOf != "" {
		t.Errorf("quote text %q links %q", m.item.Text, m.item.Links)
	}
	m, err = decodeLine([]byte(`{"data":{"id":"401","text":"hm","referenced_tweets":[{"type":"quoted","id":"9"}]}}`), time.Now())
	if err != nil || m.item.Text != "hm" || !slices.Equal(m.item.Links, []string{"https://twitter.com/i/web/status/9"}) {
		t.Errorf("quote without the quoted post: %q %q %v", m.item.Text, m.item.Links, err)
	}
}
