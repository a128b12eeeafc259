package spawntest

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// CheckCover checks the promise of a source's query compiler that widens
// a query to what its service can state (Twitter's track terms, a CSDL
// definition): every text the query matches is selected by the compiled
// form, so evaluating the query on what the service sends loses nothing.
// compile returns, for a query, whether a lowercased text is selected; a
// query it refuses (query.ErrUnsupported) is skipped.
func CheckCover(t *testing.T, compile func(q *query.Query) (selects func(lower string) bool, err error)) {
	t.Helper()
	CheckCoverItems(t, func(q *query.Query) (func(it CoverItem) bool, error) {
		selects, err := compile(q)
		if err != nil {
			return nil, err
		}
		return func(it CoverItem) bool { return selects(it.Lower) }, nil
	})
}

// CoverItem is an item CheckCoverItems offers a compiled form: its text
// lowercased (query.Fold), its author's handle and its language.
type CoverItem struct {
	Lower, Author, Lang string
}

// CheckCoverItems is CheckCover for a compiled form that also tests an
// item's author and language (an X rule's from: and lang:). The queries
// it draws have words, phrases, #tags, @users, from:, lang:, negations,
// NEARs in either order and prefixes; a query matches as query.Match
// says.
func CheckCoverItems(t *testing.T, compile func(q *query.Query) (selects func(it CoverItem) bool, err error)) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	checked, near, prefix, refused := 0, 0, 0, 0
	for range 3000 {
		q, err := query.Parse(randomQuery(r, 4))
		if err != nil {
			continue
		}
		selects, err := compile(q)
		if err != nil {
			refused++
			continue
		}
		for range 20 {
			text := randomText(r)
			it := CoverItem{Lower: query.Fold(text), Author: []string{"bob", "alice"}[r.IntN(2)], Lang: []string{"en", "fr"}[r.IntN(2)]}
			// A compiled form cannot test sentiment (the spawn scores it):
			// it must select an item whatever its sentiment.
			mood := []string{"positive", "neutral", "negative", ""}[r.IntN(4)]
			if _, ok := q.Match(query.Doc{Text: text, Author: it.Author, Lang: it.Lang, Sentiment: mood}); !ok {
				continue
			}
			checked++
			if s := q.String(); strings.Contains(s, "NEAR/") {
				near++
			} else if strings.Contains(s, "*") {
				prefix++
			}
			if !selects(it) {
				t.Fatalf("%q matches %q (author %s, lang %s) but its compiled form does not select it", q, text, it.Author, it.Lang)
			}
		}
	}
	if checked < 500 || near < 50 || prefix < 20 {
		t.Fatalf("only %d matching texts checked (%d of queries with NEAR, %d with prefixes only; %d queries refused)", checked, near, prefix, refused)
	}
}

// randomQuery writes a random query over a small vocabulary, so that atoms
// repeat and random texts hit them.
func randomQuery(r *rand.Rand, depth int) string {
	vocab := []string{"go", "rust", "new", "york", "#go", "@bob", `"new york"`, "from:bob", "lang:en", "c++", "gol*", "rus*", "sentiment:negative"}
	if depth == 0 || r.IntN(3) == 0 {
		return vocab[r.IntN(len(vocab))]
	}
	switch r.IntN(6) {
	case 0:
		return "-" + randomQuery(r, depth-1)
	case 1:
		return "(" + randomQuery(r, depth-1) + " OR " + randomQuery(r, depth-1) + ")"
	case 2:
		return randomQuery(r, depth-1) + "," + randomQuery(r, depth-1)
	case 3:
		return "(" + randomNearOperand(r, 1) + []string{" NEAR/0 ", " NEAR/1f ", " NEAR/2 "}[r.IntN(3)] + randomNearOperand(r, 1) + ")"
	}
	return "(" + randomQuery(r, depth-1) + " " + randomQuery(r, depth-1) + ")"
}

// randomNearOperand writes a NEAR's operand: a text term or prefix, or an
// OR of two.
func randomNearOperand(r *rand.Rand, depth int) string {
	vocab := []string{"go", "rust", "new", "york", "#go", "@bob", `"new york"`, "gol*", "rus*"}
	if depth > 0 && r.IntN(3) == 0 {
		return "(" + randomNearOperand(r, depth-1) + " OR " + randomNearOperand(r, depth-1) + ")"
	}
	return vocab[r.IntN(len(vocab))]
}

// randomText writes a text from words near the vocabulary's.
func randomText(r *rand.Rand) string {
	words := []string{"go", "Go", "#go", "golang", "rust", "rustacean", "new", "York", "new york", "c++", "@bob", "bob", "x", "#gopher"}
	seps := []string{" ", ", ", "! ", "_", "-", "’", "—", "\u00a0", "«", "…", "。", "学", "é", "\u200b"}
	var b strings.Builder
	for i := r.IntN(6); i >= 0; i-- {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteString(seps[r.IntN(len(seps))])
	}
	return b.String()
}
