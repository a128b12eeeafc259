// Package termq is a bounded priority queue of scored terms, without
// duplicates: the spawn keeps the best candidate terms of an increment in
// one, the hub the best per crawler hour and the query suggestions per
// crawler.
//
// It does what loklak's PriorityKaizen queue (seed 003) meant to do and did
// not: scores are compared as floats (its `(int)(a - b)` comparator made
// every score in [0,1] equal), the bound is enforced (its queue grew
// without limit), and a term seen again updates its score instead of being
// rejected or queued twice.
package termq

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// Item is a term with its score and how many sightings made it.
type Item struct {
	Term  string
	Score float64
	Count int64
}

// Queue keeps at most its bound of items, the highest scored. It is not
// safe for concurrent use.
type Queue struct {
	max   int
	h     minHeap
	index map[string]*entry
}

type entry struct {
	Item
	pos int // position in the heap
}

// New returns an empty queue that holds at most bound items (at least 1).
func New(bound int) *Queue {
	return &Queue{max: max(bound, 1), index: make(map[string]*entry)}
}

// Len is the number of items held.
func (q *Queue) Len() int { return len(q.h) }

// Cap is the queue's bound.
func (q *Queue) Cap() int { return q.max }

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
		heap.Fix(&q.h, e.pos)
		return Item{}, false
	}
	it := Item{Term: term, Score: score, Count: count}
	if len(q.h) < q.max {
		q.push(it)
		return Item{}, false
	}
	low := q.h[0]
	if less(it, low.Item) || !less(low.Item, it) {
		return it, true
	}
	heap.Pop(&q.h)
	delete(q.index, low.Term)
	q.push(it)
	return low.Item, true
}

func (q *Queue) push(it Item) {
	e := &entry{Item: it}
	q.index[it.Term] = e
	heap.Push(&q.h, e)
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
	heap.Remove(&q.h, e.pos)
	delete(q.index, term)
	return true
}

// Pop removes and returns the highest ranked item (see Compare). It scans
// the queue, which its bound keeps small.
func (q *Queue) Pop() (Item, bool) {
	if len(q.h) == 0 {
		return Item{}, false
	}
	best := 0
	for i := 1; i < len(q.h); i++ {
		if less(q.h[best].Item, q.h[i].Item) {
			best = i
		}
	}
	e := q.h[best]
	heap.Remove(&q.h, best)
	delete(q.index, e.Term)
	return e.Item, true
}

// Items returns every item, highest ranked first (see Compare), leaving
// the queue as it is.
func (q *Queue) Items() []Item {
	out := make([]Item, len(q.h))
	for i, e := range q.h {
		out[i] = e.Item
	}
	slices.SortFunc(out, func(a, b Item) int { return Compare(b, a) })
	return out
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

// minHeap keeps the lowest ranked item at the root, the one to evict.
type minHeap []*entry

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return less(h[i].Item, h[j].Item) }
func (h minHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *minHeap) Push(x any) {
	e := x.(*entry)
	e.pos = len(*h)
	*h = append(*h, e)
}
func (h *minHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
