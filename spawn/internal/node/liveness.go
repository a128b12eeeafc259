package node

import (
	"context"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Liveness. The hub polls; the node never polls the hub. A subscriber the
// hub has not polled for orphan_after is an orphan and stops; a node the hub
// has not contacted for detach_after detaches: it drops every subscriber and
// registers again (attach.go). Every hub request is checked here first: its
// epoch, its sequence number and whether the hub still waits for it.

// detachLocked drops everything and makes the attach loop register again.
func (n *Node) detachLocked(reason string) {
	if n.attach.state != api.NodeAttached {
		return
	}
	n.metrics.detaches.Inc()
	n.logger.Warn("detached", "reason", reason, "subscribers", len(n.table.subs))
	n.attach.state = api.NodeDetached
	n.attach.detachReason = reason
	// From here on, nothing counted so far may reach the store (fence.go):
	// the hub that granted it either reads this node's usage back once
	// it can no longer write, or is gone, and its successor knows nothing
	// of what it granted.
	n.attach.fencedAt = time.Now()
	n.attach.epoch = ""
	n.dropAllLocked()
	n.delta.Reset()
	select {
	case n.attach.kick <- struct{}{}:
	default:
	}
}

// watch stops orphans and detaches a node the hub no longer contacts. It
// wakes at the earliest deadline, so nothing runs unsupervised past
// orphan_after by more than a scheduling delay.
func (n *Node) watch(ctx context.Context) {
	maxWait := n.cfg.WatchEvery
	if maxWait <= 0 {
		maxWait = n.cfg.OrphanAfter / 4
	}
	t := time.NewTimer(maxWait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(n.enforceDeadlines(time.Now(), maxWait))
	}
}

// enforceDeadlines drops orphans and detaches when the hub has been silent
// too long, and returns how long until the next deadline.
func (n *Node) enforceDeadlines(now time.Time, maxWait time.Duration) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.enforceDeadlinesLocked(now, maxWait)
}

// enforceDeadlinesLocked is enforceDeadlines for a caller holding n.mu.
func (n *Node) enforceDeadlinesLocked(now time.Time, maxWait time.Duration) time.Duration {
	if n.attach.state == api.NodeAttached && now.Sub(n.attach.lastContact) >= n.attach.detachAfter {
		n.detachLocked("hub silent for " + n.attach.detachAfter.String())
	}
	next := maxWait
	if n.attach.state == api.NodeAttached {
		next = min(next, n.attach.lastContact.Add(n.attach.detachAfter).Sub(now))
	}
	for id, s := range n.table.subs {
		if now.Sub(s.lastPolled) >= n.attach.orphanAfter {
			n.metrics.orphansDropped.Inc()
			n.logger.Warn("orphan subscriber stopped", "crawler_id", id, "unpolled_for", now.Sub(s.lastPolled).Round(time.Millisecond))
			n.removeLocked(id)
			continue
		}
		next = min(next, s.lastPolled.Add(n.attach.orphanAfter).Sub(now))
	}
	return max(next, time.Millisecond)
}

// checkHubLocked validates a hub request: its epoch, its sequence number and
// its validity (validUntil on the node's clock, 0 for none). A fresh request
// advances the sequence and counts as contact; a stale or expired one is
// reported with ErrStale and changes nothing.
//
// A request must prove the hub is alive now. A spawn frozen (SIGSTOP, a
// stalled VM) past its deadlines finds, when it resumes, polls the hub sent
// during the freeze and has long given up on, waiting in its socket
// buffers; their sequence numbers are higher than any it has seen. Two
// checks keep them from reviving it:
//
//   - The deadlines are enforced first: a node without contact past
//     detach_after detaches, and subscribers unpolled past orphan_after
//     stop, before any request can refresh them, whichever of the watchdog
//     and the request handlers the scheduler runs first after the freeze.
//   - A request the hub stopped waiting for is refused. The hub cannot
//     know the spawn's clock exactly, but it holds the spawn's clock from
//     its last answer (or registration) and when that answer arrived, which
//     is after the spawn read its clock; so that clock plus the time since
//     is never later than the spawn's clock now, and adding the hub's
//     request timeout gives a bound on the spawn's clock that expires no
//     later than the hub gives up (see api.PollRequest.ValidUntil). Only
//     the clocks' rates must agree, not their readings. Timing a request
//     from its connection's accept instead would not do: the hub reuses
//     connections, so an accept time says nothing about a later request.
func (n *Node) checkHubLocked(epoch string, seq uint64, validUntil int64) error {
	n.enforceDeadlinesLocked(time.Now(), n.attach.detachAfter)
	if n.attach.state != api.NodeAttached {
		return ErrNotAttached
	}
	if epoch != n.attach.epoch {
		term := api.EpochTerm(epoch)
		if term < n.attach.maxTerm {
			// A deposed leader: it changes nothing here, and proves
			// nothing about the leader this node follows.
			return fmt.Errorf("%w: %w: request of term %d, term %d accepted", ErrEpoch, ErrDeposed, term, n.attach.maxTerm)
		}
		n.attach.maxTerm, n.attach.maxTermAt = term, time.Now()
		n.attach.leader = "" // the new leader is found by registering
		n.detachLocked("new hub epoch " + epoch)
		return ErrEpoch
	}
	if clock := n.clock(); validUntil > 0 && clock > validUntil {
		n.metrics.expiredRequests.Inc()
		n.logger.Warn("hub request refused: the hub stopped waiting for it", "seq", seq, "late_by", time.Duration(clock-validUntil)*time.Millisecond)
		return fmt.Errorf("%w: request %d expired %d ms ago", ErrStale, seq, clock-validUntil)
	}
	if seq <= n.attach.lastSeq {
		// An old message arriving late proves nothing about the hub now:
		// it must not keep the node attached.
		return ErrStale
	}
	n.attach.lastSeq = seq
	n.attach.lastContact = time.Now()
	n.attach.maxTermAt = n.attach.lastContact
	n.acceptTermLocked(api.EpochTerm(epoch))
	return nil
}
