package langid

import (
	"testing"
	"unicode"
)

// TestAlphabets: the script index constants match the table, and a word
// is in a script only when all its letters are.
func TestAlphabets(t *testing.T) {
	if alphabets[latin] != unicode.Latin {
		t.Fatal("latin is not the index of unicode.Latin")
	}
	for w, want := range map[string]int{
		"hello": latin, "żółć": latin, "привет": 3, "hello123": -1, "heλlo": -1, "λόγος": 6,
		"日本": 9, "ひらがな": 12, "abc日": -1, "": -1,
	} {
		if got := alphabetOf(w); got != want {
			t.Errorf("alphabetOf(%q) = %d, want %d", w, got, want)
		}
	}
}

// TestWords: Han, Hangul and kana letters are words of their own; other
// letters run on, through any letter; the text is lowercased.
func TestWords(t *testing.T) {
	got := words("Hello, WORLD! 日本語 abc漢字 ok", nil)
	want := []string{"hello", "world", "日", "本", "語", "abc漢字", "ok"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}
