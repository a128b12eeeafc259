package termq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func terms(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Term
	}
	return out
}

func TestQueue_Add(t *testing.T) {
	type add struct {
		term  string
		score float64
	}
	tests := []struct {
		name    string
		bound   int
		adds    []add
		want    []string // Items order
		dropped []string // what Add reported as cut off, in order
	}{
		{
			// loklak's comparator truncated every difference of scores
			// in [0,1] to 0: all equal, order arbitrary.
			name:  "scores in [0,1] are ordered as floats",
			bound: 10,
			adds:  []add{{"a", 0.2}, {"b", 0.9}, {"c", 0.5}, {"d", 0.51}},
			want:  []string{"b", "d", "c", "a"},
		},
		{
			// loklak's queue was never bounded.
			name:    "a full queue evicts its lowest for a higher one",
			bound:   2,
			adds:    []add{{"a", 0.2}, {"b", 0.9}, {"c", 0.5}},
			want:    []string{"b", "c"},
			dropped: []string{"a"},
		},
		{
			name:    "a full queue refuses one no higher than its lowest",
			bound:   2,
			adds:    []add{{"a", 0.2}, {"b", 0.9}, {"c", 0.1}, {"d", 0.2}},
			want:    []string{"b", "a"},
			dropped: []string{"c", "d"},
		},
		{
			name:  "a new sighting adds to the held term, no duplicate",
			bound: 3,
			adds:  []add{{"a", 0.5}, {"b", 0.9}, {"a", 0.5}},
			want:  []string{"a", "b"},
		},
		{
			name:  "equal scores rank the smaller term first",
			bound: 3,
			adds:  []add{{"b", 0.5}, {"c", 0.5}, {"a", 0.5}},
			want:  []string{"a", "b", "c"},
		},
		{
			name:    "non-finite scores are refused",
			bound:   3,
			adds:    []add{{"a", math.NaN()}, {"b", math.Inf(1)}, {"c", 0.1}},
			want:    []string{"c"},
			dropped: []string{"a", "b"},
		},
		{
			name:    "a bound below 1 holds one",
			bound:   0,
			adds:    []add{{"a", 0.1}, {"b", 0.2}},
			want:    []string{"b"},
			dropped: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := New(tt.bound)
			var dropped []string
			for _, a := range tt.adds {
				if d, ok := q.Add(a.term, a.score, 1); ok {
					dropped = append(dropped, d.Term)
				}
			}
			if got := terms(q.Items()); !slices.Equal(got, tt.want) {
				t.Errorf("items = %v, want %v", got, tt.want)
			}
			if !slices.Equal(dropped, tt.dropped) {
				t.Errorf("dropped = %v, want %v", dropped, tt.dropped)
			}
		})
	}
}

func TestQueue_SightingsAccumulate(t *testing.T) {
	q := New(2)
	q.Add("a", 0.5, 1)
	q.Add("b", 0.4, 1)
	q.Add("b", 0.4, 2)
	it, ok := q.Get("b")
	if !ok || it.Score != 0.8 || it.Count != 3 {
		t.Fatalf("b = %+v %v, want score 0.8 count 3", it, ok)
	}
	if got := terms(q.Items()); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("items = %v, want b before a after b's second sighting", got)
	}
	if !q.Remove("a") || q.Remove("a") || q.Len() != 1 {
		t.Fatalf("remove: len %d", q.Len())
	}
}

// TestQueue_EqualScoresRankBySightings: candidates from posts nobody
// shared all score 0; the more often seen ranks higher and survives a full
// queue.
func TestQueue_EqualScoresRankBySightings(t *testing.T) {
	q := New(2)
	q.Add("once", 0, 1)
	q.Add("often", 0, 1)
	q.Add("often", 0, 4)
	q.Add("twice", 0, 2) // displaces "once", seen less
	q.Add("shared", 0.2, 1)
	if got := terms(q.Items()); !slices.Equal(got, []string{"shared", "often"}) {
		t.Fatalf("items = %v, want the scored term, then the most seen", got)
	}
	if Compare(Item{Term: "a", Count: 3}, Item{Term: "b", Count: 2}) <= 0 {
		t.Fatal("of two equal scores the one seen more must rank higher")
	}
}

// TestQueue_Property adds random sightings and checks, after every one,
// that the queue never exceeds its bound, holds no term twice, holds
// exactly the best of what it was offered when no term repeats, and pops
// in score order.
func TestQueue_Property(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		bound := 1 + r.IntN(12)
		q := New(bound)
		offered := map[string]float64{}
		for i := range 1 + r.IntN(80) {
			term := fmt.Sprintf("t%d", r.IntN(40))
			if seed%2 == 0 {
				term = fmt.Sprintf("u%d", i) // distinct terms
			}
			score := r.Float64() // in [0,1), as loklak's engagement scores
			q.Add(term, score, 1)
			offered[term] += score
			if q.Len() > bound {
				t.Fatalf("seed %d: len %d above bound %d", seed, q.Len(), bound)
			}
			items := q.Items()
			seen := map[string]bool{}
			for _, it := range items {
				if seen[it.Term] {
					t.Fatalf("seed %d: %q held twice", seed, it.Term)
				}
				seen[it.Term] = true
			}
		}
		if seed%2 == 0 {
			// Distinct terms: the queue holds exactly the top bound.
			all := make([]Item, 0, len(offered))
			for term, s := range offered {
				all = append(all, Item{Term: term, Score: s})
			}
			slices.SortFunc(all, func(a, b Item) int { return Compare(b, a) })
			want := terms(all[:min(bound, len(all))])
			if got := terms(q.Items()); !slices.Equal(got, want) {
				t.Fatalf("seed %d: holds %v, want the best %v", seed, got, want)
			}
		}
		prev, first := Item{}, true
		for q.Len() > 0 {
			it, _ := q.Pop()
			if !first && Compare(it, prev) > 0 {
				t.Fatalf("seed %d: popped %+v after %+v", seed, it, prev)
			}
			prev, first = it, false
		}
		if _, ok := q.Pop(); ok {
			t.Fatalf("seed %d: pop from an empty queue", seed)
		}
	}
}
