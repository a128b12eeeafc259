// Package terms finds what a spawn's counted comments talk about: their
// terms (hashtags, mentions, significant words and two-word phrases), the
// activity of their crawler per minute, and candidate query terms, all
// gathered into the analytics of the usage increment that counts them.
package terms

import (
	"hash/maphash"
	"slices"
	"strings"
	"unicode"
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
// phrase (with one space). Words are the query language's ("golang’s"
// holds the word "golang"; a sign after a letter starts no tag), a run of
// letters of a script written without spaces counting as one word ("学习"),
// so a term occurs in a text exactly when a query for it would match.
// Invisible characters are ignored and URLs skipped. At most
// maxTermsPerComment terms are returned.
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
		// A sign after a word character starts no tag ("a#go").
		if start > 0 && (b[start-1] == '#' || b[start-1] == '@') && (start == 1 || !wordBytes[b[start-2]]) {
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
		if len(word) < minWordRunes || !ascii && tooFewRunes(word) || isNumber(word) {
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

// lowercase returns text folded in tk's buffer, and whether it is ASCII:
// ASCII by a table; a text beyond ASCII through cutWords, so that the one
// loop of scan, reading bytes by table, cuts it as the query language does.
func (tk *tokenizer) lowercase(text string) ([]byte, bool) {
	b := slices.Grow(tk.lower[:0], len(text))[:len(text)]
	var high byte
	for i := 0; i < len(text); i++ { // one pass for ASCII, the common case
		c := text[i]
		high |= c
		b[i] = lowerBytes[c]
	}
	if high >= utf8.RuneSelf {
		b = cutWords(b[:0], text)
	}
	tk.lower = b
	return b, high < utf8.RuneSelf
}

// apart is the byte cutWords writes where the query language's rules end a
// word that bytes alone would not: a separator beyond ASCII (’ — « … a
// no-break space, an emoji) and the seam between a run of letters of a
// script written without spaces and a letter or sign beside it. It is no
// space, so it breaks phrases as punctuation does.
const apart = 0x01

// cutWords appends text folded (query.Fold: lowercased, invisible characters
// dropped) to dst, with apart wherever the query language ends a word and
// bytes alone would not: after it, a word is a maximal run of wordBytes.
// "golang’s" holds the word golang; "学习golang" the words 学习 and golang
// (a run of letters of an unspaced script is one term, as a query for it
// matches); a mark belongs to the character before it.
func cutWords(dst []byte, text string) []byte {
	prev := query.Separator // the class of the last character written
	for _, r := range text {
		if r < utf8.RuneSelf {
			if prev == query.Alone && (wordBytes[byte(r)] || r == '#' || r == '@') {
				dst = append(dst, apart)
			}
			dst = append(dst, lowerBytes[r])
			prev = query.Separator
			if wordBytes[byte(r)] {
				prev = query.Letter
			}
			continue
		}
		c := query.ClassOf(r)
		switch {
		case c == query.Hidden:
			continue
		case c == query.Separator, c == query.Mark && prev == query.Separator:
			dst = append(dst, apart)
			c = query.Separator
		case c == query.Mark:
			dst = utf8.AppendRune(dst, r)
			c = prev // a mark is what the character before it is
		case c == query.Alone:
			if prev != query.Separator && prev != c {
				dst = append(dst, apart) // beside a letter
			}
			dst = utf8.AppendRune(dst, r) // no case to lower
		default:
			if prev == query.Alone {
				dst = append(dst, apart) // beside an unspaced run
			}
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
		prev = c
	}
	return dst
}

// unspacedAt reports whether word starts with a letter of a script written
// without spaces: such a run is a term from two letters on.
func unspacedAt(word []byte) bool {
	r, _ := utf8.DecodeRune(word)
	return query.Unspaced(r)
}

// tooFewRunes reports whether a word beyond ASCII has fewer characters
// than a term needs: minUnspacedRunes for a run of an unspaced script,
// minWordRunes for others.
func tooFewRunes(word []byte) bool {
	if unspacedAt(word) {
		return utf8.RuneCount(word) < minUnspacedRunes
	}
	return utf8.RuneCount(word) < minWordRunes
}

// wordBytes are the bytes of words once a text went through cutWords: ASCII
// letters, digits and '_', and every byte of a character beyond ASCII
// (cutWords has made the others apart); lowerBytes lowercases ASCII letters
// (other bytes stay).
var wordBytes, lowerBytes = func() (w [256]bool, l [256]byte) {
	for c := range 256 {
		w[c] = c >= utf8.RuneSelf || query.IsWordRune(rune(c))
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
