package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// reloadState is what serialises reloads and what the next one is asked
// for.
type reloadState struct {
	// mu lets one reload run at a time, and guards view.
	mu sync.Mutex
	// view is how far SQL was read (sqlread.go).
	view sqlView
	// wake says a reload is wanted; hard (guarded by Hub.mu) that the
	// wanted one is hard.
	wake chan struct{}
	hard bool
	// resendDue (guarded by Hub.mu) says a send failed since the last
	// reload began.
	resendDue bool
}

// RequestReload asks for a reload soon; several requests coalesce, and a
// hard one wins over soft ones.
func (h *Hub) RequestReload(hard bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requestReloadLocked(hard)
}

// requestReloadLocked is RequestReload for a caller holding h.mu.
func (h *Hub) requestReloadLocked(hard bool) {
	h.reload.hard = h.reload.hard || hard
	select {
	case h.reload.wake <- struct{}{}:
	default:
	}
}

func (h *Hub) reloadLoop(ctx context.Context) {
	retry := time.NewTicker(h.cfg.PollInterval)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.reload.wake:
		case <-retry.C:
			// Re-send what failed, even when no event asked for it,
			// and read all of SQL again when that is due.
			if !h.takeResendDue() && !h.fullReadDue() {
				continue
			}
		}
		h.mu.Lock()
		hard := h.reload.hard
		h.reload.hard = false
		h.mu.Unlock()
		if _, err := h.Reload(ctx, hard); err != nil && ctx.Err() == nil {
			h.logger.Error("reload failed", "hard", hard, "err", err)
		}
	}
}

// takeResendDue reports, and clears, whether a send failed since the last
// reload began: the next tick re-sends it.
func (h *Hub) takeResendDue() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	due := h.reload.resendDue
	h.reload.resendDue = false
	return due
}

// plan is what one reload sends to one node.
type plan struct {
	n       *node
	upserts []api.SubscriberSpec
	removes []int64
}

// Reload reads what changed in crawlers and users since its previous read
// of SQL (everything, on the first reload and every fullReadEvery), routes
// every active crawler over the live nodes and sends each node only what
// changed for it: new, moved or reconfigured subscribers, and removals.
// Subscribers that stay put are not touched, in either kind. A hard reload
// (a node joined or was lost, or an operator asked) then polls the nodes it
// sent to at once, so each one gets its exact subscriber set and reports
// what it does not run, instead of waiting for the next poll tick.
func (h *Hub) Reload(ctx context.Context, hard bool) (api.ReloadResponse, error) {
	h.reload.mu.Lock()
	defer h.reload.mu.Unlock()
	kind := "soft"
	if hard {
		kind = "hard"
	}
	start := time.Now()
	read, err := h.readSQL(ctx, start)
	if err != nil {
		return api.ReloadResponse{}, fmt.Errorf("cluster: reload: %w", err)
	}
	readTook := time.Since(start)

	resp := api.ReloadResponse{Kind: kind}
	h.mu.Lock()
	h.takeInLocked(read, start)
	plans := h.planLocked(hard, &resp)
	if hard || resp.Moved > 0 || resp.Removed > 0 || resp.Assigned > 0 {
		h.events.add("reload_"+kind, fmt.Sprintf("%s reload: %d sent, %d moved, %d removed, %d failed", kind, resp.Assigned, resp.Moved, resp.Removed, resp.Failed))
	}
	h.mu.Unlock()

	resp.Failed = h.execute(ctx, plans)
	if hard {
		// The nodes that gained or lost subscribers are polled at once,
		// so each confirms its exact set and reports what it does not
		// run without waiting for the next round; the others have
		// nothing new to say.
		h.pollNodes(ctx, planned(plans))
	}
	h.metrics.reloads.WithLabelValues(kind).Inc()
	h.metrics.moves.Add(float64(resp.Moved))
	h.logger.Info("reload", "kind", kind, "read", read.kind(), "rows", len(read.crawlers)+len(read.users)+len(read.deleted), "read_took", readTook.Round(time.Millisecond), "sent", resp.Assigned, "moved", resp.Moved, "removed", resp.Removed, "failed", resp.Failed, "took", time.Since(start).Round(time.Millisecond))
	return resp, nil
}

// syncLocked brings the in-memory crawlers and users in line with all of
// SQL (a full read).
func (h *Hub) syncLocked(rows []sqlstore.Crawler, users []sqlstore.User) {
	seenUser := make(map[int64]bool, len(users))
	for _, u := range users {
		seenUser[u.ID] = true
		h.upsertUserLocked(u)
	}
	for id := range h.users {
		if !seenUser[id] {
			delete(h.users, id)
		}
	}
	seen := make(map[int64]bool, len(rows))
	for _, r := range rows {
		seen[r.ID] = true
		h.upsertCrawlerLocked(r)
	}
	for id, c := range h.crawlers {
		if !seen[id] {
			h.wantLocked(c, nil)
			delete(h.crawlers, id)
		}
	}
	h.byUser = make(map[int64][]*crawler, len(h.users))
	for _, c := range h.crawlers {
		h.respecLocked(c)
		h.byUser[c.row.UserID] = append(h.byUser[c.row.UserID], c)
	}
}

func laterCursor(a, b *time.Time) *time.Time {
	if a == nil {
		return b
	}
	if b == nil || a.After(*b) {
		return a
	}
	return b
}

// respecLocked derives what the hub keeps of a crawler's subscriber after
// its row or its user's limit changed: whether it counts against leases.
// The spec itself is built when sent (specLocked): a million crawlers keep
// no copy of what their rows say.
func (h *Hub) respecLocked(c *crawler) {
	c.limited = c.row.CommentLimit > 0
	if u, ok := h.users[c.row.UserID]; ok && u.row.CommentLimit > 0 {
		c.limited = true
	}
}

// specLocked derives the subscriber a spawn runs for a crawler, with the
// newest cursor the hub knows.
func (h *Hub) specLocked(c *crawler) api.SubscriberSpec {
	r := c.row
	spec := api.SubscriberSpec{
		CrawlerID: r.ID, UserID: r.UserID, Version: r.Version, Source: r.Source,
		Query: r.Query, Keywords: r.Keywords, QueryUUID: r.QueryUUID,
		Limited: r.CommentLimit > 0,
	}
	if u, ok := h.users[r.UserID]; ok && u.row.CommentLimit > 0 {
		spec.Limited = true
	}
	spec.Retention = api.Duration(h.retentionLocked(r))
	if r.CursorAt != nil || r.CursorPos > 0 || len(r.CursorIDs) > 0 {
		spec.Cursor = &api.Cursor{Position: r.CursorPos}
		if r.CursorAt != nil {
			spec.Cursor.PublishedAt = *r.CursorAt
		}
		if len(r.CursorIDs) > 0 {
			// Shared, never changed in place (sqlstore.SourceIDs).
			spec.Cursor.Sources = r.CursorIDs
		}
		if now := time.Now(); sqlstore.FutureCursor(r.CursorPos, now) {
			// Saved before cursors were bounded: read from now (the
			// crawler says so, futureCursorNote) until a real position
			// replaces it.
			spec.Cursor.Position = now.UnixMicro()
		}
	}
	switch cursor := h.sourceInfo(r.Source).Cursor; {
	case r.CreatedAt.IsZero():
	case cursor == api.CursorLog && r.CursorPos == 0:
		// A crawler of a replayable log that has counted nothing yet
		// reads from its creation: a subscriber moved before its first
		// count was reported (its node died) still misses nothing.
		if spec.Cursor == nil {
			spec.Cursor = &api.Cursor{}
		}
		spec.Cursor.Position = r.CreatedAt.UnixMicro()
	case cursor == api.CursorHistory && spec.Cursor == nil:
		// Likewise for the kinds whose gaps are filled from history
		// (X recent search, Mastodon timelines): from its creation.
		spec.Cursor = &api.Cursor{PublishedAt: r.CreatedAt.UTC()}
	}
	return spec
}

// userStoppedLocked says whether a user has reached its limit, which stops
// every crawler of the user.
func (h *Hub) userStoppedLocked(userID int64) bool {
	u, ok := h.users[userID]
	return ok && u.row.CommentLimit > 0 && u.row.Usage >= u.row.CommentLimit
}

// crawlerActive says whether a crawler should run, and if not, in which
// state it rests; userStopped is userStoppedLocked of its user.
func crawlerActive(c *crawler, userStopped bool) (bool, string) {
	switch {
	case !c.row.Enabled:
		return false, api.StateDisabled
	case c.row.LimitReached, userStopped:
		return false, api.StateLimitReached
	}
	return true, ""
}

// planLocked routes every crawler and builds the per-node requests. Each
// node's wanted set is kept up to date as crawlers move (wantLocked), not
// rebuilt, so a crawler that stays put costs a route lookup and a few
// comparisons: at a million crawlers a reload with nothing to move is a
// pass over memory, not a rebuild of ten thousand sets.
func (h *Hub) planLocked(hard bool, resp *api.ReloadResponse) []*plan {
	ids := h.sortedNodeIDsLocked()
	routes := h.routeTablesLocked(ids)
	why := unrouted{anyNode: len(ids) > 0, draining: h.drainingOffersLocked(ids)}
	plans := map[*node]*plan{}
	// By user: a user's limit is looked up once, not once per crawler.
	for userID, list := range h.byUser {
		stopped := h.userStoppedLocked(userID)
		for _, c := range list {
			h.routeLocked(c, stopped, why, routes, plans, resp)
		}
	}
	out := make([]*plan, 0, len(plans))
	for _, p := range plans {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *plan) int { return strings.Compare(a.n.id, b.n.id) })
	return out
}

// planOf is the plan of a node, made on first use.
func planOf(plans map[*node]*plan, n *node) *plan {
	p, ok := plans[n]
	if !ok {
		p = &plan{n: n}
		plans[n] = p
	}
	return p
}

// routeLocked routes one crawler and adds what moves to the plans.
func (h *Hub) routeLocked(c *crawler, userStopped bool, why unrouted, routes map[string]RouteTable, plans map[*node]*plan, resp *api.ReloadResponse) {
	id := c.row.ID
	active, rest := crawlerActive(c, userStopped)
	prev := c.nodeID()
	if !active {
		c.state, c.err = rest, ""
		h.wantLocked(c, nil)
		if prev != "" {
			if pn, ok := h.nodes[prev]; ok {
				p := planOf(plans, pn)
				p.removes = append(p.removes, id)
			}
			resp.Removed++
		}
		return
	}
	q, err := c.queryUUID()
	if err != nil {
		c.state, c.err = api.StateFailed, "stored query uuid is invalid: "+err.Error()
		h.wantLocked(c, nil)
		return
	}
	var target string
	if route, ok := routes[c.row.Source]; ok {
		target = route(q)
	}
	if target == "" && c.node != nil && c.node.drain.active && !c.node.removed {
		// No other spawn can run it: it stays on the draining one.
		return
	}
	if target == "" {
		c.state, c.err = api.StatePending, why.reason(c.row.Source, h.sourceInfo(c.row.Source).Unoffered)
		h.wantLocked(c, nil)
		return
	}
	tn := h.nodes[target]
	from := c.node
	h.wantLocked(c, tn)
	makeBeforeBreak := false
	if prev != "" && prev != target {
		resp.Moved++
		if pn, ok := h.nodes[prev]; ok {
			if pn.drain.active && pn == from && c.sentTo == pn {
				// Leaving a draining node: it runs the crawler until the
				// new node does (drain.go).
				h.leaveLocked(c, pn)
				makeBeforeBreak = true
			} else {
				p := planOf(plans, pn)
				p.removes = append(p.removes, id)
			}
		}
	}
	if c.leaving == tn {
		h.releaseLocked(c) // routed back to the node it was leaving
	}
	// A subscriber the node already runs in this version is left
	// alone, in a hard reload too: only what moved or changed travels.
	// The node's exact set goes with every poll, which is what drops a
	// subscriber the hub no longer routes there.
	if c.sentID() != target || c.sentVersion != c.row.Version || c.needSend {
		p := planOf(plans, tn)
		p.upserts = append(p.upserts, h.specLocked(c))
		resp.Assigned++
		if !makeBeforeBreak && c.leaving == nil {
			// A crawler leaving a draining node still runs there: it
			// is not pending.
			c.state, c.err = api.StatePending, ""
		}
	}
}

// unrouted says why a crawler of a source kind that no live node can take
// waits: no node registered, every node offering the kind draining (counted
// by kind in draining), or none offering it.
type unrouted struct {
	anyNode  bool
	draining map[string]int
}

// reason is the error a pending crawler of the kind shows; unoffered is
// what the kind's declaration says it takes to offer it.
func (u unrouted) reason(kind, unoffered string) string {
	switch k := u.draining[kind]; {
	case !u.anyNode:
		return "no spawn node is registered"
	case k == 1:
		return fmt.Sprintf("no spawn node can take source %s: the one spawn offering it is draining", kind)
	case k > 1:
		return fmt.Sprintf("no spawn node can take source %s: all %d spawns offering it are draining", kind, k)
	}
	msg := fmt.Sprintf("no spawn node offers source %s", kind)
	if unoffered != "" {
		msg += " (" + unoffered + ")"
	}
	return msg
}

// wantLocked makes n (nil: none) the one node whose wanted set holds the
// crawler. A node gaining a crawler it has not reported on is asked for
// every status on its next poll, so the hub hears how it runs there.
func (h *Hub) wantLocked(c *crawler, n *node) {
	if c.node == n {
		return
	}
	if c.node != nil {
		delete(c.node.want, c.row.ID)
	}
	c.node = n
	if n == nil {
		return
	}
	n.want[c.row.ID] = c
	if c.heardFrom != n {
		n.askAllLocked()
	}
}

// planned lists the nodes of plans.
func planned(plans []*plan) []*node {
	out := make([]*node, len(plans))
	for i, p := range plans {
		out[i] = p.n
	}
	return out
}

// execute sends the plans, one goroutine per node (bounded), and reports how
// many subscribers could not be sent. Failures are re-sent by the next soft
// reload, which routing sends to the same node while it lives.
func (h *Hub) execute(ctx context.Context, plans []*plan) int {
	var g errgroup.Group
	g.SetLimit(sendConcurrency)
	var mu sync.Mutex
	failed := 0
	for _, p := range plans {
		g.Go(func() error {
			f := h.send(ctx, p)
			mu.Lock()
			failed += f
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return failed
}

func (h *Hub) send(ctx context.Context, p *plan) int {
	n := p.n
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if len(p.removes) > 0 {
		n.seq++
		req := api.RemoveRequest{Epoch: h.epoch, Seq: n.seq, CrawlerIDs: p.removes, ValidUntil: h.validUntil(n, h.nodeOpts.Timeouts.Subscribers)}
		if err := h.nodeAPI(n).RemoveSubscribers(ctx, req); err != nil {
			// The next poll carries the node's exact set, which drops them.
			h.logger.Warn("remove failed", "node_id", n.id, "crawlers", len(p.removes), "err", err)
		}
	}
	if len(p.upserts) == 0 {
		return 0
	}
	n.seq++
	req := api.SubscribersRequest{Epoch: h.epoch, Seq: n.seq, Subscribers: p.upserts, ValidUntil: h.validUntil(n, h.nodeOpts.Timeouts.Subscribers)}
	resp, err := h.nodeAPI(n).UpsertSubscribers(ctx, req)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sentLocked(n, p.upserts, resp, err)
}

// sentLocked records the outcome of upserting specs on a node: what
// succeeded is not sent again while it stays put in its version; what
// failed, whole or per subscriber, is marked for the next soft reload. It
// returns how many subscribers failed.
func (h *Hub) sentLocked(n *node, upserts []api.SubscriberSpec, resp api.SubscribersResponse, err error) int {
	failed := 0
	defer func() {
		if failed > 0 {
			h.reload.resendDue = true
		}
	}()
	if err != nil {
		h.metrics.sendFailures.Inc()
		h.logger.Warn("send failed", "node_id", n.id, "subscribers", len(upserts), "err", err)
		for _, spec := range upserts {
			if c, ok := h.crawlers[spec.CrawlerID]; ok && c.nodeID() == n.id {
				c.needSend, c.state, c.err = true, api.StateFailed, "send to node failed: "+err.Error()
				failed++
			}
		}
		return failed
	}
	// An answer of a registration the node has since replaced speaks
	// for a spawn that dropped everything: nothing of it runs there now.
	stale := h.nodes[n.id] != n
	sent := make(map[int64]int64, len(upserts))
	for _, spec := range upserts {
		sent[spec.CrawlerID] = spec.Version
	}
	for _, r := range resp.Results {
		c, ok := h.crawlers[r.CrawlerID]
		if !ok || c.nodeID() != n.id {
			continue
		}
		if r.Error != "" {
			c.needSend, c.state, c.err = true, api.StateFailed, r.Error
			h.sentToLocked(c, nil)
			failed++
			continue
		}
		if stale {
			c.needSend = true
			continue
		}
		if v, ok := sent[r.CrawlerID]; ok {
			c.sentVersion = v
		}
		h.sentToLocked(c, n)
		c.needSend = false
		if c.state == api.StateFailed {
			c.state, c.err = api.StatePending, ""
		}
	}
	return failed
}
