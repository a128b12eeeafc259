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
	req := api.RegisterRequest{NodeID: n.id, URL: n.cfg.AdvertiseURL, Sources: n.cfg.Sources.Offered(), Detached: detached, Clock: n.clock()}
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

// checkHubLocked validates the epoch and sequence of a hub request. A fresh
// request advances the sequence; a stale one is reported with ErrStale.
func (n *Node) checkHubLocked(epoch string, seq uint64) error {
	if n.state != api.NodeAttached {
		return ErrNotAttached
	}
	if epoch != n.epoch {
		n.detachLocked("new hub epoch " + epoch)
		return ErrEpoch
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
