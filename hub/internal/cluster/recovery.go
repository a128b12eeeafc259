package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// recovery is a lost node whose usage after afterSeq is read back from the
// comment store once due.
type recovery struct {
	nodeID   string
	afterSeq uint64
	due      time.Time
}

// lostNodes are the lost nodes the hub still owes something: their usage
// to read back from the store, their lease accounts to settle. Guarded by
// Hub.mu.
type lostNodes struct {
	// recoveries are lost nodes whose unreported usage is still to be
	// read back from the comment store.
	recoveries []recovery
	// leased keeps, per lost node, the crawlers that may still hold
	// lease accounts on it (its leased set when it was lost), for its
	// recovery and its registering again; pruneLostLocked drops what
	// settled.
	leased map[string]map[int64]bool
}

// lateWriteGrace is how long after a spawn's write deadline a store may
// still apply a write the spawn gave up on at the deadline: a Cassandra
// coordinator times a write out after 2 s by default.
const lateWriteGrace = 2 * time.Second

// recoveryDelay is how long after losing a node its usage is read back: by
// then its leases have expired and, if it was only cut off, it has detached
// and stopped counting, and no write it started can still land. A spawn
// bounds every store call by its last contact with the hub plus
// detach_after, and drops what it counted once that has passed
// (node.FencedStore); the hub lost it no earlier than that contact.
func (h *Hub) recoveryDelay() time.Duration {
	return max(h.cfg.LeaseTTL, h.cfg.DetachAfter) + h.cfg.PollInterval + lateWriteGrace
}

// runRecoveries asks a live node to read back the usage of every lost node
// whose recovery is due, applies it exactly once (the increments keep the
// lost node's ids), and then releases the lost node's leases.
func (h *Hub) runRecoveries(ctx context.Context) {
	now := time.Now()
	h.mu.Lock()
	var due []recovery
	keep := h.lost.recoveries[:0]
	for _, r := range h.lost.recoveries {
		if now.Before(r.due) {
			keep = append(keep, r)
		} else {
			due = append(due, r)
		}
	}
	h.lost.recoveries = keep
	h.pruneLostLocked()
	var reader *node
	if ids := h.sortedNodeIDsLocked(); len(ids) > 0 {
		reader = h.nodes[ids[0]]
	}
	h.mu.Unlock()
	for _, r := range due {
		if err := h.recover(ctx, reader, r); err != nil {
			if ctx.Err() != nil {
				return
			}
			h.logger.Warn("usage recovery failed, will retry", "node_id", r.nodeID, "err", err)
			h.mu.Lock()
			h.lost.recoveries = append(h.lost.recoveries, r)
			h.mu.Unlock()
		}
	}
}

func (h *Hub) recover(ctx context.Context, reader *node, r recovery) error {
	if reader == nil {
		return ErrNoNode
	}
	resp, err := h.nodeAPI(reader).RecoverUsage(ctx, api.RecoverRequest{Epoch: h.epoch, NodeID: r.nodeID, AfterSeq: r.afterSeq})
	var status *api.StatusError
	switch {
	case errors.As(err, &status) && status.Code == http.StatusNotImplemented:
		// The store keeps no journal: fall back to releasing the leases.
		resp.Increments = nil
	case err != nil:
		return err
	}
	h.mu.Lock()
	live, back := h.nodes[r.nodeID]
	if back {
		// The node registered again while its usage was being read: it
		// reports that usage itself (see nodeBackLocked, which found no
		// recovery to cancel and so left its accounts waiting for this
		// one). Its registration took in every crawler with an account
		// on it.
		for id := range live.leased {
			if c, ok := h.crawlers[id]; ok {
				c.leases.nodeBack(r.nodeID)
			}
		}
	}
	h.mu.Unlock()
	if back {
		h.logger.Info("lost node came back during its recovery, which is dropped", "node_id", r.nodeID)
		return nil
	}
	var incs []api.Increment
	for _, inc := range resp.Increments {
		if inc.NodeID == r.nodeID && inc.Seq > r.afterSeq && inc.Count > 0 {
			incs = append(incs, inc)
		}
	}
	var applied []api.Increment
	if len(incs) > 0 {
		if applied, err = h.cfg.Store.ApplyRecovered(ctx, incs); err != nil {
			return fmt.Errorf("cluster: apply recovered usage: %w", err)
		}
	}
	var total int64
	h.mu.Lock()
	h.applyNodeUsageLocked(r.nodeID, nil, applied)
	for id := range h.lost.leased[r.nodeID] {
		if c, ok := h.crawlers[id]; ok {
			c.leases.recovered(r.nodeID)
		}
	}
	for _, inc := range applied {
		total += inc.Count
	}
	h.events.add("usage_recovered", fmt.Sprintf("node %s: %d comments stored but not reported, in %d increments, counted", short(r.nodeID), total, len(applied)))
	h.priorHeardLocked(r.nodeID, "read back from the store")
	_, back = h.nodes[r.nodeID]
	h.mu.Unlock()
	h.metrics.usageRecovered.Add(float64(total))
	h.logger.Info("usage recovered", "node_id", r.nodeID, "comments", total, "increments", len(applied), "read_by", reader.id)
	if !back {
		if err := h.cfg.Store.ForgetNode(ctx, r.nodeID); err != nil {
			h.logger.Warn("unable to forget node", "node_id", r.nodeID, "err", err)
		}
	}
	return nil
}

// pruneLostLocked forgets, for lost nodes whose recovery is done, the
// crawlers that no longer hold an account on them, and the node once none
// does: accounts of a lost node settle as they expire (leaseBook.settle).
func (h *Hub) pruneLostLocked() {
	for nodeID, ids := range h.lost.leased {
		if slices.ContainsFunc(h.lost.recoveries, func(r recovery) bool { return r.nodeID == nodeID }) {
			continue
		}
		for id := range ids {
			if c, ok := h.crawlers[id]; !ok || !c.leases.onNode(nodeID) {
				delete(ids, id)
			}
		}
		if len(ids) == 0 {
			delete(h.lost.leased, nodeID)
		}
	}
}
