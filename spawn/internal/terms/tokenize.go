// Package terms finds what a spawn's counted comments talk about: their
// terms (hashtags, mentions, significant words and two-word phrases), the
// activity of their crawler per minute, and candidate query terms, all
// gathered into the analytics of the usage increment that counts them.
package terms

import (
	"hash/maphash"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// termSeed seeds the hashes of terms. They never leave the process: what
// travels is the terms' text.
var termSeed = maphash.MakeSeed()

// hashOf is a term's hash, computed once when the term is found and used
// by every lookup of it after (hashtab.Table).
func hashOf(term []byte) uint64 { return maphash.Bytes(termSeed, term) }

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
// phrase (with one space). Words are runs of bytes for which
// query.IsWordByte holds, so a term occurs in a text exactly when a query
// for it would match; URLs are skipped. At most maxTermsPerComment terms
// are returned.
func Terms(text, lang string) []Term {
	var tk tokenizer
	var out []Term
	tk.scan(text, lang, func(term []byte, kind Kind, _ uint64) bool {
		for _, o := range out {
			if o.Text == string(term) {
				return false
			}
		}
		out = append(out, Term{string(term), kind})
		return true
	})
	return out
}

// tokenizer keeps the buffers of scan between comments, so counting a
// comment's terms allocates nothing but the terms new to the counter.
type tokenizer struct {
	lower  []byte // the lowercased text
	phrase []byte // a phrase whose words were apart by more than a space
}

// scan calls emit with each term of text, lowercased, its kind and its
// hash (hashOf); emit reports whether the term was new to the comment.
// The term's bytes are valid only during the call. Scanning stops after
// maxTermsPerComment new terms.
func (tk *tokenizer) scan(text, lang string, emit func(term []byte, kind Kind, h uint64) bool) {
	if len(text) > maxTextBytes {
		cut := maxTextBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut-- // never split a rune
		}
		text = text[:cut]
	}
	b, ascii := tk.lowercase(text)
	var stops *stopWords
	if lang != "" {
		stops = stopsOf(strings.ToLower(lang))
	}
	n := 0
	add := func(term []byte, kind Kind, h uint64) bool {
		if emit(term, kind, h) {
			n++
		}
		return n < maxTermsPerComment
	}
	prevStart, prevEnd := -1, -1 // the previous significant word
	for i := 0; i < len(b); {
		if !wordBytes[b[i]] {
			i++
			continue
		}
		start := i
		for i < len(b) && wordBytes[b[i]] {
			i++
		}
		if i+2 < len(b) && b[i] == ':' && b[i+1] == '/' && b[i+2] == '/' {
			// A URL: skip to the next space.
			for i < len(b) && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' {
				i++
			}
			prevStart = -1
			continue
		}
		if i-start > maxTermBytes {
			prevStart = -1
			continue
		}
		if start > 0 && (b[start-1] == '#' || b[start-1] == '@') {
			prevStart = -1
			kind := Hashtag
			if b[start-1] == '@' {
				kind = Mention
			}
			if !add(b[start-1:i], kind, hashOf(b[start-1:i])) {
				return
			}
			continue
		}
		word := b[start:i]
		if len(word) < minWordRunes || !ascii && utf8.RuneCount(word) < minWordRunes || isNumber(word) {
			prevStart = -1
			continue
		}
		h := hashOf(word)
		if isStop(word, h, stops) {
			prevStart = -1
			continue
		}
		if prevStart >= 0 && onlySpaces(b[prevEnd:start]) {
			phrase := b[prevStart:i]
			if start-prevEnd > 1 {
				tk.phrase = append(append(append(tk.phrase[:0], b[prevStart:prevEnd]...), ' '), word...)
				phrase = tk.phrase
			}
			if !add(phrase, Phrase, hashOf(phrase)) {
				return
			}
		}
		if !add(word, Word, h) {
			return
		}
		prevStart, prevEnd = start, i
	}
}

// lowercase returns text lowercased in tk's buffer, and whether it is
// ASCII: ASCII by a table, anything else through strings.ToLower.
func (tk *tokenizer) lowercase(text string) ([]byte, bool) {
	b := slices.Grow(tk.lower[:0], len(text))[:len(text)]
	var high byte
	for i := 0; i < len(text); i++ { // one pass for ASCII, the common case
		c := text[i]
		high |= c
		b[i] = lowerBytes[c]
	}
	if high >= utf8.RuneSelf {
		b = append(b[:0], strings.ToLower(text)...)
	}
	tk.lower = b
	return b, high < utf8.RuneSelf
}

// wordBytes is query.IsWordByte as a table, and lowerBytes lowercases
// ASCII letters (other bytes stay).
var wordBytes, lowerBytes = func() (w [256]bool, l [256]byte) {
	for c := range 256 {
		w[c] = query.IsWordByte(byte(c))
		l[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			l[c] = byte(c + 'a' - 'A')
		}
	}
	return w, l
}()

// isNumber reports whether a word is digits (and underscores) only.
func isNumber(word []byte) bool {
	for _, c := range word {
		if (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

func onlySpaces(s []byte) bool {
	for _, c := range s {
		if c != ' ' {
			return false
		}
	}
	return len(s) > 0
}
