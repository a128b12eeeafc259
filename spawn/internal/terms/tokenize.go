// Package terms finds what a spawn's counted comments talk about: their
// terms (hashtags, mentions, significant words and two-word phrases), the
// activity of their crawler per minute, and candidate query terms, all
// gathered into the analytics of the usage increment that counts them.
package terms

import (
	"strings"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Tokenizer limits. Long texts (whole RSS articles) are cut, so one
// comment costs a bounded amount of work.
const (
	// maxTextBytes is how much of a comment's text is read for terms.
	maxTextBytes = 4096
	// maxTermsPerComment bounds the distinct terms taken from one comment.
	maxTermsPerComment = 64
	// maxTermBytes drops longer tokens (hashes, base64 runs).
	maxTermBytes = 64
	// minWordRunes drops shorter words ("go" and "ai" remain reachable as
	// hashtags).
	minWordRunes = 3
)

// Kind says what a term is.
type Kind uint8

// Term kinds.
const (
	Word Kind = iota
	Phrase
	Hashtag
	Mention
)

// Term is one term of a comment, lowercased: "#golang", "@gopher",
// "release", "release notes".
type Term struct {
	Text string
	Kind Kind
}

// Terms returns the distinct terms of a text, in order of first
// appearance: hashtags and mentions with their sign, words that are not
// stop-words of English or of lang (and are not numbers or too short),
// and each two adjacent significant words separated only by spaces as a
// phrase. Words are runs of bytes for which query.IsWordByte holds, so a
// term occurs in a text exactly when a query for it would match; URLs are
// skipped.
func Terms(text, lang string) []Term {
	if len(text) > maxTextBytes {
		cut := maxTextBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut-- // never split a rune
		}
		text = text[:cut]
	}
	text = strings.ToLower(text)
	lang = strings.ToLower(lang)
	var out []Term
	add := func(t Term) bool {
		for _, o := range out {
			if o.Text == t.Text {
				return true
			}
		}
		out = append(out, t)
		return len(out) < maxTermsPerComment
	}
	prev := ""    // the previous significant word, when only spaces follow it
	prevEnd := -1 // where it ended
	for i := 0; i < len(text); {
		if !query.IsWordByte(text[i]) {
			i++
			continue
		}
		start := i
		for i < len(text) && query.IsWordByte(text[i]) {
			i++
		}
		word := text[start:i]
		if i < len(text) && text[i] == ':' && strings.HasPrefix(text[i:], "://") {
			// A URL: skip to the next space.
			for i < len(text) && text[i] != ' ' && text[i] != '\n' && text[i] != '\t' {
				i++
			}
			prev = ""
			continue
		}
		var sign byte
		if start > 0 && (text[start-1] == '#' || text[start-1] == '@') {
			sign = text[start-1]
		}
		if len(word) > maxTermBytes {
			prev = ""
			continue
		}
		switch sign {
		case '#':
			prev = ""
			if !add(Term{"#" + word, Hashtag}) {
				return out
			}
			continue
		case '@':
			prev = ""
			if !add(Term{"@" + word, Mention}) {
				return out
			}
			continue
		}
		if !significant(word, lang) {
			prev = ""
			continue
		}
		if prev != "" && onlySpaces(text[prevEnd:start]) {
			if !add(Term{prev + " " + word, Phrase}) {
				return out
			}
		}
		if !add(Term{word, Word}) {
			return out
		}
		prev, prevEnd = word, i
	}
	return out
}

// significant reports whether a word is worth counting.
func significant(word, lang string) bool {
	if utf8.RuneCountInString(word) < minWordRunes || isStop(word, lang) {
		return false
	}
	for i := 0; i < len(word); i++ {
		if (word[i] < '0' || word[i] > '9') && word[i] != '_' {
			return true
		}
	}
	return false // a number
}

func onlySpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			return false
		}
	}
	return len(s) > 0
}
