package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// ErrInvalid marks a bad request from a spawn or an operator.
var ErrInvalid = errors.New("cluster: invalid")

// maxAnswerBytes caps what the hub reads from one spawn answer.
const maxAnswerBytes = 16 << 20

// Failure detection. A failed poll is followed at once by quick probes
// instead of the next poll rounds, so a killed spawn (connection refused) is
// removed within a poll interval and a few probe intervals, and one that
// stopped answering within about two poll timeouts.
const (
	// DefaultProbeInterval is the pause before each probe.
	DefaultProbeInterval = 200 * time.Millisecond
	// probeTimeout bounds one probe (GET /healthz, which a live spawn
	// answers without touching its lock or its store).
	probeTimeout = time.Second
)

func (h *Hub) pollLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.PollAll(ctx)
		h.chasePrior(ctx, time.Now())
		h.runRecoveries(ctx)
	}
}

// PollAll polls every node once, concurrently. A node whose previous request
// is still running is skipped this round.
func (h *Hub) PollAll(ctx context.Context) {
	h.mu.Lock()
	nodes := make([]*node, 0, len(h.nodes))
	for _, n := range h.nodes {
		nodes = append(nodes, n)
	}
	h.mu.Unlock()
	h.pollNodes(ctx, nodes)
}

// pollNodes polls the given nodes once, concurrently, skipping any whose
// previous request is still running.
func (h *Hub) pollNodes(ctx context.Context, nodes []*node) {
	sem := make(chan struct{}, sendConcurrency)
	done := make(chan struct{}, len(nodes))
	for _, n := range nodes {
		if !n.opMu.TryLock() {
			done <- struct{}{}
			continue
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; done <- struct{}{} }()
			defer n.opMu.Unlock()
			h.pollLocked(ctx, n)
		}()
	}
	for range nodes {
		<-done
	}
}

// pollLocked polls one node; the caller holds n.opMu.
func (h *Hub) pollLocked(ctx context.Context, n *node) {
	h.mu.Lock()
	if n.removed {
		h.mu.Unlock()
		return
	}
	req := h.pollRequestLocked(n, time.Now())
	resets := n.baseResets
	h.mu.Unlock()
	h.addRetractions(ctx, n, &req)

	start := time.Now()
	resp, err := h.nodeAPI(n).Poll(ctx, req)
	received := time.Now()
	h.metrics.pollSeconds.Observe(received.Sub(start).Seconds())
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		h.pollFailed(ctx, n, err)
		return
	}
	h.metrics.polls.Inc()
	h.takeRetractions(ctx, n, resp)
	h.answer(ctx, n, resp, len(req.Acks), received, resets)
}

// pollRequestLocked builds the node's next poll: the next sequence number of
// the epoch, the node's exact subscriber set, this round's leases and the
// increments applied since the last answer. The caller holds n.opMu and
// h.mu.
func (h *Hub) pollRequestLocked(n *node, now time.Time) api.PollRequest {
	n.seq++
	req := api.PollRequest{Epoch: h.epoch, NodeID: n.id, Seq: n.seq, Acks: n.acks, StatusBase: n.statusBase, Drain: n.drain.active}
	req.Subscribers = make([]api.SubscriberRef, 0, len(n.want)+len(n.drain.keep))
	for id, c := range n.want {
		req.Subscribers = append(req.Subscribers, api.SubscriberRef{CrawlerID: id, Version: c.row.Version})
	}
	// The crawlers a draining node keeps until their new node runs them
	// are polled with their whole status, for their lease accounts.
	for id, c := range n.drain.keep {
		if _, wanted := n.want[id]; !wanted {
			req.Subscribers = append(req.Subscribers, api.SubscriberRef{CrawlerID: id, Version: c.sentVersion})
		}
	}
	if len(n.drain.keep) > 0 {
		req.StatusBase = 0
	}
	req.Leases = h.grantLocked(n, now)
	req.ValidUntil = n.validUntilLocked(now, h.nodeOpts.Timeouts.Poll)
	return req
}

// validUntilLocked bounds, on the spawn's clock, a request sent now that
// the hub waits timeout for (api.PollRequest.ValidUntil). The spawn read
// the anchor clock before the hub received it at anchorAt, so the anchor
// plus the time since never runs ahead of the spawn's clock: the bound
// expires no later than the hub gives up. The caller holds h.mu.
func (n *node) validUntilLocked(now time.Time, timeout time.Duration) int64 {
	if timeout <= 0 {
		return 0
	}
	return n.anchorClock + now.Sub(n.anchorAt).Milliseconds() + timeout.Milliseconds()
}

// validUntil is validUntilLocked for a request sent now by a caller not
// holding h.mu.
func (h *Hub) validUntil(n *node, timeout time.Duration) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return n.validUntilLocked(time.Now(), timeout)
}

// pollAnswer is a node's answer to one poll with what SQL made of its
// usage.
type pollAnswer struct {
	resp     api.PollResponse
	applied  []api.Increment // the increments SQL had not seen before
	applyErr error           // applying failed: nothing is acknowledged
	sentAcks int             // acknowledgements the poll carried
	received time.Time       // when the answer arrived
	// resets is the node's baseResets when the poll was built: a reset
	// since means the answer may not become the next poll's base.
	resets uint64
}

// answer applies a node's answer to a poll that carried sentAcks
// acknowledgements: its usage in one SQL transaction, outside the hub lock,
// then everything else under it.
func (h *Hub) answer(ctx context.Context, n *node, resp api.PollResponse, sentAcks int, received time.Time, resets uint64) {
	a := h.applyAnswer(ctx, n, resp, sentAcks, received)
	a.resets = resets
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answerLocked(n, a, time.Now())
}

// answerLocked takes in a poll answer whose usage SQL has seen: the newly
// applied usage, acknowledgements, lease accounts, subscriber states, and
// a resend of what the node reports missing.
func (h *Hub) answerLocked(n *node, a pollAnswer, now time.Time) {
	resp := a.resp
	h.takeUsageLocked(n, a)
	if h.grants.prior.unheard[n.id] && h.answeredAllLocked(a) {
		h.priorHeardLocked(n.id, "reported in a poll answer")
	}
	n.failures = 0
	n.lastPoll = now
	// The spawn read its clock before this answer arrived, so anchoring on
	// the arrival time keeps every lease's hub-side expiry later than its
	// spawn-side one, whatever the network delay.
	n.anchorClock, n.anchorAt = resp.Clock, a.received
	n.store = resp.Store
	if !resp.DataSourcesUnchanged {
		n.dataSources = resp.DataSources
	}
	n.pending = resp.Pending
	resend := false
	for id := range n.leased {
		if c, ok := h.crawlers[id]; ok {
			c.leases.retire(n.id)
		}
	}
	if resp.Draining && !n.drain.active && h.nodes[n.id] == n {
		h.drainLocked(n, "it said so")
	}
	for _, st := range resp.Subscribers {
		c, ok := h.crawlers[st.CrawlerID]
		if !ok {
			continue
		}
		if c.leaving == n && c.nodeID() != n.id {
			h.takeLeavingStatusLocked(n, c, st, resp.Clock)
			continue
		}
		if c.nodeID() != n.id {
			continue
		}
		resend = h.takeStatusLocked(n, c, st, resp) || resend
	}
	if resp.Partial {
		// What the answer leaves out is as the node last reported it.
		for _, c := range n.want {
			if c.heardFrom == n && c.heardIn != resp.Answer {
				resend = h.takeStatusLocked(n, c, c.heard.status(c.row.ID), resp) || resend
			}
		}
	}
	if a.resets == n.baseResets {
		n.statusBase = resp.Answer
	}
	for id := range n.leased {
		c, ok := h.crawlers[id]
		if !ok {
			delete(n.leased, id)
			continue
		}
		if !c.leases.settle(n.id, resp.Pending, !resp.MoreIncrements, id, now) {
			delete(n.leased, id)
		}
	}
	if live, ok := h.nodes[n.id]; ok && live != n {
		// The node registered again while this poll ran: the accounts
		// this answer touched settle on the answers of its new
		// registration.
		for id := range n.leased {
			live.leased[id] = true
		}
	}
	if resend {
		h.requestReloadLocked(false)
	}
}

// takeStatusLocked takes in one subscriber status of a node's answer, told
// or left out as unchanged, and reports whether the subscriber must be
// sent again.
func (h *Hub) takeStatusLocked(n *node, c *crawler, st api.SubscriberStatus, resp api.PollResponse) bool {
	if c.limited {
		c.leases.observe(n.id, st, resp.Clock)
		n.leased[c.row.ID] = true
	}
	if st.State == api.StateMissing {
		// The spawn does not run it (lost send, orphaned, restarted):
		// send it again.
		if c.sentID() == n.id && c.sentVersion == c.row.Version {
			h.sentToLocked(c, nil)
		}
		c.needSend = true
		c.heardFrom = nil
		return true
	}
	c.heard = heardStatus{state: knownState(st.State), err: st.Error, rate: st.RatePerSec,
		version: st.Version, instance: st.Instance, reserved: st.Reserved, live: st.Live}
	c.heardFrom, c.heardIn = n, resp.Answer
	c.state, c.err, c.rate = c.heard.state, st.Error, st.RatePerSec
	h.runningElsewhereLocked(c, c.state, st.Live)
	return false
}

// status is the remembered status as a poll answer would carry it.
func (s heardStatus) status(crawlerID int64) api.SubscriberStatus {
	return api.SubscriberStatus{CrawlerID: crawlerID, Version: s.version, State: s.state, Error: s.err,
		RatePerSec: s.rate, Instance: s.instance, Reserved: s.reserved, Live: s.live}
}

// knownState returns the constant equal to a state read off the wire, so a
// million crawlers do not each keep their own copy of "running".
func knownState(s string) string {
	for _, k := range [...]string{api.StateRunning, api.StateDegraded, api.StateQuotaWait, api.StateFailed, api.StatePending,
		api.StateLimitReached, api.StateDisabled, api.StateMissing} {
		if s == k {
			return k
		}
	}
	return s
}

func (h *Hub) pollFailed(ctx context.Context, n *node, err error) {
	h.metrics.pollFailures.Inc()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failedLocked(n, "polls", err)
	if !n.removed && !n.probing {
		n.probing = true
		h.run.wg.Add(1)
		go func() { defer h.run.wg.Done(); h.probe(ctx, n) }()
	}
}

// failedLocked counts one failed contact with a node and removes the node
// when too many came in a row.
func (h *Hub) failedLocked(n *node, what string, err error) {
	if n.removed {
		return
	}
	n.failures++
	h.logger.Warn("node contact failed", "node_id", n.id, "what", what, "failures", n.failures, "err", err)
	if n.failures >= h.cfg.NodeFailures {
		h.removeNodeLocked(n, fmt.Sprintf("%d contacts failed, last %s: %v", n.failures, what, err))
		h.requestReloadLocked(true)
	}
}

// probe checks a node whose poll failed every probe interval until it
// answers, a poll succeeds, or the failures remove it. Each failed probe
// counts like a failed poll; an answer leaves the count to the next polls,
// which still must succeed to clear it.
func (h *Hub) probe(ctx context.Context, n *node) {
	defer func() {
		h.mu.Lock()
		n.probing = false
		h.mu.Unlock()
	}()
	for {
		t := time.NewTimer(h.cfg.ProbeInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		h.mu.Lock()
		done := n.removed || n.failures == 0
		h.mu.Unlock()
		if done {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := h.nodeAPI(n).Probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			return
		}
		h.metrics.pollFailures.Inc()
		h.mu.Lock()
		if n.failures == 0 { // a poll succeeded meanwhile
			h.mu.Unlock()
			return
		}
		h.failedLocked(n, "probe", err)
		removed := n.removed
		h.mu.Unlock()
		if removed {
			return
		}
	}
}

// nodeAPI is the client of one node's API.
func (h *Hub) nodeAPI(n *node) *api.NodeClient { return api.NewNodeClient(n.url, h.nodeOpts) }

func validNodeURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: url must be an http(s) URL the hub can reach, got %q", ErrInvalid, raw)
	}
	return nil
}
