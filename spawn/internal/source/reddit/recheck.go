package reddit

import (
	"container/heap"
	"context"
	"hash/fnv"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Re-checks. Reddit's Data API terms require that content its author
// deleted or Reddit removed is deleted where it was stored. A listing only
// shows what is still there, so every thing a listing handed over is read
// again through /api/info (100 fullnames a request, raw_json=1) Recheck
// after it was handed over, then after twice as long each time, until
// RecheckFor has passed: with the defaults at 1, 2, 4, … 128 hours, eight
// re-checks in a week. A thing whose author or body became "[deleted]" or
// "[removed]" (a post: its selftext, or removed_by_category set) is taken
// back as a delete retraction, so every store removes it and keeps it from
// coming back; an edited one (its text changed) as an update with
// edited_at from Reddit's "edited" time. Re-checks take a turn of the
// budget only when no poll is waiting for one. A listing remembers at most
// RecheckItems things, dropping the oldest first. This schedule lives in
// the spawn's memory and a move loses it: the daily check of the stored
// things (stored.go) covers what was stored before.

// recheckEntry is a thing handed over, waiting for its next re-check.
type recheckEntry struct {
	name   string
	handed time.Time
	due    time.Time
	step   int
	sum    uint64
	index  int // in the heap, -1 when out
}

type entryHeap []*recheckEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *entryHeap) Push(x any) {
	e := x.(*recheckEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}

// recheckBook holds a listing's things to re-check, soonest first.
type recheckBook struct {
	mu      sync.Mutex
	byName  map[string]*recheckEntry
	queue   entryHeap
	fifo    []string // names in the order handed over, for eviction
	size    int
	dropped int64
}

func newRecheckBook(size int) *recheckBook {
	return &recheckBook{byName: map[string]*recheckEntry{}, size: size}
}

func contentSum(text string, links []string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	for _, l := range links {
		h.Write([]byte{0})
		h.Write([]byte(l))
	}
	return h.Sum64()
}

// add books a thing handed over now, first re-checked after first.
func (b *recheckBook) add(name string, now time.Time, sum uint64, first time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.byName[name]; ok {
		e.sum = sum
		return
	}
	e := &recheckEntry{name: name, handed: now, due: now.Add(first), sum: sum}
	b.byName[name] = e
	heap.Push(&b.queue, e)
	b.fifo = append(b.fifo, name)
	for len(b.byName) > b.size && len(b.fifo) > 0 {
		old := b.fifo[0]
		b.fifo = b.fifo[1:]
		if e, ok := b.byName[old]; ok {
			b.removeLocked(e)
			b.dropped++
		}
	}
	if len(b.fifo) > 2*b.size+64 { // drop names already gone
		kept := b.fifo[:0]
		for _, n := range b.fifo {
			if _, ok := b.byName[n]; ok {
				kept = append(kept, n)
			}
		}
		b.fifo = kept
	}
}

func (b *recheckBook) removeLocked(e *recheckEntry) {
	if e.index >= 0 {
		heap.Remove(&b.queue, e.index)
	}
	delete(b.byName, e.name)
}

// nextDue is when the soonest re-check is due, zero when none is booked.
func (b *recheckBook) nextDue() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		return time.Time{}
	}
	return b.queue[0].due
}

// take removes up to n entries due by now from the queue (they stay
// booked) and returns them.
func (b *recheckBook) take(now time.Time, n int) []*recheckEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*recheckEntry
	for len(out) < n && len(b.queue) > 0 && !b.queue[0].due.After(now) {
		out = append(out, heap.Pop(&b.queue).(*recheckEntry))
	}
	return out
}

// again books e's next re-check: twice as long after it was handed over
// as the last one, unless that passes recheckFor (then it is forgotten);
// retry books it again after wait without moving on (a failed request).
func (b *recheckBook) again(e *recheckEntry, recheck, recheckFor time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byName[e.name]; !ok {
		return
	}
	e.step++
	after := recheck << min(e.step, 40)
	if after > recheckFor || after <= 0 {
		delete(b.byName, e.name)
		return
	}
	e.due = e.handed.Add(after)
	heap.Push(&b.queue, e)
}

func (b *recheckBook) retry(e *recheckEntry, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byName[e.name]; !ok {
		return
	}
	e.due = at
	heap.Push(&b.queue, e)
}

func (b *recheckBook) forget(e *recheckEntry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byName, e.name)
}

// recheck reads the things due through /api/info and tells what became of
// them.
func (s *Source) recheck(ctx context.Context) error {
	now := time.Now()
	batch := s.book.take(now, maxInfoIDs)
	if len(batch) == 0 {
		return nil
	}
	names := make([]string, len(batch))
	for i, e := range batch {
		names[i] = e.name
	}
	var doc listingDoc
	err := s.c.get(ctx, infoPath+"?"+url.Values{"id": {strings.Join(names, ",")}, "raw_json": {"1"}}.Encode(), true, &doc)
	if err != nil {
		retryAt := time.Now().Add(s.opts.BackoffMin)
		for _, e := range batch {
			s.book.retry(e, retryAt)
		}
		return err
	}
	found := make(map[string]*thingData, len(doc.Data.Children))
	for i := range doc.Data.Children {
		t := &doc.Data.Children[i]
		if _, err := t.check(s.kind); err == nil {
			found[t.Data.Name] = &t.Data
		}
	}
	for _, e := range batch {
		s.stats.rechecked.Add(1)
		d, ok := found[e.name]
		switch {
		case !ok:
			// Not answered this time (Reddit leaves out what it cannot
			// show): asked again at the next step.
			s.book.again(e, s.opts.Recheck, s.opts.RecheckFor)
		case d.gone():
			s.book.forget(e)
			s.tell(api.Retraction{Op: api.RetractDelete, Source: Name, ID: IDPrefix + e.name, At: now.UTC(),
				Reason: "reddit thing deleted or removed"})
		default:
			text := d.textOf(s.kind)
			links := d.linksOf(s.kind, text)
			if sum := contentSum(text, links); sum != e.sum {
				e.sum = sum
				edited := d.editedAt()
				if edited.IsZero() {
					edited = now.UTC()
				}
				s.tell(api.Retraction{Op: api.RetractUpdate, Source: Name, ID: IDPrefix + e.name, Text: text, Links: links,
					EditedAt: edited, At: now.UTC(), Reason: "reddit thing edited"})
			}
			s.book.again(e, s.opts.Recheck, s.opts.RecheckFor)
		}
	}
	return nil
}

// retracter holds the node's function for the listing's retractions.
type retracter struct {
	mu sync.Mutex
	fn func([]api.Retraction)
}

// Retractions takes the function the listing tells its retractions.
func (s *Source) Retractions(fn func([]api.Retraction)) {
	s.retract.mu.Lock()
	s.retract.fn = fn
	s.retract.mu.Unlock()
}

func (s *Source) tell(x api.Retraction) {
	s.retract.mu.Lock()
	fn := s.retract.fn
	s.retract.mu.Unlock()
	s.stats.retractions.Add(1)
	if fn != nil {
		fn([]api.Retraction{x})
	}
}
