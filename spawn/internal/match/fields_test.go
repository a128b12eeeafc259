package match

import (
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// TestQueryIndex_FieldAtoms checks field atoms (subreddit:golang) in the
// many-query index against the one-query evaluator, which the index must
// agree with, including a from: author spelled like a field.
func TestQueryIndex_FieldAtoms(t *testing.T) {
	parse := func(s string) *query.Query {
		q, err := query.ParseFields([]string{s}, []string{"subreddit"})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	subs := map[int64]*query.Query{
		1: parse("subreddit:golang generics"),
		2: parse("subreddit:golang OR subreddit:rust"),
		3: parse("generics -subreddit:golang"),
		4: parse("from:subreddit:golang"),
		5: parse("(subreddit:golang generics) OR (subreddit:rust async)"),
	}
	ix := NewQueries(subs)
	items := []Item{
		{Text: "generics are here", Fields: map[string]string{"subreddit": "GoLang"}},
		{Text: "generics are here", Fields: map[string]string{"subreddit": "rust"}},
		{Text: "async generics", Fields: map[string]string{"subreddit": "rust"}},
		{Text: "generics are here"},
		{Text: "nothing", Author: "subreddit:golang"},
	}
	for i, it := range items {
		got := map[int64]bool{}
		for _, h := range ix.AppendMatch(nil, it) {
			got[h.Subscriber] = true
		}
		for id, q := range subs {
			_, want := MatchQuery(q, it)
			if got[id] != want {
				t.Errorf("item %d, subscriber %d (%s): index %v, evaluator %v", i, id, q, got[id], want)
			}
		}
	}
}
