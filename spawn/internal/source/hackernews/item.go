package hackernews

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/htmltext"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Item types of the API.
const (
	typeStory   = "story"
	typeComment = "comment"
	typeJob     = "job"
	typePoll    = "poll"
	typePollopt = "pollopt"
)

// wireItem is an item as /v0/item/<id>.json sends it. Only id is required;
// the API leaves out a field without a value.
type wireItem struct {
	ID      int64   `json:"id"`
	Deleted bool    `json:"deleted"`
	Type    string  `json:"type"`
	By      string  `json:"by"`
	Time    int64   `json:"time"`
	Text    string  `json:"text"`
	Dead    bool    `json:"dead"`
	Parent  int64   `json:"parent"`
	Poll    int64   `json:"poll"`
	Kids    []int64 `json:"kids"`
	URL     string  `json:"url"`
	Title   string  `json:"title"`
}

// decodeItem reads an item answer: nil for the null the API sends for an
// id without a (readable) item.
func decodeItem(body []byte) (*wireItem, error) {
	body = bytes.TrimSpace(body)
	if bytes.Equal(body, []byte("null")) {
		return nil, nil
	}
	var it wireItem
	if err := json.Unmarshal(body, &it); err != nil {
		return nil, fmt.Errorf("%w: item: %v", ErrMalformed, err)
	}
	if it.ID <= 0 {
		return nil, fmt.Errorf("%w: item without an id: %s", ErrMalformed, clip(string(body)))
	}
	return &it, nil
}

// gone reports whether the item is one a comment must not show: deleted,
// or dead (flagged or killed).
func (w *wireItem) gone() bool { return w.Deleted || w.Dead }

// up is the item a reply hangs under: a comment's parent, a pollopt's poll;
// 0 for an item that starts a thread.
func (w *wireItem) up() int64 {
	switch {
	case w.Parent > 0:
		return w.Parent
	case w.Type == typePollopt:
		return w.Poll
	}
	return 0
}

// startsThread reports whether the item is a thread's root.
func (w *wireItem) startsThread() bool { return w.up() == 0 }

// commentID is the comment id of an item id.
func commentID(id int64) string { return IDPrefix + strconv.FormatInt(id, 10) }

// itemURL is the item's page on Hacker News.
func itemURL(id int64) string {
	return "https://news.ycombinator.com/item?id=" + strconv.FormatInt(id, 10)
}

// parseID reads a decimal item id.
func parseID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}

// content is the text and links a comment shows of an item: a story, job
// or poll shows its title, then its text or (without text) its url; a
// comment or pollopt its text.
func content(typ, title, text, url string) (string, []string) {
	body, links := plainText(text)
	if typ == typeComment || typ == typePollopt {
		return source.CapText(body, maxTextBytes), capLinks(links)
	}
	head := htmltext.Text(title)
	if u := webURL(url); u != "" {
		links = append([]string{u}, links...)
		if body == "" {
			body = u
		}
	}
	out := head
	if body != "" {
		if out != "" {
			out += "\n\n"
		}
		out += body
	}
	return source.CapText(out, maxTextBytes), capLinks(dedupe(links))
}

// toItem is the item a walked item becomes; root is its thread's story (0
// when unknown or for a story).
func toItem(w *wireItem, root int64, now time.Time) source.Item {
	text, links := content(w.Type, w.Title, w.Text, w.URL)
	it := source.Item{
		ID:          commentID(w.ID),
		Author:      capAuthor(w.By),
		Text:        text,
		URL:         itemURL(w.ID),
		PublishedAt: time.Unix(w.Time, 0).UTC(),
		FetchedAt:   now,
		Links:       links,
		SourceID:    strconv.FormatInt(w.ID, 10),
	}
	if up := w.up(); up > 0 {
		it.ReplyTo = commentID(up)
		if root > 0 {
			it.ThreadID = commentID(root)
		}
	}
	return it
}

func capAuthor(s string) string {
	if len(s) > maxAuthorBytes || !utf8.ValidString(s) {
		return source.CapText(strings.ToValidUTF8(s, ""), maxAuthorBytes)
	}
	return s
}

func capLinks(links []string) []string {
	if len(links) > maxLinks {
		return links[:maxLinks]
	}
	return links
}

func dedupe(links []string) []string {
	seen := make(map[string]bool, len(links))
	out := links[:0]
	for _, l := range links {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// webURL returns u when it is an absolute http(s) URL, else "".
func webURL(u string) string {
	u = strings.TrimSpace(u)
	lower := strings.ToLower(u)
	if (strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")) && len(u) > len("https://") {
		return u
	}
	return ""
}

// plainText reads Hacker News HTML (<p> paragraphs without a closing tag,
// <i>, <pre><code>, <a href rel="nofollow">, entities such as &#x27; and
// &#x2F;) as plain text with every entity decoded once, and returns the
// links in order without repeats. Hacker News shortens the text of a long
// link ("https://example.com/a/very/lon..."): a link reads as its full
// href wherever its text is the URL or a shortening of it.
func plainText(s string) (string, []string) {
	if !strings.Contains(s, "<") {
		return htmltext.Text(s), nil
	}
	var b strings.Builder
	b.Grow(len(s))
	var links []string
	z := xhtml.NewTokenizer(strings.NewReader(s))
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			break
		}
		raw := z.Raw()
		if tt != xhtml.StartTagToken {
			b.Write(raw)
			continue
		}
		tok := z.Token()
		if tok.Data != "a" {
			b.Write(raw)
			continue
		}
		href := ""
		for _, a := range tok.Attr {
			if a.Key == "href" {
				href = webURL(a.Val)
			}
		}
		if href == "" {
			b.Write(raw)
			continue
		}
		links = append(links, href)
		// Read the link's text up to its end tag.
		var inner strings.Builder
		for {
			tt := z.Next()
			if tt == xhtml.ErrorToken || (tt == xhtml.EndTagToken && tagName(z) == "a") {
				break
			}
			inner.Write(z.Raw())
		}
		shown := htmltext.Text(inner.String())
		if shortens(shown, href) {
			b.WriteString(html.EscapeString(href))
		} else {
			b.WriteString(inner.String())
		}
	}
	return htmltext.Text(b.String()), dedupe(links)
}

func tagName(z *xhtml.Tokenizer) string {
	name, _ := z.TagName()
	return string(name)
}

// shortens reports whether a link's shown text is its href or Hacker
// News's shortening of it (a prefix ending in "...").
func shortens(shown, href string) bool {
	shown = strings.TrimSpace(shown)
	if shown == "" || shown == href {
		return true
	}
	if cut, ok := strings.CutSuffix(shown, "..."); ok {
		return strings.HasPrefix(href, cut)
	}
	return false
}
