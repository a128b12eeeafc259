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
	r := rand.New(rand.NewPCG(7, 8))
	checked := 0
	for range 3000 {
		q, err := query.Parse(randomQuery(r, 4))
		if err != nil {
			continue
		}
		selects, err := compile(q)
		if err != nil {
			continue
		}
		for range 20 {
			text := randomText(r)
			lower := query.Fold(text)
			author, lang := []string{"bob", "alice"}[r.IntN(2)], []string{"en", "fr"}[r.IntN(2)]
			mood := []string{"positive", "neutral", "negative", ""}[r.IntN(4)]
			if !q.Eval(func(a query.Atom) bool {
				switch a.Kind {
				case query.From:
					return a.Value == author
				case query.Lang:
					return a.Value == lang
				case query.Sentiment:
					return a.Value == mood
				}
				return query.ContainsWord(lower, a.Text())
			}) {
				continue
			}
			checked++
			if !selects(lower) {
				t.Fatalf("%q matches %q but its compiled form does not select it", q, text)
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d matching texts checked", checked)
	}
}

// randomQuery writes a random query over a small vocabulary, so that atoms
// repeat and random texts hit them.
func randomQuery(r *rand.Rand, depth int) string {
	vocab := []string{"go", "rust", "new", "york", "#go", "@bob", `"new york"`, "from:bob", "lang:en", "c++", "sentiment:negative"}
	if depth == 0 || r.IntN(3) == 0 {
		return vocab[r.IntN(len(vocab))]
	}
	switch r.IntN(4) {
	case 0:
		return "-" + randomQuery(r, depth-1)
	case 1:
		return "(" + randomQuery(r, depth-1) + " OR " + randomQuery(r, depth-1) + ")"
	case 2:
		return randomQuery(r, depth-1) + "," + randomQuery(r, depth-1)
	}
	return "(" + randomQuery(r, depth-1) + " " + randomQuery(r, depth-1) + ")"
}

// randomText writes a text from words near the vocabulary's.
func randomText(r *rand.Rand) string {
	words := []string{"go", "Go", "#go", "golang", "rust", "new", "York", "new york", "c++", "@bob", "bob", "x", "#gopher"}
	seps := []string{" ", ", ", "! ", "_", "-", "’", "—", "\u00a0", "«", "…", "。", "学", "é", "\u200b"}
	var b strings.Builder
	for i := r.IntN(6); i >= 0; i-- {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteString(seps[r.IntN(len(seps))])
	}
	return b.String()
}
