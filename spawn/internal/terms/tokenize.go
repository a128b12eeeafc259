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
	// minUnspacedRunes drops shorter runs of a script written without
	// spaces: most Chinese and Japanese words are two characters.
	minUnspacedRunes = 2
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
// phrase (with one space). Words are the query language's (query.NextWord:
// "golang’s" holds the word "golang"), a run of letters of a script written
// without spaces counting as one word ("学习"), and a #tag or @mention
// takes every word character after its sign; so a term occurs in a text
// exactly when a query for it would match. Invisible characters are
// ignored and URLs skipped. At most maxTermsPerComment terms are returned.
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
		if byteKinds[b[i]] == byteSep {
			i++
			continue
		}
		start := i
		for i < len(b) && byteKinds[b[i]] == byteWord {
			i++
		}
		var tag, unspaced bool
		if ascii { // the common case, by table alone
			tag = start > 0 && (b[start-1] == '#' || b[start-1] == '@') && (start == 1 || byteKinds[b[start-2]] == byteSep)
		} else if start, i, tag, unspaced = cutWord(b, start, i); start == len(b) {
			break
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
		if tag {
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
		if unspaced && utf8.RuneCount(word) < minUnspacedRunes ||
			!unspaced && (len(word) < minWordRunes || !ascii && utf8.RuneCount(word) < minWordRunes) || isNumber(word) {
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

// lowercase returns text folded in tk's buffer (query.Fold: lowercased,
// invisible characters dropped), and whether it is ASCII: ASCII by a
// table, anything else through query.AppendFold.
func (tk *tokenizer) lowercase(text string) ([]byte, bool) {
	b := slices.Grow(tk.lower[:0], len(text))[:len(text)]
	var high byte
	for i := 0; i < len(text); i++ { // one pass for ASCII, the common case
		c := text[i]
		high |= c
		b[i] = lowerBytes[c]
	}
	if high >= utf8.RuneSelf {
		b = query.AppendFold(b[:0], text)
	}
	tk.lower = b
	return b, high < utf8.RuneSelf
}

// nextWord is query.NextWord on a folded text.
func nextWord(b []byte, i int) (start, end int) { return query.NextWord(b, i) }

// cutWord cuts the word at or after b[start] of a text beyond ASCII by the
// query language's rules, i the end of the ASCII letters read from start:
// its start and end (start is len(b) when no word is left), whether it is
// a #tag or @mention (then with every word that touches it) and whether it
// is a run of letters of a script written without spaces.
func cutWord(b []byte, start, i int) (s, e int, tag, unspaced bool) {
	if i == start || i < len(b) && byteKinds[b[i]] == byteOther {
		if start, i = nextWord(b, start); start == len(b) {
			return start, i, false, false
		}
	}
	tag = start > 0 && (b[start-1] == '#' || b[start-1] == '@') && signBounded(b, start-1, i)
	unspaced = !tag && unspacedAt(b, start)
	if i < len(b) && byteKinds[b[i]] != byteSep { // a word may touch this one
		i = touching(b, start, i, !tag)
	}
	return start, i, tag, unspaced
}

// signBounded reports whether the sign of a #tag or @mention at b[sign]
// starts whole words: nothing, or no word character it would join, before
// it (an ASCII one by table).
func signBounded(b []byte, sign, end int) bool {
	if sign == 0 {
		return true
	}
	if k := byteKinds[b[sign-1]]; k != byteOther {
		return k == byteSep
	}
	return query.Bounded(b, sign, end)
}

// touching extends the word b[start:end] over the words right after it,
// with nothing between: every one (a tag's), or, with unspaced, while both
// are letters of a script written without spaces ("学习" is one term, as
// "学习golang" is two).
func touching(b []byte, start, end int, unspaced bool) int {
	if unspaced && !unspacedAt(b, start) {
		return end
	}
	for end < len(b) && byteKinds[b[end]] != byteSep { // an ASCII separator ends the run
		s, e := nextWord(b, end)
		if s != end || unspaced && !unspacedAt(b, s) {
			break
		}
		end = e
	}
	return end
}

// unspacedAt reports whether the character at b[i] is a letter of a
// script written without spaces.
func unspacedAt(b []byte, i int) bool {
	r, _ := utf8.DecodeRune(b[i:])
	return query.Unspaced(r)
}

// Kinds of bytes: ASCII bytes are classified by table, and a byte of a
// character beyond ASCII hands the word at hand to the query language's
// word rules.
const (
	byteSep   = iota // ASCII that ends a word
	byteWord         // ASCII letter, digit or '_'
	byteOther        // part of a character beyond ASCII
)

// byteKinds is each byte's kind, and lowerBytes lowercases ASCII letters
// (other bytes stay).
var byteKinds, lowerBytes = func() (w [256]uint8, l [256]byte) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			w[c] = byteOther
		case query.IsWordRune(rune(c)):
			w[c] = byteWord
		}
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
