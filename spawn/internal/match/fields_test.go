package match

import (
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// TestQueryIndex_FieldAtoms checks field atoms (subreddit:golang) in the
// many-query index against the one-query evaluator and the naive one, which
// the index must agree with, including a from: author spelled like a field
// and field atoms next to NEARs and prefixes.
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
		6: parse("subreddit:golang (generics OR kube*)"),
		7: parse("subreddit:golang generics NEAR/1f here"),
		8: parse("(subreddit:rust asy*) OR (generics NEAR/0 are -subreddit:rust)"),
	}
	ix := NewQueries(subs)
	items := []Item{
		{Text: "generics are here", Fields: map[string]string{"subreddit": "GoLang"}},
		{Text: "generics are here", Fields: map[string]string{"subreddit": "rust"}},
		{Text: "async generics", Fields: map[string]string{"subreddit": "rust"}},
		{Text: "generics are here"},
		{Text: "nothing", Author: "subreddit:golang"},
		{Text: "kubectl apply", Fields: map[string]string{"subreddit": "golang"}},
		{Text: "here are generics", Fields: map[string]string{"subreddit": "golang"}},
		{Text: "asynchronous", Fields: map[string]string{"subreddit": "rust"}},
	}
	for i, it := range items {
		got := map[int64]bool{}
		for _, h := range ix.AppendMatch(nil, it) {
			got[h.Subscriber] = true
		}
		for id, q := range subs {
			want := naiveEval(q.Root(), it)
			if _, one := MatchQuery(q, it); one != want {
				t.Errorf("item %d, subscriber %d (%s): evaluator %v, naive %v", i, id, q, one, want)
			}
			if got[id] != want {
				t.Errorf("item %d, subscriber %d (%s): index %v, evaluator %v", i, id, q, got[id], want)
			}
		}
	}
}
