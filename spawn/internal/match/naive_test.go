package match

import "github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"

// The reference word rules the index is checked against are the fakes'
// (textmatch), written rune by rune over Unicode's classes, apart from
// package query's tables.

// naiveFold lowercases s rune by rune and drops invisible characters.
func naiveFold(s string) string { return textmatch.Fold(s) }

// naiveContains reports whether word occurs in text (both folded) as
// whole words.
func naiveContains(text, word string) bool { return textmatch.ContainsPhrase(text, word) }
