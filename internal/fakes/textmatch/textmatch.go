// Package textmatch is the word-bounded search the fake Twitter, X and
// stream services filter with, and the reference the product's matchers
// are tested against. It belongs to the fakes and the tests alone, and is
// written apart from the product's word rules (package query), rune by
// rune over Unicode's classes, so that a bug there cannot hide the same
// bug here.
//
// A word is a run of letters, digits and connectors (Unicode L, Nd, Nl,
// Pc) with the combining marks (M) after them; a letter of a script written
// without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) is a
// word by itself; everything else (spaces of every kind, punctuation,
// symbols, emoji) separates words. Invisible format characters (Unicode's
// default-ignorable code points) are dropped first (Fold).
package textmatch

import (
	"slices"
	"strings"
	"unicode"
)

// unspaced are the scripts whose letters are words by themselves.
var unspaced = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar}

// Character classes: separator, letter, mark, unspaced letter.
const (
	classSep    = 's'
	classLetter = 'l'
	classMark   = 'm'
	classAlone  = 'i'
)

func classOf(r rune) byte {
	switch {
	case unicode.IsMark(r):
		return classMark
	case r == 'ー' || r == 'ｰ': // katakana's prolonged sound marks
		return classAlone
	case unicode.IsLetter(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Pc, r):
		if unicode.In(r, unspaced...) {
			return classAlone
		}
		return classLetter
	}
	return classSep
}

// invisible reports a default-ignorable character.
func invisible(r rune) bool {
	return (unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)) &&
		!unicode.Is(unicode.Prepended_Concatenation_Mark, r)
}

// Fold lowercases s rune by rune (invalid bytes become U+FFFD) and drops
// invisible characters.
func Fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		if !invisible(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// ContainsPhrase reports whether phrase occurs in text as whole words: on
// its left nothing, or a character that does not join its first one; on
// its right likewise. A letter joins a letter (on the left, a separator
// after a letter joins too: "a#go" holds no tag #go); a mark joins
// anything and is what the character before it is; a letter of an
// unspaced script joins only marks. Both are compared as they are: callers
// fold them (Fold). An empty phrase is never contained.
func ContainsPhrase(text, phrase string) bool {
	if phrase == "" {
		return false
	}
	rs, ps := []rune(text), []rune(phrase)
	for i := 0; i+len(ps) <= len(rs); i++ {
		if !slices.Equal(rs[i:i+len(ps)], ps) {
			continue
		}
		if leftBounded(rs, i) && rightBounded(rs, ps, i+len(ps)) {
			return true
		}
	}
	return false
}

func leftBounded(rs []rune, i int) bool {
	if i == 0 {
		return true
	}
	j := i - 1
	for j > 0 && classOf(rs[j]) == classMark {
		j--
	}
	before := classOf(rs[j])
	if before == classMark {
		before = classSep // marks at the start belong to no word
	}
	first := classOf(rs[i])
	switch before {
	case classSep:
		return true
	case classAlone:
		return first != classMark
	}
	return first == classAlone
}

func rightBounded(rs, ps []rune, end int) bool {
	if end == len(rs) {
		return true
	}
	last := classOf(ps[len(ps)-1])
	for k := len(ps) - 1; k > 0 && last == classMark; k-- {
		last = classOf(ps[k-1])
	}
	switch classOf(rs[end]) {
	case classSep, classAlone:
		return true
	case classLetter:
		return last == classAlone
	}
	return false
}

// Words returns the words of text (folded) as ranges of rune indexes
// [start, end): a run of letters with the marks after them, or one
// letter of an unspaced script with its marks.
func Words(text string) [][2]int {
	rs := []rune(text)
	var out [][2]int
	for i := 0; i < len(rs); {
		c := classOf(rs[i])
		if c == classSep || c == classMark {
			i++
			continue
		}
		j := i + 1
		for j < len(rs) && (classOf(rs[j]) == classMark || c == classLetter && classOf(rs[j]) == classLetter) {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// Occurrences returns the rune index of every place phrase occurs in text
// as whole words (ContainsPhrase), overlapping ones included.
func Occurrences(text, phrase string) []int {
	if phrase == "" {
		return nil
	}
	rs, ps := []rune(text), []rune(phrase)
	var out []int
	for i := 0; i+len(ps) <= len(rs); i++ {
		if slices.Equal(rs[i:i+len(ps)], ps) && leftBounded(rs, i) && rightBounded(rs, ps, i+len(ps)) {
			out = append(out, i)
		}
	}
	return out
}

// HasPrefix reports whether word starts with prefix and the character
// after the prefix, if any, is no combining mark (which would belong to
// the prefix's last letter).
func HasPrefix(word, prefix string) bool {
	ws, ps := []rune(word), []rune(prefix)
	if len(ps) > len(ws) || string(ws[:len(ps)]) != prefix {
		return false
	}
	return len(ps) == len(ws) || classOf(ws[len(ps)]) != classMark
}
