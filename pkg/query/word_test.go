package query

import (
	"errors"
	"strings"
	"testing"
)

// What readers see as the end of a word ends it: punctuation and spaces of
// any script, emoji; letters, digits and marks of any script continue it;
// ideographic and other unspaced scripts make each character a word.
func TestContainsWord_EndsWhereReadersSeeWordsEnd(t *testing.T) {
	cases := []struct {
		text, word string
		want       bool
	}{
		{"golang’s fast", "golang", true},     // curly apostrophe (U+2019)
		{"golang's fast", "golang", true},     // ASCII apostrophe
		{"golang—fast", "golang", true},       // em dash
		{"golang–fast", "golang", true},       // en dash
		{"«golang»", "golang", true},          // guillemets
		{"“golang”", "golang", true},          // curly quotes
		{"golang…", "golang", true},           // ellipsis
		{"golang\u00a0rocks", "golang", true}, // no-break space
		{"golang\u202frocks", "golang", true}, // narrow no-break space
		{"学习golang。", "golang", true},         // Han before, ideographic full stop after
		{"golangで書く", "golang", true},         // hiragana after
		{"golang🚀", "golang", true},           // emoji
		{"¡golang!", "golang", true},
		{"golangs", "golang", false},
		{"golang_x", "golang", false},
		{"golangé", "golang", false},      // a letter of another script continues it
		{"golang\u0301", "golang", false}, // a combining mark is part of the letter before it
		{"golangЖ", "golang", false},      // Cyrillic
		{"golang2", "golang", false},      // digits
		{"golang٣", "golang", false},      // Arabic-Indic digit
		{"我在学习编程", "学习", true},            // unspaced script: every character a word
		{"学习", "学", true},
		{"ภาษาไทยง่ายนิดเดียว", "ไทย", true}, // Thai
		{"café au lait", "café", true},
		{"café", "caf", false},
		{"jalapeño’s", "jalapeño", true},
		{"#golang’s", "#golang", true},
		{"a#golang", "#golang", false}, // a word before the tag joins it
		{"学#golang", "#golang", true},
		{"c++ rocks", "c++", true},
		{"new\u00a0york", "new york", false}, // a phrase is its words apart by one space
		{"", "golang", false},
		{"golang", "", false},
	}
	for _, tc := range cases {
		if got := ContainsWord(Fold(tc.text), tc.word); got != tc.want {
			t.Errorf("ContainsWord(%q, %q) = %v, want %v", tc.text, tc.word, got, tc.want)
		}
	}
}

// Invisible format characters are ignored in matching; the text matched
// keeps them (Fold makes a copy).
func TestFold_IgnoresInvisibleCharacters(t *testing.T) {
	cases := []struct{ text, want string }{
		{"Go\u200bLang", "golang"},       // zero-width space
		{"go\u00adlang", "golang"},       // soft hyphen
		{"\ufeffgolang\u200d", "golang"}, // byte order mark, zero-width joiner
		{"gol\u202eang", "golang"},       // right-to-left override
		{"golang\ufe0f", "golang"},       // variation selector
		{"GOLANG", "golang"},
	}
	for _, tc := range cases {
		if got := Fold(tc.text); got != tc.want {
			t.Errorf("Fold(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestQuery_MatchHonoursExclusionsAcrossScripts(t *testing.T) {
	q, err := Parse("golang -java")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"golang java’s", "golang java—again", "golang java\u00a0bad", "golang «java»", "golang 用java写", "golang ja\u200bva"} {
		if _, ok := q.Match(Doc{Text: text}); ok {
			t.Errorf("%q matched golang -java", text)
		}
	}
	for _, text := range []string{"golang’s", "golang—fast", "«golang»", "“golang”", "golang…", "golang\u00a0rocks", "学习golang。", "go\u200blang"} {
		if _, ok := q.Match(Doc{Text: text}); !ok {
			t.Errorf("%q did not match golang -java", text)
		}
	}
}

func TestParse_RefusesInvisibleCharacters(t *testing.T) {
	for _, s := range []string{"golang\u200b", "go\u00adlang", "\ufeffgolang", "golang \u202erust", "\"new\u200dyork\"", "#go\u2060lang"} {
		_, err := Parse(s)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "invisible character U+") {
			t.Errorf("Parse(%q) = %v, want the invisible character refused", s, err)
		}
	}
	// Visible text of any script is a word, a tag or a phrase.
	for _, s := range []string{"#学习", "学习 golang", "#café", `"jalapeño’s salsa"`, "ไทย"} {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
}
