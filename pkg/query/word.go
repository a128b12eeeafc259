package query

import "strings"

// IsWordByte reports whether b continues a word: ASCII letters and digits,
// '_' and every byte of a multi-byte character. It is the one definition
// of a word byte for every matcher of the system (the keyword index, the
// source decoders and the test servers), so that a term matches the same
// texts wherever it is evaluated.
func IsWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// Bounded reports whether text[start:end] has no word byte on either side:
// the whole-word rule for one occurrence.
func Bounded(text string, start, end int) bool {
	return (start == 0 || !IsWordByte(text[start-1])) && (end == len(text) || !IsWordByte(text[end]))
}

// ContainsWord reports whether word occurs in text with no word byte on
// either side ("go" occurs in "#go!" but not in "golang" or "go_"). It is
// case-sensitive: callers lowercase both, as the query language is
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
