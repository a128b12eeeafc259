package query

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// wordPieces make random texts that mix scripts, punctuation and spaces
// of many kinds, marks and invisible characters.
var wordPieces = []string{"go", "golang", "java", "x", "_", "2", "é", "e\u0301", "\u0301", "ж", "学", "习", "学习", "ไทย", "カ", "ー",
	" ", "  ", "\u00a0", "\u202f", ",", "’", "'", "—", "-", "«", "»", "“", "”", "…", "。", "#", "@", ".", "🚀", "\u200b", "\u00ad", "\u202e", "\ufe0f", "\xff"}

func randomWords(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(wordPieces[r.IntN(len(wordPieces))])
	}
	return b.String()
}

// checkWords checks the word rules on one text and word against the
// reference (the fakes' textmatch, written apart over Unicode's classes).
func checkWords(t *testing.T, text, word string) {
	t.Helper()
	lower, w := Fold(text), Fold(word)
	if ref := textmatch.Fold(text); lower != ref {
		t.Fatalf("Fold(%q) = %q, reference %q", text, lower, ref)
	}
	if got, want := ContainsWord(lower, w), textmatch.ContainsPhrase(lower, w); got != want {
		t.Fatalf("ContainsWord(%q, %q) = %v, reference %v", lower, w, got, want)
	}
	// Every word NextWord finds stands as whole words where it is.
	for i := 0; ; {
		start, end := NextWord(lower, i)
		if start == len(lower) {
			break
		}
		if !Bounded(lower, start, end) || !textmatch.ContainsPhrase(lower, lower[start:end]) {
			t.Fatalf("NextWord(%q) found %q at %d, not whole", lower, lower[start:end], start)
		}
		i = end
	}
}

func TestContainsWord_AgreesWithTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		text := randomWords(r, 1+r.IntN(10))
		word := randomWords(r, 1+r.IntN(3))
		checkWords(t, text, word)
		// A word cut from the text itself occurs in it, bounded or not.
		if i, j := r.IntN(len(text)+1), r.IntN(len(text)+1); i < j {
			checkWords(t, text, text[i:j])
		}
	}
}

// maxFuzzText bounds the texts fuzzed.
const maxFuzzText = 2048

// FuzzContainsWord checks the word rules against the reference on any
// text and word.
func FuzzContainsWord(f *testing.F) {
	for _, s := range [][2]string{{"golang’s fast", "golang"}, {"学习golang。", "golang"}, {"我在学习编程", "学习"}, {"a#go 学#go", "#go"},
		{"golang\u0301", "golang"}, {"go\u200blang", "golang"}, {"\u0301go", "go"}, {"\xff\xfego", "go"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, text, word string) {
		if len(text) > maxFuzzText || len(word) > maxFuzzText {
			t.Skip("the reference is quadratic") // and posts are short
		}
		checkWords(t, text, word)
	})
}
