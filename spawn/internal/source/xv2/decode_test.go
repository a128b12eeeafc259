package xv2

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
