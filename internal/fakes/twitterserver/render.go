package twitterserver

import (
	"crypto/sha256"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// This file writes a tweet's text as API v1.1 sends it, following the
// native payloads of X's enterprise data dictionary: "&", "<" and ">"
// HTML-escaped, every link t.co-shortened with an entities.urls entry
// (url, expanded_url, display_url, indices in code points), a
// compatibility-mode text over 140 characters cut to 115 and "… " with a
// t.co link to the tweet itself (the whole text in
// extended_tweet.full_text with its own entities), and a retweet's text
// "RT @user: " and the original, cut to 140 UTF-16 units ending in "…".

// Lengths Twitter cuts texts at.
const (
	// compatCutRunes is how much of a long tweet's text the
	// compatibility-mode text keeps before "… " and the self link.
	compatCutRunes = 115
	// retweetTextUnits is the length of a retweet's "RT @user: …" text in
	// UTF-16 code units.
	retweetTextUnits = 140
	// maxDisplayRunes is how much of an address display_url shows before
	// "…".
	maxDisplayRunes = 25
)

// link is one t.co-shortened address of a text.
type link struct {
	short, full string
}

// linkPattern finds the addresses an author writes in a tweet.
var linkPattern = regexp.MustCompile(`https?://[^\s]+`)

// trailingPunct is cut from the end of a found address.
const trailingPunct = ".,;:!?)\"'"

// shorten replaces each address in text with a t.co address and returns
// the links.
func shorten(id int64, text string) (string, []link) {
	var links []link
	out := linkPattern.ReplaceAllStringFunc(text, func(m string) string {
		full := strings.TrimRight(m, trailingPunct)
		l := link{short: tco(id, full, len(links)), full: full}
		links = append(links, l)
		return l.short + m[len(full):]
	})
	return out, links
}

// tcoAlphabet spells t.co paths.
const tcoAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// tco is a 23-character t.co address derived from the tweet and address.
func tco(id int64, full string, n int) string {
	sum := sha256.Sum256([]byte(strconv.FormatInt(id, 10) + "\x00" + full + "\x00" + strconv.Itoa(n)))
	b := make([]byte, 10)
	for i := range b {
		b[i] = tcoAlphabet[int(sum[i])%len(tcoAlphabet)]
	}
	return "https://t.co/" + string(b)
}

// htmlEscaper escapes a text as Twitter does: "&", "<" and ">" only.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return htmlEscaper.Replace(s) }

// unescaper undoes Twitter's escaping, each entity once.
var unescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// entitiesOf are the entities of an unescaped text: each link that occurs
// whole in it.
func entitiesOf(text string, links []link) map[string]any {
	e := emptyEntities()
	urls := []any{}
	for _, l := range links {
		i := strings.Index(text, l.short)
		if i < 0 {
			continue
		}
		start := len([]rune(text[:i]))
		urls = append(urls, map[string]any{"url": l.short, "expanded_url": l.full, "display_url": displayURL(l.full),
			"indices": []int{start, start + len([]rune(l.short))}})
	}
	e["urls"] = urls
	return e
}

func displayURL(full string) string {
	d := strings.TrimPrefix(strings.TrimPrefix(full, "https://"), "http://")
	d = strings.TrimPrefix(d, "www.")
	if rs := []rune(d); len(rs) > maxDisplayRunes {
		d = string(rs[:maxDisplayRunes-1]) + "…"
	}
	return d
}

// renderText sets the text fields of d for a tweet whose author wrote
// text: compatibility mode (text, with extended_tweet when cut) unless
// extended, then full_text.
func renderText(d *tweetDoc, id int64, text string, extended bool) {
	short, links := shorten(id, text)
	if extended {
		d.FullText, d.Entities = escape(short), entitiesOf(short, links)
		return
	}
	rs := []rune(short)
	if len(rs) <= shortTextRunes {
		d.Text, d.Entities = escape(short), entitiesOf(short, links)
		return
	}
	self := link{full: "https://twitter.com/i/web/status/" + strconv.FormatInt(id, 10)}
	self.short = tco(id, self.full, len(links))
	cut := string(rs[:compatCutRunes]) + "… " + self.short
	d.Text, d.Entities, d.Truncated = escape(cut), entitiesOf(cut, append(links, self)), true
	d.ExtendedTweet = &extendedDoc{FullText: escape(short), Entities: entitiesOf(short, links)}
}

// renderRetweetText sets a retweet's own text: "RT @user: " and the
// original's (with its t.co links), cut.
func renderRetweetText(d *tweetDoc, origID int64, user, text string, extended bool) {
	short, links := shorten(origID, text)
	rt := cutUnits("RT @"+user+": "+short, retweetTextUnits)
	if extended {
		d.FullText, d.Entities = escape(rt), entitiesOf(rt, links)
		return
	}
	d.Text, d.Entities = escape(rt), entitiesOf(rt, links)
}

// cutUnits cuts s to at most n UTF-16 code units, "…" included.
func cutUnits(s string, n int) string {
	if len(utf16.Encode([]rune(s))) <= n {
		return s
	}
	units := 0
	var b strings.Builder
	for _, r := range s {
		w := utf16.RuneLen(r)
		if units+w > n-1 {
			break
		}
		units += w
		b.WriteRune(r)
	}
	return b.String() + "…"
}
