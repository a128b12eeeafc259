// Package termq keeps the best of many scored items within a bound: Top
// keeps the k best of what is offered to it, by any order (a spawn's
// increment keeps its top terms and query candidates in one), and Queue is
// a bounded queue of scored terms on it, without duplicates (the hub keeps
// a crawler hour's terms and a crawler's query suggestions in one). Unlike
// loklak's PriorityKaizen queue, scores compare as floats, the bound holds,
// and a term seen again adds to its score instead of being queued twice.
package termq

import (
	"cmp"
	"math"
	"slices"
)

// Item is a term with its score and how many sightings made it.
type Item struct {
	Term  string
	Score float64
	Count int64
}

// Queue keeps at most its bound of items, the highest scored, one per
// term: a Top of them with an index by term. It is not safe for concurrent
// use.
type Queue struct {
	top   Top[*entry]
	index map[string]*entry
}

type entry struct {
	Item
	pos int // index in top
}

// New returns an empty queue that holds at most bound items (at least 1).
func New(bound int) *Queue {
	q := &Queue{index: make(map[string]*entry)}
	q.top.Reset(bound, func(a, b *entry) bool { return less(a.Item, b.Item) })
	q.top.moved = func(e *entry, i int) { e.pos = i }
	return q
}

// Len is the number of items held.
func (q *Queue) Len() int { return q.top.Len() }

// Cap is the queue's bound.
func (q *Queue) Cap() int { return q.top.k }

// Add records a sighting: score (a finite number) and count are added to
// the term's when it is held. A term not held is inserted; when the queue
// is full it displaces the lowest item only if it scores higher. Add
// returns the item that left or was refused (dropped reports whether there
// was one), so a caller can account for what the bound cut off.
func (q *Queue) Add(term string, score float64, count int64) (dropped Item, ok bool) {
	if math.IsNaN(score) || math.IsInf(score, 0) {
		return Item{Term: term, Count: count}, true
	}
	if e, held := q.index[term]; held {
		e.Score += score
		e.Count += count
		q.top.Fix(e.pos)
		return Item{}, false
	}
	e := &entry{Item: Item{Term: term, Score: score, Count: count}}
	left, out := q.top.Offer(e)
	if !out {
		q.index[term] = e
		return Item{}, false
	}
	if left != e {
		delete(q.index, left.Term)
		q.index[term] = e
	}
	return left.Item, true
}

// Get returns the term's item when it is held.
func (q *Queue) Get(term string) (Item, bool) {
	e, ok := q.index[term]
	if !ok {
		return Item{}, false
	}
	return e.Item, true
}

// Remove drops a term; it reports whether it was held.
func (q *Queue) Remove(term string) bool {
	e, ok := q.index[term]
	if !ok {
		return false
	}
	q.top.Remove(e.pos)
	delete(q.index, term)
	return true
}

// Pop removes and returns the highest ranked item (see Compare). It scans
// the queue, which its bound keeps small.
func (q *Queue) Pop() (Item, bool) {
	items := q.top.Items()
	if len(items) == 0 {
		return Item{}, false
	}
	best := 0
	for i := 1; i < len(items); i++ {
		if less(items[best].Item, items[i].Item) {
			best = i
		}
	}
	e := q.top.Remove(best)
	delete(q.index, e.Term)
	return e.Item, true
}

// Items returns every item, highest ranked first (see Compare), leaving
// the queue as it is.
func (q *Queue) Items() []Item {
	out := make([]Item, q.top.Len())
	for i, e := range q.top.Items() {
		out[i] = e.Item
	}
	SortBest(out)
	return out
}

// SortBest orders items highest ranked first (see Compare).
func SortBest(items []Item) {
	slices.SortFunc(items, func(a, b Item) int { return Compare(b, a) })
}

// Compare orders items by score, then by sightings, then by term in
// reverse, so that of two equal scores the more often seen ranks higher
// (query candidates from posts nobody shared all score 0 and still rank
// by frequency), and of two equal in both the smaller term. Scores are
// compared as floats: 0.3 ranks above 0.2.
func Compare(a, b Item) int {
	// Each comparison only when the ones before tie: cmp.Or would compare
	// the terms every time.
	if c := cmp.Compare(a.Score, b.Score); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Count, b.Count); c != 0 {
		return c
	}
	return cmp.Compare(b.Term, a.Term)
}

func less(a, b Item) bool { return Compare(a, b) < 0 }
