package hackernews

import (
	"slices"
	"testing"
	"time"
)

func TestPlainText_ReadsHackerNewsHTML(t *testing.T) {
	cases := []struct {
		name  string
		html  string
		text  string
		links []string
	}{
		{name: "plain", html: "THis rules", text: "THis rules"},
		{name: "entities decoded once", html: "x &amp;lt; y &#x27;q&#x27; a&#x2F;b", text: "x &lt; y 'q' a/b"},
		{name: "paragraphs without closing tags", html: "one<p>two<p>three", text: "one two three"},
		{name: "inline tags join words", html: "<i>cura</i>tion and <code>x</code>", text: "curation and x"},
		{name: "pre keeps words apart", html: "a<pre><code>  b\n  c\n</code></pre>d", text: "a b c d"},
		{
			name:  "a shortened link reads as its href",
			html:  `see <a href="https:&#x2F;&#x2F;example.com&#x2F;a&#x2F;very&#x2F;long&#x2F;path" rel="nofollow">https:&#x2F;&#x2F;example.com&#x2F;a&#x2F;ve...</a> now`,
			text:  "see https://example.com/a/very/long/path now",
			links: []string{"https://example.com/a/very/long/path"},
		},
		{
			name:  "a link with its own words keeps them",
			html:  `<a href="https://example.com/x">the docs</a>`,
			text:  "the docs",
			links: []string{"https://example.com/x"},
		},
		{
			name:  "links in order without repeats",
			html:  `<a href="https://b.example/">https://b.example/</a> <a href="https://a.example/">https://a.example/</a> <a href="https://b.example/">https://b.example/</a>`,
			text:  "https://b.example/ https://a.example/ https://b.example/",
			links: []string{"https://b.example/", "https://a.example/"},
		},
		{name: "no link but http(s)", html: `<a href="javascript:alert(1)">click</a>`, text: "click"},
		{name: "script text is not shown", html: "a<script>evil()</script>b", text: "a b"},
		{name: "a cut tag is dropped", html: "a <a href=", text: "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, links := plainText(c.html)
			if text != c.text {
				t.Errorf("text %q, want %q", text, c.text)
			}
			if !slices.Equal(links, c.links) {
				t.Errorf("links %q, want %q", links, c.links)
			}
		})
	}
}

func TestToItem_StoryCommentAndPollopt(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	cases := []struct {
		name string
		w    wireItem
		root int64
		want func(t *testing.T, text string, links []string, reply, thread string)
	}{
		{name: "story with url only", w: wireItem{ID: 10, Type: typeStory, By: "a", Time: 1, Title: "T &amp; U", URL: "https://x.example/"},
			want: func(t *testing.T, text string, links []string, reply, thread string) {
				if text != "T & U\n\nhttps://x.example/" || !slices.Equal(links, []string{"https://x.example/"}) || reply != "" || thread != "" {
					t.Errorf("got %q %q %q %q", text, links, reply, thread)
				}
			}},
		{name: "ask story with text", w: wireItem{ID: 11, Type: typeStory, By: "a", Time: 1, Title: "Ask HN: x", Text: "why<p>because"},
			want: func(t *testing.T, text string, links []string, reply, thread string) {
				if text != "Ask HN: x\n\nwhy because" || len(links) != 0 {
					t.Errorf("got %q %q", text, links)
				}
			}},
		{name: "job with empty url", w: wireItem{ID: 12, Type: typeJob, By: "a", Time: 1, Title: "Hiring"},
			want: func(t *testing.T, text string, links []string, reply, thread string) {
				if text != "Hiring" || len(links) != 0 {
					t.Errorf("got %q %q", text, links)
				}
			}},
		{name: "comment", w: wireItem{ID: 13, Type: typeComment, By: "a", Time: 1, Parent: 12, Text: "hi"}, root: 10,
			want: func(t *testing.T, text string, links []string, reply, thread string) {
				if text != "hi" || reply != "hn:12" || thread != "hn:10" {
					t.Errorf("got %q %q %q", text, reply, thread)
				}
			}},
		{name: "comment with unknown root", w: wireItem{ID: 14, Type: typeComment, By: "a", Time: 1, Parent: 12, Text: "hi"},
			want: func(t *testing.T, text string, links []string, reply, thread string) {
				if reply != "hn:12" || thread != "" {
					t.Errorf("got %q %q", reply, thread)
				}
			}},
		{name: "pollopt hangs under its poll", w: wireItem{ID: 15, Type: typePollopt, By: "a", Time: 1, Poll: 9, Text: "yes"}, root: 9,
			want: func(t *testing.T, text string, links []string, reply, thread string) {
				if text != "yes" || reply != "hn:9" || thread != "hn:9" {
					t.Errorf("got %q %q %q", text, reply, thread)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := toItem(&c.w, c.root, now)
			if it.ID != commentID(c.w.ID) || it.URL != itemURL(c.w.ID) || it.SourceID == "" || !it.PublishedAt.Equal(time.Unix(c.w.Time, 0)) {
				t.Errorf("item %+v", it)
			}
			c.want(t, it.Text, it.Links, it.ReplyTo, it.ThreadID)
		})
	}
}

func TestDecodeItem_NullAndBadAnswers(t *testing.T) {
	if it, err := decodeItem([]byte(" null\n")); it != nil || err != nil {
		t.Errorf("null: %v %v", it, err)
	}
	for _, bad := range []string{`{"id":0}`, `{"by":"x"}`, `[1]`, `{"id":"12"}`, `{`} {
		if _, err := decodeItem([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
