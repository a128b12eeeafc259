package query

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a word is, for every matcher of the system (the spawns' query and
// keyword indexes, the term counter, the hub's match alerts): a maximal run
// of word characters, letters, digits and combining marks of any script
// and the connector '_' (Unicode L, Nd, Nl, M, Pc). Everything else ends a
// word: spaces of every kind (the no-break space too), punctuation of every
// script (’ — « » “ ” … 。), symbols and emoji. Scripts written without
// spaces between words (Han, Hiragana, Katakana, Thai, Lao, Khmer,
// Myanmar) make each of their characters a word of its own, with the marks
// that follow it (a mark is part of the character before it, whatever that
// is), so "golang" is a whole word in "学习golang。" and a query
// of several such characters matches wherever they stand together (as a
// phrase of one-character words does). Invisible format characters (zero
// width spaces and joiners, the soft hyphen, bidirectional controls,
// variation selectors: Unicode's default-ignorable code points) are ignored:
// Fold removes them, so "go\u200blang" reads "golang". These are the
// letter and number classes of Unicode's word-boundary rules (UAX #29)
// without their joining punctuation: in "golang’s" the apostrophe ends the
// word, as a reader sees it, where UAX #29 would keep one word. Why:
// docs/decisions/0016-word-rules.md.

// class is what a character is to the word rules.
type class uint8

const (
	sep    class = iota // ends a word
	letter              // continues a word
	ideo                // a word by itself (with the marks after it)
	mark                // part of the character before it
	hidden              // ignored: Fold removes it
)

// tableRunes is how much of Unicode the class table covers: the basic and
// the supplementary multilingual planes. Above it, characters are
// classified as they come (rare: the ideographic extensions and the tags).
const tableRunes = 0x20000

// classes is the class of every character below tableRunes.
var classes = func() *[tableRunes]class {
	var t [tableRunes]class
	set := func(c class, tables ...*unicode.RangeTable) {
		for _, tab := range tables {
			for _, r := range tab.R16 {
				for x := rune(r.Lo); x <= rune(r.Hi); x += rune(r.Stride) {
					t[x] = c
				}
			}
			for _, r := range tab.R32 {
				for x := rune(r.Lo); x <= rune(r.Hi) && x < tableRunes; x += rune(r.Stride) {
					t[x] = c
				}
			}
		}
	}
	set(letter, unicode.L, unicode.Nd, unicode.Nl, unicode.Pc)
	set(mark, unicode.M)
	for _, tab := range unspaced {
		for _, r := range tab.R16 {
			for x := rune(r.Lo); x <= rune(r.Hi); x += rune(r.Stride) {
				if t[x] == letter {
					t[x] = ideo
				}
			}
		}
		for _, r := range tab.R32 {
			for x := rune(r.Lo); x <= rune(r.Hi) && x < tableRunes; x += rune(r.Stride) {
				if t[x] == letter {
					t[x] = ideo
				}
			}
		}
	}
	for _, x := range unspacedCommon {
		t[x] = ideo
	}
	set(hidden, invisible...)
	set(sep, unicode.Prepended_Concatenation_Mark) // visible format characters
	for x := range 0x80 {
		t[x] = sep
		if c := byte(x); c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			t[x] = letter
		}
	}
	return &t
}()

// unspaced are the scripts written without spaces between words: each of
// their letters is a word by itself.
var unspaced = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar}

// unspacedCommon are letters of the Common script that belong to those
// scripts' words: the prolonged sound marks of katakana (ー, ｰ).
var unspacedCommon = []rune{0x30FC, 0xFF70}

// invisible are the default-ignorable code points: format characters
// (Cf), variation selectors and the rest Unicode says to ignore when not
// rendered; the few visible format characters are set back to sep.
var invisible = []*unicode.RangeTable{unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point}

// classOf is the class of a character.
func classOf(r rune) class {
	if uint32(r) < tableRunes {
		return classes[r]
	}
	return rareClassOf(r)
}

// rareClassOf is classOf for the characters beyond the table.
func rareClassOf(r rune) class {
	switch {
	case unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return sep
	case unicode.In(r, invisible...):
		return hidden
	case unicode.In(r, unspaced...):
		return ideo
	case unicode.In(r, unicode.L, unicode.Nd, unicode.Nl, unicode.Pc):
		return letter
	case unicode.Is(unicode.M, r):
		return mark
	}
	return sep
}

// IsWordRune reports whether r belongs to a word: a letter, digit, mark or
// '_' of any script.
func IsWordRune(r rune) bool {
	c := classOf(r)
	return c == letter || c == ideo || c == mark
}

// Unspaced reports whether r is a letter of a script written without
// spaces between words (Han, kana, Thai…): a word by itself.
func Unspaced(r rune) bool { return classOf(r) == ideo }

// Class is what a character is to the word rules, for code that cuts
// words its own way (the term counter).
type Class uint8

// Classes of characters.
const (
	Separator Class = Class(sep)    // ends a word
	Letter    Class = Class(letter) // continues a word
	Alone     Class = Class(ideo)   // a word by itself (Unspaced)
	Mark      Class = Class(mark)   // part of the character before it
	Hidden    Class = Class(hidden) // ignored (Invisible)
)

// ClassOf returns r's class.
func ClassOf(r rune) Class { return Class(classOf(r)) }

// Invisible reports whether r is an invisible format character (a zero
// width space or joiner, a bidirectional control, a variation selector…),
// which matching ignores and queries and names may not contain.
func Invisible(r rune) bool { return classOf(r) == hidden }

// IsWord reports whether s is one or more word characters and nothing
// else (IsWordRune).
func IsWord(s string) bool {
	for _, r := range s {
		if !IsWordRune(r) {
			return false
		}
	}
	return s != ""
}

// Fold returns s as matching reads it: lowercased as strings.ToLower does
// (invalid UTF-8 becomes U+FFFD) and without invisible characters.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return string(AppendFold(make([]byte, 0, len(s)), s))
		}
	}
	return strings.ToLower(s)
}

// AppendFold appends Fold(s) to dst, allocating nothing once dst has room.
func AppendFold[T ~string | ~[]byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := runeAt(s, i)
		i += n
		switch classOf(r) {
		case hidden:
			continue
		case ideo, mark: // no case to lower
			dst = utf8.AppendRune(dst, r)
			continue
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}

// runeAt decodes the character at byte i of text.
func runeAt[T ~string | ~[]byte](text T, i int) (rune, int) {
	if c := text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	var b [utf8.UTFMax]byte
	n := copy(b[:], text[i:min(len(text), i+utf8.UTFMax)])
	return utf8.DecodeRune(b[:n])
}

// baseBefore is the class of the character before byte i of text, marks
// skipped back to the character they belong to (a mark at the start
// belongs to no word).
func baseBefore[T ~string | ~[]byte](text T, i int) class {
	for i > 0 {
		j := i - 1
		for j > 0 && !utf8.RuneStart(text[j]) && i-j < utf8.UTFMax {
			j--
		}
		r, _ := runeAt(text, j)
		c := classOf(r)
		if c == mark {
			i = j
			continue
		}
		if c == hidden {
			return sep // not in folded text; read as the separator it is not
		}
		return c
	}
	return sep
}

// joins reports whether a character of class next continues the word of
// the character before it, whose (base) class is prev.
func joins(prev, next class) bool {
	switch next {
	case mark:
		return true
	case letter:
		return prev == letter
	}
	return false
}

// NextWord returns the first word of text at or after byte i: its start
// and end; start is len(text) when there is none. Text is folded (Fold).
func NextWord[T ~string | ~[]byte](text T, i int) (start, end int) {
	for i < len(text) {
		r, n := runeAt(text, i)
		c := classOf(r)
		if c == sep || c == hidden || c == mark { // a mark here belongs to a separator
			i += n
			continue
		}
		start, end = i, i+n
		for end < len(text) {
			r, n := runeAt(text, end)
			next := classOf(r)
			if !joins(c, next) {
				break
			}
			end += n
		}
		return start, end
	}
	return len(text), len(text)
}

// Bounded reports whether text[start:end] stands as whole words: no word
// character it would join on either side (an unspaced script's character
// joins nothing, a mark joins the character before it). Text is folded.
func Bounded[T ~string | ~[]byte](text T, start, end int) bool {
	switch {
	case start == 0:
	case text[start-1] < utf8.RuneSelf && (start == len(text) || text[start] < utf8.RuneSelf):
		if classes[text[start-1]] == letter {
			return false // an ASCII letter joins what follows it
		}
	default:
		before := baseBefore(text, start)
		if before != sep && start < len(text) {
			r, _ := runeAt(text, start)
			if first := classOf(r); joins(before, first) || first == sep && before == letter {
				return false
			}
		}
	}
	if end < len(text) && text[end] < utf8.RuneSelf && end > 0 && text[end-1] < utf8.RuneSelf {
		return classes[text[end]] != letter
	}
	if end < len(text) {
		r, _ := runeAt(text, end)
		switch next := classOf(r); next {
		case mark:
			return false
		case letter:
			if end > start && baseBefore(text, end) != ideo {
				return false
			}
		}
	}
	return true
}

// ContainsWord reports whether word occurs in text as whole words
// (Bounded): "go" occurs in "#go!" and "go’s" but not in "golang", "go_"
// or "gó". Both are folded (Fold), as the query language is
// case-insensitive. An empty word occurs nowhere.
func ContainsWord(text, word string) bool {
	if word == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		start := i + j
		if Bounded(text, start, start+len(word)) {
			return true
		}
		i = start + 1
	}
}
