package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Usage: every comment the node stores counts under a usage increment
// (api.Increment), numbered on the node, reported in poll answers until the
// hub acknowledges it, and applied by the hub exactly once.

// usageBook is what the node counted that the hub has not acknowledged.
// Guarded by Node.mu.
type usageBook struct {
	// incSeq numbers the increments.
	incSeq uint64
	// incs are the increments written and not yet acknowledged.
	incs []api.Increment
	// pending counts, per crawler, the comments counted and not yet
	// stored.
	pending map[int64]int
}

// pendingLocked tracks comments between counting and storing, so the hub
// knows when a crawler's usage on this node is complete.
func (u *usageBook) pendingLocked(crawlerID int64, delta int) {
	u.pending[crawlerID] += delta
	if u.pending[crawlerID] <= 0 {
		delete(u.pending, crawlerID)
	}
}

// unreserve returns a reservation whose comment never reached the store.
func (n *Node) unreserve(p pending) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.table.subs[p.comment.CrawlerID]; ok && s.instance == p.instance {
		s.reserved--
	}
	n.usage.pendingLocked(p.comment.CrawlerID, -1)
}

// pruneAckedLocked forgets the increments the hub acknowledges: it has
// applied them, so they are not reported again. The rest are re-sent on
// every poll until acknowledged.
func (u *usageBook) pruneAckedLocked(acks []uint64) {
	if len(acks) == 0 {
		return
	}
	acked := make(map[uint64]bool, len(acks))
	for _, a := range acks {
		acked[a] = true
	}
	u.incs = slices.DeleteFunc(u.incs, func(i api.Increment) bool { return acked[i.Seq] })
}

// assignIncrements gives each comment of a batch, before it is written, the
// usage increment it counts under: one per (crawler, instance, lease) in the
// batch, numbered in the order batches are written. It returns the
// increments' intents for a store that journals them.
func (n *Node) assignIncrements(batch []pending) []store.Intent {
	intents := n.numberIncrements(batch)
	n.startAnalysis(batch) // numbered: its analytics can be worked out during the write
	return intents
}

// numberIncrements is assignIncrements without the analysis.
func (n *Node) numberIncrements(batch []pending) []store.Intent {
	type key struct {
		crawler  int64
		instance uint64
		lease    uint64
	}
	// A batch holds a crawler's comments together (a lane at a time), so
	// its runs of one key bound its increments: size for them once.
	runs := 0
	for i := range batch {
		if i == 0 || batch[i].comment.CrawlerID != batch[i-1].comment.CrawlerID ||
			batch[i].instance != batch[i-1].instance || batch[i].leaseSeq != batch[i-1].leaseSeq {
			runs++
		}
	}
	idx := make(map[key]int, runs)
	intents := make([]store.Intent, 0, runs)
	days := make([]time.Time, runs) // each increment's first day
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range batch {
		p := &batch[i]
		k := key{p.comment.CrawlerID, p.instance, p.leaseSeq}
		j, ok := idx[k]
		day := p.comment.PublishedAt.UTC().Truncate(24 * time.Hour)
		if !ok {
			n.usage.incSeq++
			j = len(intents)
			days[j] = day
			intents = append(intents, store.Intent{NodeID: n.id, Seq: n.usage.incSeq, CrawlerID: k.crawler, UserID: p.userID, Instance: p.instance, LeaseSeq: p.leaseSeq,
				Days: days[j : j+1 : j+1]}) // a second day copies it out
			idx[k] = j
		}
		p.comment.NodeID, p.comment.IncSeq = n.id, intents[j].Seq
		if !slices.ContainsFunc(intents[j].Days, day.Equal) {
			intents[j].Days = append(intents[j].Days, day)
		}
	}
	return intents
}

// recordWritten turns written comments into the usage increments they were
// assigned. A comment the store already held (delivered again after a
// crawler moved) is not usage: its reservation goes back to the lease.
func (n *Node) recordWritten(batch []pending, fresh []bool) {
	analytics := n.analyticsOf(batch, fresh) // outside the lock: it is the costly part
	n.mu.Lock()
	defer n.mu.Unlock()
	idx := map[uint64]int{}
	first := len(n.usage.incs) // increments before this batch all have lower numbers
	for j, p := range batch {
		c := p.comment
		s, live := n.table.subs[c.CrawlerID]
		if live && s.instance != p.instance {
			live = false
		}
		n.usage.pendingLocked(c.CrawlerID, -1)
		if !fresh[j] {
			if live {
				s.reserved--
			}
			n.metrics.duplicatesSkipped.Inc()
			continue
		}
		if live {
			s.stored++
		}
		i, ok := idx[c.IncSeq]
		if !ok {
			n.usage.incs = append(n.usage.incs, api.Increment{NodeID: n.id, Seq: c.IncSeq, CrawlerID: c.CrawlerID, UserID: p.userID, Instance: p.instance, LeaseSeq: p.leaseSeq})
			i = len(n.usage.incs) - 1
			idx[c.IncSeq] = i
		}
		n.usage.incs[i].Count++
		if c.PublishedAt.After(n.usage.incs[i].Newest) {
			n.usage.incs[i].Newest = c.PublishedAt
		}
		n.usage.incs[i].Position = max(n.usage.incs[i].Position, c.Position)
		if p.sourceID != "" && p.source != "" {
			if n.usage.incs[i].Sources == nil {
				n.usage.incs[i].Sources = map[string]string{}
			}
			n.usage.incs[i].Sources[p.source] = api.LaterSourceID(n.usage.incs[i].Sources[p.source], p.sourceID)
		}
	}
	// Within a batch the first fresh comment of each increment decides the
	// order of appends: keep the batch's increments in number order.
	slices.SortFunc(n.usage.incs[first:], func(a, b api.Increment) int { return cmp.Compare(a.Seq, b.Seq) })
	attachAnalytics(n.usage.incs[first:], analytics)
}

// ErrNoJournal is returned when the spawn's store cannot recover usage.
var ErrNoJournal = errors.New("node: this spawn's store keeps no usage journal")

// RecoverUsage reads a lost node's unreported increments back from the
// store, for the hub of the current epoch.
func (n *Node) RecoverUsage(ctx context.Context, req api.RecoverRequest) ([]api.Increment, error) {
	n.mu.Lock()
	attached, epoch := n.attach.state == api.NodeAttached, n.attach.epoch
	n.mu.Unlock()
	if !attached {
		return nil, ErrNotAttached
	}
	if req.Epoch != epoch {
		return nil, fmt.Errorf("%w: recovery asked by epoch %s, attached to %s", ErrEpoch, req.Epoch, epoch)
	}
	j, ok := n.cfg.Store.(store.UsageJournal)
	if !ok {
		return nil, ErrNoJournal
	}
	incs, err := j.Recover(ctx, req.NodeID, req.AfterSeq)
	if err != nil {
		return nil, err
	}
	if incs == nil {
		incs = []api.Increment{}
	}
	return incs, nil
}
