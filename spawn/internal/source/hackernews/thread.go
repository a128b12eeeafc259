package hackernews

import (
	"context"
	"sync"
)

// Threads. An item names only its parent; the story that starts its thread
// is found by following parents. Every item the walk reads is remembered
// with its root (a story is its own), so a reply to an item read since the
// walk started finds its root at once; a reply to an older item reads the
// missing parents (at most MaxParentLookups for one item, each remembered
// with the root found). The memory keeps ThreadCacheSize items, forgetting
// the oldest first. An item whose root is not found within the bound gets
// no thread_id (counted: reason thread_unknown).

// threads maps item ids to the id of their thread's root.
type threads struct {
	mu    sync.Mutex
	root  map[int64]int64
	order []int64 // ring of ids, oldest at head
	head  int
	size  int
}

func newThreads(size int) *threads {
	return &threads{root: make(map[int64]int64, min(size, 1<<16)), order: make([]int64, 0, min(size, 1<<16)), size: size}
}

func (t *threads) get(id int64) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.root[id]
	return r, ok
}

func (t *threads) put(id, root int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.root[id]; ok {
		t.root[id] = root
		return
	}
	if len(t.order) < t.size {
		t.order = append(t.order, id)
	} else {
		delete(t.root, t.order[t.head])
		t.order[t.head] = id
		t.head = (t.head + 1) % t.size
	}
	t.root[id] = root
}

// rootOf finds the root of the thread w is in: w itself when it starts one;
// otherwise its parent's root, read from memory or, failing that, by
// reading parents from the API. It reports 0 when the root stays unknown.
func (s *Source) rootOf(ctx context.Context, w *wireItem) int64 {
	if w.startsThread() {
		s.threads.put(w.ID, w.ID)
		return w.ID
	}
	var chain []int64 // ids whose root is found by the walk up
	cur := w
	for range s.opts.MaxParentLookups + 1 {
		chain = append(chain, cur.ID)
		up := cur.up()
		if r, ok := s.threads.get(up); ok {
			return s.rooted(chain, r)
		}
		if s.opts.MaxParentLookups <= len(chain)-1 {
			break
		}
		p, err := s.api.item(ctx, up)
		if err != nil || p == nil {
			break
		}
		if p.startsThread() {
			s.threads.put(p.ID, p.ID)
			return s.rooted(chain, p.ID)
		}
		cur = p
	}
	s.stats.skip(reasonThreadUnknown)
	return 0
}

// rooted remembers root for every id of chain and returns it.
func (s *Source) rooted(chain []int64, root int64) int64 {
	for _, id := range chain {
		s.threads.put(id, root)
	}
	return root
}
