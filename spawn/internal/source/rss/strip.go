package rss

import (
	"html"
	"strings"
)

// skipContent lists elements whose content is not text a reader sees.
var skipContent = []string{"script", "style", "head", "template", "noscript"}

// stripHTML turns a feed's HTML snippet into plain text: tags are dropped
// (with the content of scripts and styles), entities decoded and runs of
// white space folded into one space. Plain text passes through unchanged
// apart from the folding. It is deliberately simple: its output only feeds
// keyword matching and storage, never a browser.
func stripHTML(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return strings.Join(strings.Fields(s), " ")
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		if strings.HasPrefix(s, "<!--") {
			end := strings.Index(s, "-->")
			if end < 0 {
				break
			}
			s = s[end+3:]
			continue
		}
		end := strings.IndexByte(s, '>')
		if end < 0 || !startsTag(s) {
			// A '<' that opens no tag is text ("a < b").
			b.WriteByte('<')
			s = s[1:]
			continue
		}
		tag := s[1:end]
		s = s[end+1:]
		// Tags separate words: "<p>a</p><p>b</p>" is "a b".
		b.WriteByte(' ')
		if strings.HasPrefix(tag, "/") || strings.HasSuffix(tag, "/") {
			continue // closing or self-closing: no content to skip
		}
		name := strings.ToLower(tagName(tag))
		for _, skip := range skipContent {
			if name == skip {
				closing := "</" + skip
				if j := strings.Index(strings.ToLower(s), closing); j >= 0 {
					s = s[j:]
				} else {
					s = ""
				}
				break
			}
		}
	}
	return strings.Join(strings.Fields(html.UnescapeString(b.String())), " ")
}

// tagName is the element name of an opening tag's inside ("a href=x" →
// "a").
func tagName(tag string) string {
	if i := strings.IndexAny(tag, " \t\r\n/"); i >= 0 {
		return tag[:i]
	}
	return tag
}

// startsTag reports whether s, starting with '<', opens a tag, a closing
// tag or a declaration.
func startsTag(s string) bool {
	if len(s) < 2 {
		return false
	}
	c := s[1]
	return c == '/' || c == '!' || c == '?' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
