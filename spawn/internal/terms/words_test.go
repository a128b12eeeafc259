package terms

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Terms end where the query language's words end: a term is found exactly
// where a query for it would match.
func TestTerms_WordsEndWhereReadersSeeThemEnd(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"curly apostrophe", "golang’s generics", []string{"golang", "generics"}},
		{"dashes and quotes", "golang—fast «rust» “zig”", []string{"golang", "fast", "rust", "zig"}},
		{"no-break space between words of a phrase is no phrase", "golang\u00a0generics", []string{"golang", "generics"}},
		{"ellipsis", "golang… rocks", []string{"golang", "rocks"}},
		{"ideographs beside a word", "学习golang。", []string{"学习", "golang"}},
		{"a tag ends where its word ends", "#学习golang #café’s", []string{"#学习", "golang", "#café"}},
		{"a sign after an ideograph starts a tag", "学#golang", []string{"#golang"}},
		{"a sign after a letter makes no tag", "x#golang a@bob", []string{"golang", "bob"}},
		{"invisible characters are ignored", "go\u200blang ru\u00adst", []string{"golang", "golang rust", "rust"}},
		{"emoji end a word", "golang🚀rocks", []string{"golang", "rocks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := texts(Terms(tt.text, "")); !slices.Equal(got, tt.want) {
				t.Errorf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestTerms_EachOccursAsAQueryWouldMatchIt extracts the terms of random
// texts mixing scripts, punctuation, spaces and invisible characters, and
// checks each with the reference word rules (textmatch) and the query
// language's (query.ContainsWord): a term is whole words of the text.
func TestTerms_EachOccursAsAQueryWouldMatchIt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"golang", "Rust", "café", "naïve", "学习", "编程", "ไทย", "カタカナ", "data", "x_y", "java", "über"}
	seps := []string{" ", " ", "  ", ", ", "’", "'", "—", "\u00a0", "«", "»", "…", "。", "#", "@", "\u200b", "🚀", "\u0301", ""}
	for range 5000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteString(seps[r.IntN(len(seps))])
		}
		text := b.String()
		for _, term := range Terms(text, "") {
			words := []string{term.Text}
			if term.Kind == Phrase { // its words, apart by one space or more
				words = strings.Fields(term.Text)
			}
			for _, w := range words {
				if !query.ContainsWord(query.Fold(text), w) {
					t.Fatalf("term %q of %q: a query for %q would not match", term.Text, text, w)
				}
				if !textmatch.ContainsPhrase(textmatch.Fold(text), w) {
					t.Fatalf("term %q of %q: %q does not stand as whole words by the reference rules", term.Text, text, w)
				}
			}
		}
	}
}
