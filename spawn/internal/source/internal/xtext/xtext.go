// Package xtext turns the text of a post from X (Twitter API v1.1 or X API
// v2) into what was said: the text unescaped once, its t.co addresses
// replaced by the addresses they stand for, and those addresses listed.
// Both twitter sources use it, so they store a post the same way.
package xtext

import (
	"net/url"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// MaxLinks caps the links one item carries.
const MaxLinks = 64

// IDPrefix starts the id of every comment read from X, over either API:
// "tw:" and the post id (the contract's twitter comment id).
const IDPrefix = "tw:"

// URL is one link entity of a post: the t.co address in its text and the
// address it stands for.
type URL struct {
	Short, Expanded string
}

// Expand replaces every t.co address of urls in text (already unescaped)
// with the address it stands for, and lists those addresses in order. The
// t.co address itself is matched, not the entity's indices, which count
// characters of a text X may have edited since and that unescaping shifts.
func Expand(text string, urls []URL) (string, []string) {
	var links, pairs []string
	for _, u := range urls {
		full := source.WebURL(u.Expanded)
		if full == "" {
			full = source.WebURL(u.Short)
		}
		if full == "" {
			continue
		}
		links = AppendLinks(links, full)
		if u.Short != "" && u.Short != full && !slices.Contains(pairs, u.Short) {
			pairs = append(pairs, u.Short, full)
		}
	}
	if len(pairs) > 0 {
		text = strings.NewReplacer(longestFirst(pairs)...).Replace(text)
	}
	return text, links
}

// longestFirst orders old/new pairs so that a short address that is the
// start of a longer one never replaces part of it.
func longestFirst(pairs []string) []string {
	type pair struct{ old, new string }
	ps := make([]pair, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		ps = append(ps, pair{pairs[i], pairs[i+1]})
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return len(b.old) - len(a.old) })
	out := make([]string, 0, len(pairs))
	for _, p := range ps {
		out = append(out, p.old, p.new)
	}
	return out
}

// AppendLinks adds the links not yet present, up to MaxLinks.
func AppendLinks(links []string, more ...string) []string {
	for _, l := range more {
		if len(links) >= MaxLinks {
			break
		}
		if l != "" && !slices.Contains(links, l) {
			links = append(links, l)
		}
	}
	return links
}

// unescaper undoes the HTML escaping X applies to a post's text: "&", "<"
// and ">" arrive as "&amp;", "&lt;" and "&gt;", and nothing else is
// escaped. Each is undone once, left to right: "&amp;lt;" is "&lt;".
var unescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// Unescape undoes X's HTML escaping of a post's text, once.
func Unescape(s string) string { return unescaper.Replace(s) }

// IsStatusOf reports whether link is the address of post id on X
// (twitter.com, mobile.twitter.com or x.com, any author path).
func IsStatusOf(link, id string) bool {
	u, err := url.Parse(link)
	if err != nil {
		return false
	}
	host := strings.TrimPrefix(strings.ToLower(u.Host), "www.")
	if host != "twitter.com" && host != "x.com" && host != "mobile.twitter.com" {
		return false
	}
	_, rest, ok := strings.Cut(u.Path, "/status/")
	if !ok {
		return false
	}
	rest, _, _ = strings.Cut(rest, "/")
	return rest == id
}
