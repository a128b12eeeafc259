package cluster

import (
	"context"
	"sync"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// collectMax bounds the increments one merge applies, so one transaction
// stays short; answers beyond it wait for the next merge.
const collectMax = 5000

// applier applies usage increments exactly once (sqlstore.Store).
type applier interface {
	ApplyIncrements(ctx context.Context, incs []api.Increment) ([]api.Increment, error)
}

// collector merges the usage increments of poll answers that arrive
// together into one SQL transaction, the collector of seed 000 at the
// scale of a poll round: a thousand spawns answering within a second would
// otherwise each pay a transaction of their own, and the round would wait
// on a thousand commits. The answer that finds no merge running merges
// what waits, its own increments among them, then hands the merging on to
// the first answer still waiting (no goroutine of its own, and no answer
// kept merging for others after its own is done); the others wait for the
// merge that takes theirs. Each answer learns which of its increments were
// new, as if it had applied them alone.
type collector struct {
	store applier

	mu      sync.Mutex
	waiting []*collectReq
	running bool
}

// collectReq is one answer's increments waiting to be merged.
type collectReq struct {
	incs    []api.Increment
	applied []api.Increment
	err     error
	done    chan struct{} // closed when merged
	promote chan struct{} // closed when this answer is to merge next
}

// apply merges incs (one node's, ids set) with whatever else waits and
// returns those applied now, in order, or the merge's error. A failed
// merge of several answers is retried answer by answer, so one answer
// that SQL refuses fails alone.
func (c *collector) apply(ctx context.Context, incs []api.Increment) ([]api.Increment, error) {
	r := &collectReq{incs: incs, done: make(chan struct{}), promote: make(chan struct{})}
	c.mu.Lock()
	c.waiting = append(c.waiting, r)
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		c.run(ctx, r)
		return r.applied, r.err
	}
	// A waiting answer is either merged by the one merging, or, still
	// waiting when that one hands on, promoted to merge next: never both.
	select {
	case <-r.done:
	case <-r.promote:
		c.run(ctx, r)
	}
	return r.applied, r.err
}

// run merges what waits until own is merged, then hands on to the first
// answer waiting, or stops when none is.
func (c *collector) run(ctx context.Context, own *collectReq) {
	for {
		c.mu.Lock()
		n, total := 0, 0
		for n < len(c.waiting) && (n == 0 || total+len(c.waiting[n].incs) <= collectMax) {
			total += len(c.waiting[n].incs)
			n++
		}
		batch := c.waiting[:n:n]
		c.waiting = c.waiting[n:]
		c.mu.Unlock()
		c.merge(ctx, batch)
		select {
		case <-own.done:
		default:
			continue
		}
		c.mu.Lock()
		if len(c.waiting) == 0 {
			c.running = false
		} else {
			close(c.waiting[0].promote)
		}
		c.mu.Unlock()
		return
	}
}

// merge applies a batch in one transaction and hands each answer its part.
func (c *collector) merge(ctx context.Context, batch []*collectReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	if len(batch) == 1 {
		r := batch[0]
		r.applied, r.err = c.store.ApplyIncrements(ctx, r.incs)
		return
	}
	var all []api.Increment
	for _, r := range batch {
		all = append(all, r.incs...)
	}
	applied, err := c.store.ApplyIncrements(ctx, all)
	if err != nil {
		for _, r := range batch {
			r.applied, r.err = c.store.ApplyIncrements(ctx, r.incs)
		}
		return
	}
	type id struct {
		node string
		seq  uint64
	}
	byID := make(map[id]api.Increment, len(applied))
	for _, inc := range applied {
		byID[id{inc.NodeID, inc.Seq}] = inc
	}
	for _, r := range batch {
		for _, inc := range r.incs {
			k := id{inc.NodeID, inc.Seq}
			if a, ok := byID[k]; ok {
				r.applied = append(r.applied, a)
				delete(byID, k) // a copy in another answer was not new
			}
		}
	}
}
