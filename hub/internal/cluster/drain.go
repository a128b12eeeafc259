package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Draining. A spawn about to go away (SIGTERM: a scale-in, a spot
// interruption) or retired by an operator (bwctl node drain) drains: the
// hub routes nothing new to it and moves what it runs to the other spawns,
// make before break. Each crawler is sent to its new node while the
// draining one keeps running it (it stays in the draining node's polled
// set, node.keep, and its lease accounts there are still followed); only
// when the new node reports it running (or waiting for quota) does the
// draining node's next poll leave it out, which stops it there. So a
// crawler always runs somewhere, and leases keep the two instances of the
// overlap within the crawler's limit. A crawler no other spawn can run
// stays on the draining node. A fleet-scoped source's holder changes too:
// the new holder starts its subscribers at once, and its stream connects
// once the old holder's has gone (the source retries X's
// TooManyConnections on a short schedule, then fills the gap).
//
// A draining node is polled every drainPollInterval, so each crawler
// leaves it a moment after it runs elsewhere, and its last usage is
// acknowledged quickly. A spawn that stopped after a drain says so
// (api.DrainRequest.Done): the hub forgets it at once, with nothing to
// read back from the store.

// drainPollInterval is how often a draining node is polled.
const drainPollInterval = 250 * time.Millisecond

// nodeDrain is a node's drain as the hub follows it. Guarded by Hub.mu.
type nodeDrain struct {
	// active is set when the node drains, at start.
	active bool
	start  time.Time
	// keep are the crawlers routed elsewhere that it runs until their new
	// node does.
	keep map[int64]*crawler
}

// DrainNode marks a node draining and moves its crawlers elsewhere; it
// returns the node as listed. Draining a draining node changes nothing.
func (h *Hub) DrainNode(id string) (api.Node, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.nodes[id]
	if !ok {
		return api.Node{}, fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	h.drainLocked(n, "asked to")
	return h.nodeViewLocked(n), nil
}

// drainLocked starts a node's drain: routing skips it from the next
// reload on, which is asked for at once.
func (h *Hub) drainLocked(n *node, why string) {
	if n.drain.active || n.removed {
		return
	}
	n.drain.active = true
	n.drain.start = time.Now()
	h.metrics.drains.Inc()
	h.events.add("node_draining", fmt.Sprintf("node %s drains (%s): its %d crawlers move to other spawns", short(n.id), why, len(n.want)))
	h.logger.Info("node draining", "node_id", n.id, "why", why, "crawlers", len(n.want))
	h.requestReloadLocked(true)
	if ctx, running := h.run.context(); running {
		h.run.wg.Add(1)
		go func() { defer h.run.wg.Done(); h.pollDraining(ctx, n) }()
	}
}

// drainingOffersLocked counts, per source kind, the draining nodes among
// ids that offer it: a crawler that no other node can take waits for them,
// and says so.
func (h *Hub) drainingOffersLocked(ids []string) map[string]int {
	var out map[string]int
	for _, id := range ids {
		n := h.nodes[id]
		if !n.drain.active {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		for _, kind := range n.sources {
			out[kind]++
		}
	}
	return out
}

// pollDraining polls a draining node every drainPollInterval until it has
// handed everything over — it runs nothing, has nothing on its way to the
// store and every increment it reported is acknowledged — or it is
// removed, or ctx ends. A drained node that stays up (bwctl node drain)
// is then polled at the usual interval.
func (h *Hub) pollDraining(ctx context.Context, n *node) {
	t := time.NewTicker(drainPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		done := n.removed || (len(n.want) == 0 && len(n.drain.keep) == 0 && len(n.pending) == 0 && len(n.acks) == 0 && !n.lastPoll.Before(n.drain.start))
		h.mu.Unlock()
		if done {
			return
		}
		h.pollNodes(ctx, []*node{n})
	}
}

// NodeDrained forgets a node that drained and stopped: it ran nothing
// more and the hub acknowledged all its usage, so nothing of it is to be
// read back from the store. A node still running crawlers, or unknown, is
// left to the failure detection.
func (h *Hub) NodeDrained(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.nodes[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if len(n.want) > 0 || len(n.drain.keep) > 0 || len(n.pending) > 0 {
		return fmt.Errorf("%w: node %s still runs %d crawlers", ErrInvalid, id, len(n.want)+len(n.drain.keep))
	}
	took := time.Duration(0)
	if !n.drain.start.IsZero() {
		took = time.Since(n.drain.start)
		h.metrics.drainSeconds.Observe(took.Seconds())
	}
	h.forgetNodeLocked(n)
	h.events.add("node_left", fmt.Sprintf("node %s drained and stopped (drain took %s)", short(n.id), took.Round(time.Millisecond)))
	h.logger.Info("node drained and left", "node_id", n.id, "took", took.Round(time.Millisecond))
	ctx := h.runContext()
	h.run.wg.Add(1)
	go func() {
		defer h.run.wg.Done()
		if err := h.cfg.Store.ForgetNode(ctx, id); err != nil {
			h.logger.Warn("unable to forget node", "node_id", id, "err", err)
		}
	}()
	h.requestReloadLocked(false)
	return nil
}

// forgetNodeLocked removes a node that left cleanly: its lease accounts
// count for nothing once expired, as after a completed recovery.
func (h *Hub) forgetNodeLocked(n *node) {
	n.removed = true
	delete(h.nodes, n.id)
	for _, c := range n.sent {
		h.sentToLocked(c, nil)
	}
	for id := range n.leased {
		if c, ok := h.crawlers[id]; ok {
			c.leases.nodeLost(n.id)
			c.leases.recovered(n.id)
		}
	}
	h.lost.leased[n.id] = n.leased
}

// leaveLocked makes a crawler routed away from a draining node keep
// running there until its new node runs it.
func (h *Hub) leaveLocked(c *crawler, from *node) {
	if c.leaving == from {
		return
	}
	h.releaseLocked(c)
	c.leaving = from
	if from.drain.keep == nil {
		from.drain.keep = map[int64]*crawler{}
	}
	from.drain.keep[c.row.ID] = c
}

// releaseLocked lets the node a crawler is leaving drop it (its next poll
// leaves it out).
func (h *Hub) releaseLocked(c *crawler) {
	if c.leaving == nil {
		return
	}
	delete(c.leaving.drain.keep, c.row.ID)
	c.leaving = nil
}

// takeLeavingStatusLocked takes in a status a draining node reports for a
// crawler it keeps while the crawler starts elsewhere: its lease account
// there goes on counting; a node that no longer runs it has let it go.
func (h *Hub) takeLeavingStatusLocked(n *node, c *crawler, st api.SubscriberStatus, clock int64) {
	if st.State == api.StateMissing {
		h.releaseLocked(c)
		return
	}
	if c.limited || len(c.leases.inst) > 0 {
		c.leases.observe(n.id, st, clock)
		n.leased[c.row.ID] = true
	}
}

// runningElsewhereLocked releases a crawler from the node it leaves once
// its new node reports it running there (or waiting for quota, or degraded:
// running, its source unable to reach a service the draining node reaches
// no better) with its data sources live.
func (h *Hub) runningElsewhereLocked(c *crawler, state string, live bool) {
	if c.leaving == nil || !live || (state != api.StateRunning && state != api.StateDegraded && state != api.StateQuotaWait) {
		return
	}
	from := c.leaving
	h.releaseLocked(c)
	h.logger.Debug("crawler runs on its new node: the draining one drops it", "crawler_id", c.row.ID, "from", from.id, "to", c.nodeID())
}
