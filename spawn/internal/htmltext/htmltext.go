// Package htmltext turns the HTML snippets that sources deliver (feed item
// descriptions, Mastodon statuses) into the plain text that is matched and
// stored. It uses a real HTML tokenizer, so attribute values never leak into
// the text, and the content of elements a reader never sees (scripts,
// styles, templates) is dropped.
package htmltext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// hidden lists elements whose content is not text a reader sees.
var hidden = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Head: true, atom.Template: true,
	atom.Noscript: true, atom.Iframe: true, atom.Object: true, atom.Svg: true,
	atom.Math: true, atom.Title: true,
}

// inline lists elements that do not separate words: "<b>wor</b>ld" reads
// "world". Every other element (paragraphs, line breaks, list items, table
// cells, unknown tags) separates the text around it.
var inline = map[atom.Atom]bool{
	atom.A: true, atom.Abbr: true, atom.B: true, atom.Bdi: true, atom.Bdo: true,
	atom.Cite: true, atom.Code: true, atom.Data: true, atom.Dfn: true, atom.Em: true,
	atom.I: true, atom.Kbd: true, atom.Mark: true, atom.Q: true, atom.S: true,
	atom.Samp: true, atom.Small: true, atom.Span: true, atom.Strong: true,
	atom.Sub: true, atom.Sup: true, atom.Time: true, atom.U: true, atom.Var: true,
	atom.Del: true, atom.Ins: true, atom.Font: true, atom.Tt: true, atom.Big: true,
	atom.Strike: true, atom.Wbr: true,
}

// Text returns the readable text of an HTML fragment with entities decoded
// and runs of white space folded into one space. Plain text passes through
// with only the folding. Malformed markup never fails: whatever the
// tokenizer cannot read as a tag is text, as a browser would show it.
func Text(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return strings.Join(strings.Fields(s), " ")
	}
	var b strings.Builder
	b.Grow(len(s))
	z := html.NewTokenizer(strings.NewReader(s))
	skip := 0 // depth inside hidden elements
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			// io.EOF; a tag cut off by the end of the input is dropped,
			// as a browser drops it.
			return strings.Join(strings.Fields(b.String()), " ")
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if hidden[a] {
				b.WriteByte(' ')
				switch {
				case tt == html.StartTagToken:
					skip++
				case tt == html.EndTagToken && skip > 0:
					skip--
				}
				continue
			}
			if !inline[a] {
				b.WriteByte(' ')
			}
		}
	}
}

// Separators Lines writes between words, weakest first.
const (
	sepNone = iota
	sepSpace
	sepLine      // a line break
	sepParagraph // a blank line
)

// paragraphs lists the elements that begin and end a paragraph, lineBreaks
// those that begin and end a line.
var (
	paragraphs = map[atom.Atom]bool{
		atom.P: true, atom.Blockquote: true, atom.Pre: true, atom.Ul: true, atom.Ol: true,
		atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	}
	lineBreaks = map[atom.Atom]bool{atom.Br: true, atom.Li: true, atom.Div: true, atom.Tr: true}
)

// Lines returns the readable text of an HTML fragment as its author wrote
// it: paragraphs a blank line apart, a <br> (and a list item, a division,
// a table row) a line break, the lines of preformatted text kept; any other
// white space is folded into one space, and lines carry none at either end.
// The words are Text's. A Mastodon status is written so: its formatter
// makes a paragraph of each run of lines the author separated by a blank
// line, and a <br> of each other line break.
func Lines(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	pending := sepNone
	brk := func(sep int) { pending = max(pending, sep) }
	word := func(w []byte) {
		if b.Len() > 0 {
			switch pending {
			case sepSpace:
				b.WriteByte(' ')
			case sepLine:
				b.WriteByte('\n')
			case sepParagraph:
				b.WriteString("\n\n")
			}
		}
		pending = sepNone
		b.Write(w)
	}
	z := html.NewTokenizer(strings.NewReader(s))
	skip, pre := 0, 0 // depth inside hidden and preformatted elements
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			if skip > 0 {
				continue
			}
			text := z.Text()
			for len(text) > 0 {
				r, n := utf8.DecodeRune(text)
				if !unicode.IsSpace(r) {
					end := n
					for end < len(text) {
						r, n := utf8.DecodeRune(text[end:])
						if unicode.IsSpace(r) {
							break
						}
						end += n
					}
					word(text[:end])
					text = text[end:]
					continue
				}
				if r == '\n' && pre > 0 {
					brk(sepLine)
				} else {
					brk(sepSpace)
				}
				text = text[n:]
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case hidden[a]:
				brk(sepSpace)
				switch {
				case tt == html.StartTagToken:
					skip++
				case tt == html.EndTagToken && skip > 0:
					skip--
				}
				continue
			case a == atom.Pre && tt == html.StartTagToken:
				pre++
			case a == atom.Pre && tt == html.EndTagToken && pre > 0:
				pre--
			}
			switch {
			case paragraphs[a]:
				brk(sepParagraph)
			case lineBreaks[a]:
				brk(sepLine)
			case !inline[a]:
				brk(sepSpace)
			}
		}
	}
}
