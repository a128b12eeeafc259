package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Usage: the increments spawns report with their poll answers are applied
// to SQL exactly once, those of answers arriving together in one
// transaction (collector), acknowledged on the node's next poll, and added
// to the in-memory usage, which stops crawlers and users at their limits.
// Why increments: docs/decisions/0003-usage-increments-applied-once.md.

// applyAnswer applies the usage increments of an answer in SQL, which
// returns only those it had not applied before.
func (h *Hub) applyAnswer(ctx context.Context, n *node, resp api.PollResponse, sentAcks int, received time.Time) pollAnswer {
	for i := range resp.Increments {
		resp.Increments[i].NodeID = n.id
	}
	a := pollAnswer{resp: resp, sentAcks: sentAcks, received: received}
	if len(resp.Increments) > 0 {
		a.applied, a.applyErr = h.usage.apply(ctx, resp.Increments)
		if a.applyErr != nil {
			h.logger.Error("apply usage failed", "node_id", n.id, "increments", len(resp.Increments), "err", a.applyErr)
		}
	}
	return a
}

// takeUsageLocked takes in the usage of an answer SQL has seen: it drops
// the acknowledgements the poll carried, queues those of the answer's
// increments for the next poll, and adds what SQL applied anew. When
// applying failed nothing is acknowledged: the node reports the increments
// again.
func (h *Hub) takeUsageLocked(n *node, a pollAnswer) {
	n.acks = n.acks[a.sentAcks:]
	if a.applyErr != nil {
		return
	}
	for _, inc := range a.resp.Increments {
		n.acks = append(n.acks, inc.Seq)
		n.maxSeq = max(n.maxSeq, inc.Seq)
	}
	h.applyUsageLocked(n, a.applied)
}

// applyUsageLocked adds newly applied increments to the in-memory usage and
// stops crawlers and users that reached their limit.
func (h *Hub) applyUsageLocked(n *node, applied []api.Increment) {
	h.applyNodeUsageLocked(n.id, n.leased, applied)
}

// applyNodeUsageLocked is applyUsageLocked for increments of nodeID, which
// may be a lost node (leased nil).
func (h *Hub) applyNodeUsageLocked(nodeID string, leased map[int64]bool, applied []api.Increment) {
	var reached []int64
	userHit := false
	for _, inc := range applied {
		h.metrics.usageApplied.Add(float64(inc.Count))
		if u, ok := h.users[inc.UserID]; ok {
			u.row.Usage += inc.Count
			if u.row.CommentLimit > 0 && u.row.Usage >= u.row.CommentLimit {
				userHit = true
			}
		}
		c, ok := h.crawlers[inc.CrawlerID]
		if !ok {
			continue
		}
		c.row.Usage += inc.Count
		h.history.add(c.row.ID, inc.Count, time.Now())
		if !inc.Newest.IsZero() {
			t := inc.Newest
			c.row.CursorAt = laterCursor(c.row.CursorAt, &t)
		}
		c.row.CursorPos = sqlstore.NextCursorPos(c.row.CursorPos, inc.Position, time.Now())
		c.row.CursorIDs = c.row.CursorIDs.Merge(inc.Sources)
		switch {
		case leased == nil:
			// A lost node: only its surviving accounts take the usage.
			if l, ok := c.leases.inst[instKey{nodeID, inc.Instance}]; ok {
				l.used += inc.Count
			}
		case c.limited || len(c.leases.inst) > 0:
			c.leases.get(instKey{nodeID, inc.Instance}).used += inc.Count
			leased[c.row.ID] = true
		}
		if c.row.CommentLimit > 0 && c.row.Usage >= c.row.CommentLimit && !c.row.LimitReached {
			c.row.LimitReached = true
			reached = append(reached, c.row.ID)
			h.events.add("limit_reached", fmt.Sprintf("crawler %d reached its limit of %d", c.row.ID, c.row.CommentLimit))
		}
	}
	if len(reached) == 0 && !userHit {
		return
	}
	ctx := h.runContext()
	h.run.wg.Add(1)
	go func() {
		defer h.run.wg.Done()
		for _, id := range reached {
			if err := h.cfg.Store.SetLimitReached(ctx, id, true); err != nil {
				h.logger.Error("unable to mark limit reached", "crawler_id", id, "err", err)
			}
		}
		h.RequestReload(false)
	}()
}

// collectMax bounds the increments one merge applies, so one transaction
// stays short; answers beyond it wait for the next merge.
const collectMax = 5000

// applier applies usage increments exactly once (sqlstore.Store).
type applier interface {
	ApplyIncrements(ctx context.Context, incs []api.Increment) ([]api.Increment, error)
}

// collector merges the usage increments of poll answers that arrive
// together into one SQL transaction: a thousand spawns answering within a second would
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
