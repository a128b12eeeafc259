package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Spawn membership: what the hub knows of each live spawn (node),
// registration, a node coming back, a node lost, and waking the nodes a
// previous hub knew. Polling them is in poll.go, their drain in drain.go.

// maxDetachReason bounds the reason a spawn gives for a detach.
const maxDetachReason = 500

// node is a live spawn as the hub sees it.
type node struct {
	id, url      string
	registeredAt time.Time
	lastPoll     time.Time
	failures     int
	probing      bool // a probe goroutine follows a failed poll
	removed      bool
	want         map[int64]*crawler // crawlers routed here (wantLocked)
	sent         map[int64]*crawler // crawlers last sent here with success (sentToLocked)
	acks         []uint64           // increments applied, to acknowledge
	anchorClock  int64              // spawn clock of the last answer
	anchorAt     time.Time          // when the hub received that answer
	sources      []string           // source kinds it crawls, sorted
	fleet        []string           // offered kinds it holds fleet-wide (one connection per fleet)
	store        string
	dataSources  []api.DataSourceStatus
	pending      map[int64]int
	leased       map[int64]bool // crawlers with lease accounts on the node
	maxSeq       uint64         // highest increment sequence applied from it
	// drain is set when the node drains (drain.go).
	drain nodeDrain
	// statusBase is the number of the node's last answer taken in, which
	// the next poll names so the node reports only what changed since
	// (api.StatusDelta); 0 asks for everything. baseResets counts the
	// times it was reset, so an answer to a poll sent before a reset does
	// not restore a base the reset meant to drop.
	statusBase uint64
	baseResets uint64

	opMu sync.Mutex // serialises requests to the node
	seq  uint64     // guarded by opMu
	// retract is the node's place in the retraction log (retractions.go).
	retract nodeRetract
}

// askAllLocked makes the node's next poll ask for every status.
func (n *node) askAllLocked() {
	n.statusBase = 0
	n.baseResets++
}

// Register adds a spawn, or renews one that registers again after a detach,
// and triggers a hard reload.
func (h *Hub) Register(req api.RegisterRequest) (api.RegisterResponse, error) {
	if req.NodeID == "" || len(req.NodeID) > 64 {
		return api.RegisterResponse{}, fmt.Errorf("%w: node_id must be 1 to 64 characters", ErrInvalid)
	}
	if err := validNodeURL(req.URL); err != nil {
		return api.RegisterResponse{}, err
	}
	if len(req.Detached) > maxDetachReason {
		return api.RegisterResponse{}, fmt.Errorf("%w: detached must be at most %d characters", ErrInvalid, maxDetachReason)
	}
	if len(req.Declared) > api.MaxSourcesDeclared || len(req.Sources) > api.MaxSourcesDeclared || len(req.FleetSources) > api.MaxSourcesDeclared {
		return api.RegisterResponse{}, fmt.Errorf("%w: at most %d source kinds", ErrInvalid, api.MaxSourcesDeclared)
	}
	h.learnSources(req.NodeID, req.Declared)
	// The log's end, read before the lock: the spawn catches up to it
	// before it stores anything.
	head, err := h.retractionHead(h.runContext())
	if err != nil {
		h.logger.Warn("unable to read the retraction log's end for a registration", "node_id", req.NodeID, "err", err)
	}
	now := time.Now()
	h.mu.Lock()
	n := &node{
		id: req.NodeID, url: strings.TrimRight(req.URL, "/"), sources: offeredSources(req.Sources), fleet: fleetSources(req.FleetSources), registeredAt: now, lastPoll: now,
		want: map[int64]*crawler{}, sent: map[int64]*crawler{}, anchorClock: req.Clock, anchorAt: now, pending: map[int64]int{},
		leased: map[int64]bool{}, drain: nodeDrain{keep: map[int64]*crawler{}},
	}
	// Crawlers that may hold lease accounts on the node: those of its
	// previous registration, live or lost. The hub keeps them per node, so
	// a registration costs what the node ran, not a pass over every
	// crawler: ten thousand spawns registering again after a hub restart
	// must not each walk a million crawlers under the lock.
	n.registeredRetract(req)
	before := h.lost.leased[req.NodeID]
	delete(h.lost.leased, req.NodeID)
	if old, ok := h.nodes[req.NodeID]; ok {
		old.removed = true
		before = old.leased
		// Whatever the spawn ran before registering again is gone.
		for _, c := range old.sent {
			h.sentToLocked(c, nil)
			c.needSend = true
		}
		// Routed to the node still: wanted on its new registration.
		for _, c := range old.want {
			h.wantLocked(c, n)
		}
		// It no longer runs what it was keeping for a drain.
		for _, c := range old.drain.keep {
			h.releaseLocked(c)
		}
	}
	h.nodes[req.NodeID] = n
	// Its lease accounts from before settle on this node's answers
	// (answerLocked), whether or not the crawler runs here again.
	for id := range before {
		if c, ok := h.crawlers[id]; ok && c.leases.onNode(req.NodeID) {
			n.leased[id] = true
		}
	}
	h.nodeBackLocked(n)
	if req.Draining {
		h.drainLocked(n, "it registered draining")
	}
	if req.Detached != "" {
		h.events.add("node_detached", fmt.Sprintf("node %s detached (%s), dropping its subscribers, and registered again", short(req.NodeID), req.Detached))
	}
	h.events.add("node_joined", fmt.Sprintf("node %s joined from %s", short(req.NodeID), req.URL))
	ctx := h.runContext()
	h.mu.Unlock()
	if err := h.cfg.Store.RememberNode(ctx, req.NodeID, req.URL); err != nil {
		h.logger.Warn("unable to remember node", "node_id", req.NodeID, "err", err)
	}
	h.metrics.registrations.Inc()
	h.logger.Info("node registered", "node_id", req.NodeID, "url", req.URL)
	h.RequestReload(true)
	return api.RegisterResponse{
		Epoch:          h.epoch,
		NodeID:         req.NodeID,
		PollInterval:   api.Duration(h.cfg.PollInterval),
		OrphanAfter:    api.Duration(h.cfg.OrphanAfter),
		DetachAfter:    api.Duration(h.cfg.DetachAfter),
		RetractionHead: uint64(head),
	}, nil
}

// nodeBackLocked handles a lost node registering again under its id: it is
// the same process (a spawn's id lives as long as it does), so it still
// holds every increment it counted and reports them itself. Reading its
// usage back from the store is then not needed, and would be wrong: the
// store would show its new batches half written. Its accounts from before
// settle like those of any instance it no longer runs.
func (h *Hub) nodeBackLocked(n *node) {
	cancelled := false
	h.lost.recoveries = slices.DeleteFunc(h.lost.recoveries, func(r recovery) bool {
		if r.nodeID != n.id {
			return false
		}
		n.maxSeq = max(n.maxSeq, r.afterSeq)
		cancelled = true
		return true
	})
	if !cancelled {
		return
	}
	for id := range n.leased {
		if c, ok := h.crawlers[id]; ok {
			c.leases.nodeBack(n.id)
		}
	}
	// Its accounts count again: totals summed without them are too low.
	clear(h.grants.userTotals)
	h.logger.Info("lost node is back: it reports its own usage, no recovery needed", "node_id", n.id)
}

// offeredSources keeps the known source kinds a spawn offers, sorted; a
// spawn that names none offers every kind. Kinds this hub does not know are
// ignored: no crawler can ask for them.
func offeredSources(kinds []string) []string {
	if len(kinds) == 0 {
		return builtinSourceNames()
	}
	out := slices.Clone(kinds)
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(builtinRank(a), builtinRank(b)), strings.Compare(a, b))
	})
	return slices.Compact(out)
}

// builtinSourceNames are the kinds a spawn that names none offers (one
// older than the source lists): every builtin kind, in the order the
// spawn lists them, which is the order the hub shows kinds in.
var builtinSourceNames = sync.OnceValue(func() []string {
	var out []string
	for _, s := range api.BuiltinSources() {
		out = append(out, s.Name)
	}
	return out
})

// builtinRank is a kind's place among the builtin kinds; kinds a spawn
// brought come after them.
func builtinRank(kind string) int {
	if i := slices.Index(builtinSourceNames(), kind); i >= 0 {
		return i
	}
	return len(builtinSourceNames())
}

// fleetSources lists the kinds a spawn holds fleet-wide; unlike
// offeredSources, none named means none.
func fleetSources(kinds []string) []string {
	if len(kinds) == 0 {
		return nil
	}
	return offeredSources(kinds)
}

// routeTablesLocked builds a routing table per source kind over the nodes
// (sorted ids) that offer it.
func (h *Hub) routeTablesLocked(ids []string) map[string]RouteTable {
	kinds := h.Sources().Names()
	tables := make(map[string]RouteTable, len(kinds))
	for _, kind := range kinds {
		offering := make([]string, 0, len(ids))
		for _, id := range ids {
			// A draining node takes nothing, and holds no fleet
			// connection any more.
			if n := h.nodes[id]; !n.drain.active && slices.Contains(n.sources, kind) {
				offering = append(offering, id)
			}
		}
		if holder, ok := h.fleetHolderLocked(kind, offering); ok {
			offering = []string{holder}
		}
		tables[kind] = h.cfg.Router.Table(offering)
	}
	return tables
}

// removeNodeLocked forgets a node whose polls keep failing.
func (h *Hub) removeNodeLocked(n *node, reason string) {
	if n.removed {
		return
	}
	n.removed = true
	delete(h.nodes, n.id)
	for _, c := range n.sent {
		h.sentToLocked(c, nil)
	}
	for _, c := range n.want {
		c.needSend, c.state = true, api.StatePending
		h.wantLocked(c, nil)
	}
	for _, c := range n.drain.keep {
		h.releaseLocked(c)
	}
	for id := range n.leased {
		if c, ok := h.crawlers[id]; ok {
			c.leases.nodeLost(n.id)
		}
	}
	// Kept for the node's recovery and for its registering again.
	h.lost.leased[n.id] = n.leased
	h.metrics.nodesLost.Inc()
	// The node may have stored comments it never reported. Once its leases
	// have run out and it can no longer be writing, a live spawn reads them
	// back from the store; until then its leases count as spent. The node
	// stays in known_nodes until then, so a hub restart does not forget it.
	h.lost.recoveries = append(h.lost.recoveries, recovery{nodeID: n.id, afterSeq: n.maxSeq, due: time.Now().Add(h.recoveryDelay())})
	h.events.add("node_lost", fmt.Sprintf("node %s lost: %s", short(n.id), reason))
	h.logger.Warn("node removed", "node_id", n.id, "reason", reason)
}

// sortedNodeIDsLocked lists live nodes sorted by id, the order routing uses.
func (h *Hub) sortedNodeIDsLocked() []string {
	ids := make([]string, 0, len(h.nodes))
	for id := range h.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// wakeKnownNodes contacts the nodes a previous hub run knew. Each answers a
// request from a new epoch by dropping what it runs and registering at once,
// so a hub restart recovers in about a poll interval instead of the spawns'
// detach_after. The request has sequence 0, which a spawn already attached
// to this epoch ignores as stale. They are also the spawns whose usage this
// run must hear before it grants a lease (priorSpawns); when they cannot be
// read, the poll loop tries again and nothing is granted meanwhile.
func (h *Hub) wakeKnownNodes(ctx context.Context) {
	known, err := h.cfg.Store.KnownNodes(ctx)
	if err != nil {
		h.logger.Warn("unable to read known nodes", "err", err)
		return
	}
	ids := make([]string, len(known))
	for i, k := range known {
		ids[i] = k.ID
	}
	h.mu.Lock()
	h.loadPriorLocked(ids)
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range known {
		h.mu.Lock()
		_, live := h.nodes[k.ID]
		h.mu.Unlock()
		if live {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.nodeAPI(&node{id: k.ID, url: k.URL}).Poll(ctx, api.PollRequest{Epoch: h.epoch, NodeID: k.ID})
			var answered *api.StatusError
			if err != nil && !errors.As(err, &answered) {
				// Nobody there any more: it registers anew if it comes back,
				// and what it stored unreported is read back from the store.
				h.logger.Info("node known before the restart is gone", "node_id", k.ID, "url", k.URL, "err", err)
				after, err := h.cfg.Store.MaxAppliedSeq(ctx, k.ID)
				if err != nil {
					h.logger.Warn("unable to read the last increment of a gone node", "node_id", k.ID, "err", err)
					return
				}
				h.mu.Lock()
				h.lost.recoveries = append(h.lost.recoveries, recovery{nodeID: k.ID, afterSeq: after, due: time.Now().Add(h.recoveryDelay())})
				h.mu.Unlock()
				return
			}
			h.logger.Info("woke a node known before the restart", "node_id", k.ID, "url", k.URL)
		}()
	}
	wg.Wait()
}
