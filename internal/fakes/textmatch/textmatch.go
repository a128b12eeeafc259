// Package textmatch is the word-bounded search the fake Twitter and stream
// services filter with. It belongs to the fakes alone: the product matches
// with its own code, so that a bug here cannot hide the same bug there.
package textmatch

import "strings"

// ContainsPhrase reports whether phrase occurs in text bounded by non-word
// bytes (anything but letters, digits, '_' and non-ASCII) or the ends of
// text. An empty phrase is never contained.
func ContainsPhrase(text, phrase string) bool {
	if phrase == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], phrase)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(phrase)
		if (start == 0 || !isWordByte(text[start-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		i = start + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}
