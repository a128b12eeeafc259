package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Draining: a spawn about to go away (SIGTERM from an autoscaler's scale-in,
// a spot interruption, systemctl stop) hands its crawlers over before it
// stops, so none of them is ever unassigned. It tells the hub at once; the
// hub starts each crawler on another spawn, with its cursor, and drops it
// here only once it runs there (make before break). The spawn then writes
// what it counted, waits until the hub has acknowledged that usage, tells
// the hub it is done, and stops. `bwctl node drain` does the same through
// the hub's polls, without stopping the process.

// Timings of a drain.
const (
	// drainCheckEvery is how often a draining node looks whether it is
	// done.
	drainCheckEvery = 50 * time.Millisecond
	// drainTellRetry is the wait between attempts to tell the hub.
	drainTellRetry = 250 * time.Millisecond
	// drainDoneTimeout bounds the last message, that the node is done.
	drainDoneTimeout = 2 * time.Second
)

// drainState is whether the node drains and since when. Guarded by
// Node.mu.
type drainState struct {
	active bool
	start  time.Time
}

// ErrDrainIncomplete is returned by Drain when its context ended before
// the node had handed everything over.
var ErrDrainIncomplete = errors.New("node: drain incomplete")

// Draining reports whether the node drains.
func (n *Node) Draining() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.drain.active
}

// startDrainLocked marks the node draining; why is logged.
func (n *Node) startDrainLocked(why string) {
	if n.drain.active {
		return
	}
	n.drain.active = true
	n.drain.start = time.Now()
	n.metrics.draining.Set(1)
	n.logger.Info("draining: handing every crawler to other spawns", "why", why, "subscribers", len(n.table.subs))
}

// drainedLocked reports whether a draining node has nothing left to hand
// over: no subscriber, no comment on its way to the store, no usage the
// hub has not acknowledged. A node no longer attached has dropped its
// subscribers and may no longer write: what it did not report is read back
// from the store by the hub.
func (n *Node) drainedLocked() bool {
	if len(n.table.subs) > 0 || len(n.table.sources) > 0 {
		return false
	}
	if n.attach.state != api.NodeAttached {
		return true
	}
	return len(n.usage.pending) == 0 && len(n.usage.incs) == 0 && n.writer.queued() == 0
}

// Drain hands the node's crawlers to other spawns through the hub and
// returns once it runs none and the hub has acknowledged all its usage,
// having told the hub it is done. It returns ErrDrainIncomplete if ctx ends
// first (the caller's drain budget); the node then stops as a lost one
// would, and the hub reads its unreported usage back from the store.
func (n *Node) Drain(ctx context.Context) error {
	n.mu.Lock()
	n.startDrainLocked("stopping")
	start := n.drain.start
	n.mu.Unlock()
	told := false
	var lastTry time.Time
	t := time.NewTicker(drainCheckEvery)
	defer t.Stop()
	for {
		n.mu.Lock()
		done := n.drainedLocked()
		attached := n.attach.state == api.NodeAttached
		left := len(n.table.subs)
		n.mu.Unlock()
		if done {
			break
		}
		// The hub learns it from the poll answers too; telling it saves
		// up to a poll interval.
		if !told && attached && time.Since(lastTry) >= drainTellRetry {
			lastTry = time.Now()
			if err := n.tellHub(ctx, api.DrainRequest{NodeID: n.id}); err != nil {
				n.logger.Warn("unable to tell the hub about the drain", "err", err)
			} else {
				told = true
			}
		}
		select {
		case <-ctx.Done():
			n.logger.Error("drain incomplete: stopping anyway", "subscribers", left, "took", time.Since(start).Round(time.Millisecond))
			return fmt.Errorf("%w: %d subscribers still here after %s", ErrDrainIncomplete, left, time.Since(start).Round(time.Millisecond))
		case <-t.C:
		}
	}
	took := time.Since(start)
	n.metrics.drainSeconds.Set(took.Seconds())
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainDoneTimeout)
	defer cancel()
	n.mu.Lock()
	attached := n.attach.state == api.NodeAttached
	n.mu.Unlock()
	if attached {
		if err := n.tellHub(dctx, api.DrainRequest{NodeID: n.id, Done: true}); err != nil {
			n.logger.Warn("unable to tell the hub the drain is done: it will find the node gone", "err", err)
		}
	}
	n.logger.Info("drained: every crawler handed over, all usage acknowledged", "took", took.Round(time.Millisecond))
	return nil
}

// tellHub sends a drain message to the hub the node follows; a standby's
// redirect to the leader is followed once.
func (n *Node) tellHub(ctx context.Context, req api.DrainRequest) error {
	n.mu.Lock()
	hub := n.attach.followed
	n.mu.Unlock()
	if hub == "" {
		return errors.New("node: no hub followed yet")
	}
	client := *n.cfg.HTTPClient
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for range 2 {
		rctx, cancel := context.WithTimeout(ctx, registerTimeout)
		err := postJSON(rctx, &client, hub+api.PathDrain, n.cfg.NodeToken, req, nil)
		cancel()
		var status *api.StatusError
		if errors.As(err, &status) && status.Code == http.StatusTemporaryRedirect {
			if hub = leaderFromMessage(status.Message); hub != "" {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("node: unable to tell the hub about the drain: %w", err)
		}
		return nil
	}
	return errors.New("node: the hub kept redirecting the drain message")
}
