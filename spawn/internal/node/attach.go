package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
)

// attachLoop registers whenever the node is not attached.
func (n *Node) attachLoop(ctx context.Context) {
	retry := backoff.Policy{Min: registerRetryMin, Max: registerRetryMax}
	for {
		n.mu.Lock()
		attached := n.state == api.NodeAttached
		n.mu.Unlock()
		if !attached {
			n.metrics.registrations.Inc()
			if err := n.register(ctx); err != nil {
				n.metrics.registrationFailures.Inc()
				wait := retry.Next()
				n.logger.Warn("registration failed", "hub", n.cfg.HubURL, "err", err, "retry_in", wait)
				if !backoff.Sleep(ctx, wait) {
					return
				}
				continue
			}
			retry.Reset()
		}
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
	}
}

func (n *Node) register(ctx context.Context) error {
	n.mu.Lock()
	detached := n.detachReason
	n.mu.Unlock()
	req := api.RegisterRequest{NodeID: n.id, URL: n.cfg.AdvertiseURL, Sources: n.cfg.Sources.Offered(), FleetSources: n.cfg.Sources.FleetScoped(), Detached: detached, Clock: n.clock()}
	var resp api.RegisterResponse
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	if err := postJSON(rctx, n.cfg.HTTPClient, n.cfg.HubURL+api.PathRegister, n.cfg.NodeToken, req, &resp); err != nil {
		return fmt.Errorf("node: unable to register with %s: %w", n.cfg.HubURL, err)
	}
	if resp.Epoch == "" {
		return errors.New("node: hub answered registration without an epoch")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state = api.NodeAttached
	n.epoch = resp.Epoch
	n.detachReason = ""
	n.lastSeq = 0
	n.lastContact = time.Now()
	if resp.OrphanAfter > 0 {
		n.orphanAfter = time.Duration(resp.OrphanAfter)
	}
	if resp.DetachAfter > 0 {
		n.detachAfter = time.Duration(resp.DetachAfter)
	}
	n.logger.Info("registered", "node_id", n.id, "epoch", resp.Epoch, "url", n.cfg.AdvertiseURL)
	return nil
}

// detachLocked drops everything and makes the attach loop register again.
func (n *Node) detachLocked(reason string) {
	if n.state != api.NodeAttached {
		return
	}
	n.metrics.detaches.Inc()
	n.logger.Warn("detached", "reason", reason, "subscribers", len(n.subs))
	n.state = api.NodeDetached
	n.detachReason = reason
	n.epoch = ""
	n.dropAllLocked()
	select {
	case n.kick <- struct{}{}:
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
	if n.state == api.NodeAttached && now.Sub(n.lastContact) >= n.detachAfter {
		n.detachLocked("hub silent for " + n.detachAfter.String())
	}
	next := maxWait
	if n.state == api.NodeAttached {
		next = min(next, n.lastContact.Add(n.detachAfter).Sub(now))
	}
	for id, s := range n.subs {
		if now.Sub(s.lastPolled) >= n.orphanAfter {
			n.metrics.orphansDropped.Inc()
			n.logger.Warn("orphan subscriber stopped", "crawler_id", id, "unpolled_for", now.Sub(s.lastPolled).Round(time.Millisecond))
			n.removeLocked(id)
			continue
		}
		next = min(next, s.lastPolled.Add(n.orphanAfter).Sub(now))
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
	n.enforceDeadlinesLocked(time.Now(), n.detachAfter)
	if n.state != api.NodeAttached {
		return ErrNotAttached
	}
	if epoch != n.epoch {
		n.detachLocked("new hub epoch " + epoch)
		return ErrEpoch
	}
	if clock := n.clock(); validUntil > 0 && clock > validUntil {
		n.metrics.expiredRequests.Inc()
		n.logger.Warn("hub request refused: the hub stopped waiting for it", "seq", seq, "late_by", time.Duration(clock-validUntil)*time.Millisecond)
		return fmt.Errorf("%w: request %d expired %d ms ago", ErrStale, seq, clock-validUntil)
	}
	if seq <= n.lastSeq {
		// An old message arriving late proves nothing about the hub now:
		// it must not keep the node attached.
		return ErrStale
	}
	n.lastSeq = seq
	n.lastContact = time.Now()
	return nil
}
