// Package node is the spawn's runtime: it registers with the hub, keeps the
// subscribers and data sources the hub assigns, shares one data source among
// every subscriber that wants the same data, counts comments against leases,
// writes them through a bounded buffer to the store, and drops whatever the
// hub stops supervising.
package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/match"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Defaults the spawn keeps until the hub tells it its own at registration.
const (
	DefaultOrphanAfter = 10 * time.Second
	DefaultDetachAfter = 15 * time.Second
	// registerRetryMin is the first back-off after a failed registration;
	// each failure doubles it up to registerRetryMax, and every wait is a
	// random value between half of it and all of it.
	registerRetryMin = 200 * time.Millisecond
	registerRetryMax = 10 * time.Second
	// registerTimeout bounds one registration request.
	registerTimeout = 5 * time.Second
	// maxIncrementsPerPoll bounds one poll answer; the rest follow on the
	// next poll.
	maxIncrementsPerPoll = 10000
	// seenPerSubscriber bounds the comment ids a subscriber remembers to
	// avoid counting an item twice.
	seenPerSubscriber = 20000
	// backlogPerSubscriber bounds the items a limited subscriber holds while
	// it waits for a lease; older ones are dropped beyond it.
	backlogPerSubscriber = 1000
)

// Config is what a spawn node needs.
type Config struct {
	HubURL       string
	AdvertiseURL string
	NodeToken    string
	Sources      source.Registry
	Store        store.Store
	Logger       *slog.Logger
	HTTPClient   *http.Client
	// OrphanAfter and DetachAfter apply until the hub sends its own.
	OrphanAfter time.Duration
	DetachAfter time.Duration
	// WatchEvery is how often orphans and detachment are checked; zero
	// picks a quarter of OrphanAfter.
	WatchEvery time.Duration
}

// ErrStale marks a hub request older than one the spawn has already seen.
var ErrStale = errors.New("node: stale request")

// ErrEpoch marks a request from a hub instance other than the one the spawn
// is attached to.
var ErrEpoch = errors.New("node: epoch mismatch")

// ErrNotAttached marks a hub request while the spawn is not registered.
var ErrNotAttached = errors.New("node: not attached")

// Node is one spawn.
type Node struct {
	// deferred collects the data sources to tell about subscriber changes
	// at the end of the batch being applied (guarded by mu; nil outside).
	deferred map[*dataSource]bool

	cfg    Config
	id     string
	start  time.Time
	logger *slog.Logger
	writer *writer
	kick   chan struct{} // wakes the attach loop
	// indexBuilder compiles keyword indexes (buildIndex; a test may slow
	// it down to watch the node work while one compiles).
	indexBuilder func(prev *match.Index, byID map[int64][]string) *match.Index

	mu          sync.Mutex
	runCtx      context.Context
	state       string
	epoch       string
	lastContact time.Time
	lastSeq     uint64
	// detachReason is why the node last detached, told to the hub when it
	// registers again.
	detachReason string
	orphanAfter  time.Duration
	detachAfter  time.Duration
	subs         map[int64]*subscriber
	sources      map[string]*dataSource
	instances    uint64
	incSeq       uint64
	incs         []api.Increment // counted usage not yet acknowledged
	pending      map[int64]int   // per crawler: comments counted, not yet stored
	wg           sync.WaitGroup  // data source goroutines
}

// subscriber is one crawler's consumer on this node.
type subscriber struct {
	spec       api.SubscriberSpec
	instance   uint64
	keys       []string
	kind       source.Kind
	lastPolled time.Time
	stored     int64
	reserved   int64
	rejected   int64
	rate       rateMeter
	leaseSeq   uint64
	leaseTotal int64 // cumulative allowance of this instance
	leaseUntil int64 // spawn clock, ms
	seen       map[string]struct{}
	seenOrder  []string
	backlog    []source.Item // items waiting for a lease
}

// dataSource is one shared crawl and the subscribers it feeds.
type dataSource struct {
	key    string
	ds     source.DataSource
	subs   map[int64]*subscriber
	cancel context.CancelFunc
	// index finds the subscribers whose keywords an item mentions; open
	// are the subscribers without keywords, who see every item. Both are
	// rebuilt from subs on the first emit after a change (stale), so a
	// burst of subscriber changes costs one rebuild, and an item costs one
	// pass over its text however many subscribers share the source. gen
	// counts the changes, so a rebuild made without the node lock knows
	// whether it is still current.
	index *match.Index
	open  []*subscriber
	stale bool
	gen   uint64
	hits  []match.Hit // reused by the emitter
	// deferred is the node's set of sources to tell at the end of the
	// batch being applied, nil outside a batch.
	deferred map[*dataSource]bool
}

// New builds a node. Run starts it.
func New(cfg Config) (*Node, error) {
	if cfg.HubURL == "" {
		return nil, errors.New("node: hub URL is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("node: a store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: registerTimeout}
	}
	if cfg.OrphanAfter <= 0 {
		cfg.OrphanAfter = DefaultOrphanAfter
	}
	if cfg.DetachAfter <= 0 {
		cfg.DetachAfter = DefaultDetachAfter
	}
	cfg.HubURL = strings.TrimRight(cfg.HubURL, "/")
	n := &Node{
		cfg:         cfg,
		id:          uuid.NewString(),
		start:       time.Now(),
		logger:      cfg.Logger.With("component", "spawn"),
		kick:        make(chan struct{}, 1),
		state:       api.NodeRegistering,
		orphanAfter: cfg.OrphanAfter,
		detachAfter: cfg.DetachAfter,
		subs:        map[int64]*subscriber{},
		sources:     map[string]*dataSource{},
		pending:     map[int64]int{},

		indexBuilder: buildIndex,
	}
	n.writer = newWriter(cfg.Store, n.logger, n.assignIncrements, n.recordWritten)
	return n, nil
}

// ID is the node id the spawn registers with; it lasts for the process.
func (n *Node) ID() string { return n.id }

// clock is the spawn's monotonic clock in milliseconds. Leases expire on it.
func (n *Node) clock() int64 { return time.Since(n.start).Milliseconds() }

// Run registers and serves assignments until ctx ends; then it stops every
// data source and drains the store buffer within drainTimeout.
func (n *Node) Run(ctx context.Context, drainTimeout time.Duration) error {
	n.mu.Lock()
	n.runCtx = ctx
	n.mu.Unlock()

	drainCtx, cancelDrain := context.WithCancel(context.Background())
	defer cancelDrain()
	var wg sync.WaitGroup
	wg.Add(3)
	writerDone := make(chan struct{})
	go func() { defer wg.Done(); defer close(writerDone); n.writer.run(ctx, drainCtx) }()
	go func() { defer wg.Done(); n.attachLoop(ctx) }()
	go func() { defer wg.Done(); n.watch(ctx) }()

	<-ctx.Done()
	n.mu.Lock()
	n.dropAllLocked()
	n.mu.Unlock()
	n.wg.Wait() // data sources have stopped emitting
	select {
	case <-writerDone:
	case <-time.After(drainTimeout):
		n.logger.Error("store drain timed out", "waiting", len(n.writer.in))
		cancelDrain()
	}
	wg.Wait()
	return nil
}

// attachLoop registers whenever the node is not attached.
func (n *Node) attachLoop(ctx context.Context) {
	delay := registerRetryMin
	for {
		n.mu.Lock()
		attached := n.state == api.NodeAttached
		n.mu.Unlock()
		if !attached {
			registrations.Inc()
			if err := n.register(ctx); err != nil {
				registrationFailures.Inc()
				n.logger.Warn("registration failed", "hub", n.cfg.HubURL, "err", err, "retry_in", delay)
				if !sleepJitter(ctx, delay) {
					return
				}
				delay = min(delay*2, registerRetryMax)
				continue
			}
			delay = registerRetryMin
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
	detaches.Inc()
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
			orphansDropped.Inc()
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

// Upsert applies a SubscribersRequest.
func (n *Node) Upsert(req api.SubscribersRequest) (api.SubscribersResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.checkHubLocked(req.Epoch, req.Seq); err != nil {
		return api.SubscribersResponse{}, err
	}
	// Tell each touched data source about its subscribers once, at the end.
	deferred := map[*dataSource]bool{}
	for _, ds := range n.sources {
		ds.deferred = deferred
	}
	n.deferred = deferred
	defer func() {
		n.deferred = nil
		for _, ds := range n.sources {
			ds.deferred = nil
		}
		for ds := range deferred {
			if n.sources[ds.key] == ds {
				ds.tellLocked()
			}
		}
	}()
	resp := api.SubscribersResponse{Results: make([]api.SubscriberResult, 0, len(req.Subscribers))}
	keep := make(map[int64]bool, len(req.Subscribers))
	for _, spec := range req.Subscribers {
		keep[spec.CrawlerID] = true
		res := api.SubscriberResult{CrawlerID: spec.CrawlerID}
		if err := n.upsertLocked(spec); err != nil {
			res.Error = err.Error()
		}
		resp.Results = append(resp.Results, res)
	}
	if req.Exact {
		for id := range n.subs {
			if !keep[id] {
				n.removeLocked(id)
			}
		}
	}
	return resp, nil
}

// Remove applies a RemoveRequest.
func (n *Node) Remove(req api.RemoveRequest) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.checkHubLocked(req.Epoch, req.Seq); err != nil {
		return err
	}
	for _, id := range req.CrawlerIDs {
		n.removeLocked(id)
	}
	return nil
}

// upsertLocked creates a subscriber, or updates one in place: a re-sent spec
// changes nothing, and a changed spec with the same data source keys keeps
// its data sources running.
func (n *Node) upsertLocked(spec api.SubscriberSpec) error {
	kind, err := n.cfg.Sources.Lookup(spec.Source)
	if err != nil {
		return err
	}
	keys, err := kind.Keys(spec)
	if err != nil {
		return err
	}
	slices.Sort(keys)
	now := time.Now()
	if s, ok := n.subs[spec.CrawlerID]; ok {
		s.lastPolled = now
		if s.spec.Version == spec.Version && s.spec.QueryUUID == spec.QueryUUID {
			return nil
		}
		if slices.Equal(s.keys, keys) {
			s.spec = spec
			for _, k := range keys {
				n.sources[k].refreshLocked()
			}
			return nil
		}
		n.removeLocked(spec.CrawlerID)
	}
	n.instances++
	s := &subscriber{spec: spec, instance: n.instances, keys: keys, kind: kind, lastPolled: now, seen: map[string]struct{}{}}
	for _, k := range keys {
		ds, ok := n.sources[k]
		if !ok {
			if ds, err = n.startSourceLocked(kind, k); err != nil {
				// Undo the keys joined so far: nothing half-applied.
				for _, done := range keys {
					if done == k {
						break
					}
					n.leaveLocked(done, spec.CrawlerID)
				}
				return err
			}
		}
		ds.subs[spec.CrawlerID] = s
		ds.refreshLocked()
	}
	n.subs[spec.CrawlerID] = s
	n.logger.Info("subscriber started", "crawler_id", spec.CrawlerID, "query_uuid", spec.QueryUUID, "data_sources", strings.Join(keys, ","))
	return nil
}

func (n *Node) startSourceLocked(kind source.Kind, key string) (*dataSource, error) {
	impl, err := kind.New(key)
	if err != nil {
		return nil, err
	}
	if n.runCtx == nil {
		return nil, errors.New("node: not running")
	}
	ctx, cancel := context.WithCancel(n.runCtx)
	ds := &dataSource{key: key, ds: impl, subs: map[int64]*subscriber{}, cancel: cancel, deferred: n.deferred}
	n.sources[key] = ds
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		impl.Run(ctx, n.emitter(ds))
	}()
	dataSourcesStarted.Inc()
	n.logger.Info("data source started", "key", key)
	return ds, nil
}

// refreshLocked runs after the source's subscriber set or a subscriber's
// spec changed: it tells the source, and marks the keyword index for a
// rebuild on the next emit.
// refreshLocked tells the source its subscribers changed. Inside a batch
// (n.deferred set) it only marks the source, and the batch's end tells it
// once: an upsert of thousands of subscribers on one source then costs one
// pass, not one per subscriber.
func (d *dataSource) refreshLocked() {
	if d.deferred != nil {
		d.deferred[d] = true
		return
	}
	d.tellLocked()
}

func (d *dataSource) tellLocked() {
	specs := make([]api.SubscriberSpec, 0, len(d.subs))
	for _, s := range d.subs {
		specs = append(specs, s.spec)
	}
	d.stale = true
	d.gen++
	d.ds.SetSubscribers(specs)
}

// matchersLocked returns the keyword index and the subscribers without
// keywords, rebuilding them if the subscribers changed since the last
// call. The rebuild reuses the previous automaton when no new keyword
// appeared, so subscribers coming and going over a stable vocabulary only
// re-sort postings.
func (d *dataSource) matchersLocked() (*match.Index, []*subscriber) {
	if d.index != nil && !d.stale {
		return d.index, d.open
	}
	d.index = buildIndex(d.index, d.keywordsLocked())
	d.stale = false
	return d.index, d.open
}

// keywordsLocked lists the keywords of the subscribers that filter, for an
// index build, and refreshes the list of those that do not.
func (d *dataSource) keywordsLocked() map[int64][]string {
	byID := make(map[int64][]string, len(d.subs))
	d.open = d.open[:0]
	for id, s := range d.subs {
		if len(s.spec.Keywords) == 0 {
			d.open = append(d.open, s)
			continue
		}
		byID[id] = s.spec.Keywords
	}
	return byID
}

// buildIndex indexes byID, reusing prev's automaton where it can.
func buildIndex(prev *match.Index, byID map[int64][]string) *match.Index {
	if prev == nil {
		return match.New(byID)
	}
	return prev.Update(byID)
}

// unlockedIndexBuilds is how often an emitter compiles a changed keyword
// index without the node lock before it gives up and compiles under it:
// subscribers changing faster than a compile must not starve the source.
const unlockedIndexBuilds = 3

// rebuildIndexLocked brings a stale keyword index up to date, compiling it
// with n.mu released: a vocabulary of thousands of keywords takes a few
// hundred milliseconds to compile, and polls and reloads must not wait for
// it. It returns with n.mu held, and false when the data source was stopped
// meanwhile.
func (n *Node) rebuildIndexLocked(ds *dataSource) bool {
	for range unlockedIndexBuilds {
		if ds.index != nil && !ds.stale {
			return true
		}
		gen, prev, byID := ds.gen, ds.index, ds.keywordsLocked()
		n.mu.Unlock()
		built := n.indexBuilder(prev, byID)
		n.mu.Lock()
		if n.sources[ds.key] != ds {
			return false
		}
		if ds.gen == gen {
			ds.index, ds.stale = built, false
			return true
		}
	}
	return true // matchersLocked compiles under the lock
}

// leaveLocked takes a subscriber off a data source, stopping the source when
// it was the last one.
func (n *Node) leaveLocked(key string, crawlerID int64) {
	ds, ok := n.sources[key]
	if !ok {
		return
	}
	delete(ds.subs, crawlerID)
	if len(ds.subs) == 0 {
		ds.cancel()
		delete(n.sources, key)
		n.logger.Info("data source stopped", "key", key)
		return
	}
	ds.refreshLocked()
}

func (n *Node) removeLocked(crawlerID int64) {
	s, ok := n.subs[crawlerID]
	if !ok {
		return
	}
	for _, k := range s.keys {
		n.leaveLocked(k, crawlerID)
	}
	delete(n.subs, crawlerID)
	n.logger.Info("subscriber stopped", "crawler_id", crawlerID)
}

func (n *Node) dropAllLocked() {
	for id := range n.subs {
		n.removeLocked(id)
	}
}

// emitter fans a data source's items out to its subscribers. Each item is
// matched once against the source's keyword index; only the subscribers
// whose keywords it mentions, and those without keywords, consider it: each
// skips what it has counted before and counts a comment only against a live
// lease. Counted comments go to the store buffer, which blocks when the
// store is slow.
func (n *Node) emitter(ds *dataSource) source.Emit {
	return func(ctx context.Context, items []source.Item) error {
		var out []pending
		n.mu.Lock()
		if n.sources[ds.key] != ds {
			n.mu.Unlock()
			return context.Canceled
		}
		if !n.rebuildIndexLocked(ds) {
			n.mu.Unlock()
			return context.Canceled
		}
		now := n.clock()
		index, open := ds.matchersLocked()
		for _, it := range items {
			for _, s := range open {
				if p, ok := s.acceptMatched(it, nil, now); ok {
					n.pendingLocked(p.comment.CrawlerID, 1)
					out = append(out, p)
				}
			}
			ds.hits = index.AppendMatch(ds.hits[:0], it.Text)
			for _, h := range ds.hits {
				s, ok := ds.subs[h.Subscriber]
				if !ok {
					continue
				}
				if p, ok := s.acceptMatched(it, h.Keywords, now); ok {
					n.pendingLocked(p.comment.CrawlerID, 1)
					out = append(out, p)
				}
			}
		}
		clear(ds.hits[:cap(ds.hits)]) // keep no keyword slices alive between batches
		n.mu.Unlock()
		for _, p := range out {
			if err := n.writer.enqueue(ctx, p); err != nil {
				// The subscriber is gone and its data source stopped: the
				// comment was counted against a lease but will not be
				// stored, so give the reservation back.
				n.unreserve(p)
				return err
			}
		}
		return ctx.Err()
	}
}

// drainBacklogLocked counts the held items a new lease now covers.
func (n *Node) drainBacklogLocked(s *subscriber) []pending {
	held := s.backlog
	s.backlog = nil
	now := n.clock()
	var out []pending
	for _, it := range held {
		if p, ok := s.accept(it, now); ok {
			n.pendingLocked(p.comment.CrawlerID, 1)
			out = append(out, p)
		}
	}
	return out
}

// pendingLocked tracks comments between counting and storing, so the hub
// knows when a crawler's usage on this node is complete.
func (n *Node) pendingLocked(crawlerID int64, delta int) {
	n.pending[crawlerID] += delta
	if n.pending[crawlerID] <= 0 {
		delete(n.pending, crawlerID)
	}
}

// unreserve returns a reservation whose comment never reached the store.
func (n *Node) unreserve(p pending) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.subs[p.comment.CrawlerID]; ok && s.instance == p.instance {
		s.reserved--
	}
	n.pendingLocked(p.comment.CrawlerID, -1)
}

// accept decides whether an item becomes one of the subscriber's comments,
// matching the subscriber's keywords itself: the path of items held for a
// lease, which come one subscriber at a time.
func (s *subscriber) accept(it source.Item, now int64) (pending, bool) {
	matched, ok := matchKeywords(it, s.spec.Keywords)
	if !ok {
		return pending{}, false
	}
	return s.acceptMatched(it, matched, now)
}

// acceptMatched is accept for an item whose keyword filter the caller has
// already applied (the data source's keyword index): matched are the
// subscriber's keywords the item mentions, nil for a subscriber without
// keywords.
func (s *subscriber) acceptMatched(it source.Item, matched []string, now int64) (pending, bool) {
	if _, dup := s.seen[it.ID]; dup {
		return pending{}, false
	}
	if c := s.spec.Cursor; c != nil && !it.PublishedAt.After(c.PublishedAt) {
		return pending{}, false
	}
	if it.QueryUUID != "" && it.QueryUUID != s.spec.QueryUUID {
		return pending{}, false
	}
	if len(it.Terms) > 0 && !intersects(it.Terms, s.spec.Query) {
		return pending{}, false
	}
	if s.spec.Limited && (s.reserved >= s.leaseTotal || now >= s.leaseUntil) {
		// No live lease: keep the item until the next grant, so a
		// subscriber waiting for quota loses nothing its source sent once.
		if i := slices.IndexFunc(s.backlog, func(b source.Item) bool { return b.ID == it.ID }); i < 0 {
			s.backlog = append(s.backlog, it)
		}
		if len(s.backlog) > backlogPerSubscriber {
			s.backlog = s.backlog[len(s.backlog)-backlogPerSubscriber:]
			s.rejected++
			commentsRejected.Inc()
		}
		return pending{}, false
	}
	s.reserved++
	s.remember(it.ID)
	s.rate.add(time.Now(), 1)
	return pending{
		comment: api.Comment{
			ID:          it.ID,
			CrawlerID:   s.spec.CrawlerID,
			Source:      s.spec.Source,
			Author:      it.Author,
			Text:        it.Text,
			URL:         it.URL,
			PublishedAt: it.PublishedAt.UTC(),
			FetchedAt:   it.FetchedAt.UTC(),
			Matched:     matched,
		},
		userID:   s.spec.UserID,
		instance: s.instance,
		leaseSeq: s.leaseSeq,
	}, true
}

func (s *subscriber) remember(id string) {
	s.seen[id] = struct{}{}
	s.seenOrder = append(s.seenOrder, id)
	if len(s.seenOrder) > seenPerSubscriber {
		drop := len(s.seenOrder) - seenPerSubscriber
		for _, old := range s.seenOrder[:drop] {
			delete(s.seen, old)
		}
		s.seenOrder = append(s.seenOrder[:0], s.seenOrder[drop:]...)
	}
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// matchKeywords reports the keywords an item mentions, and whether it passes
// the filter (an empty filter passes everything). It applies the same rule
// as the data source's keyword index, for one subscriber.
func matchKeywords(it source.Item, keywords []string) ([]string, bool) {
	if len(keywords) == 0 {
		return nil, true
	}
	matched := match.Keywords(it.Text, keywords)
	return matched, len(matched) > 0
}

// containsWord reports whether needle occurs in text bounded by non-word
// bytes; both are lowercased.
func containsWord(text, needle string) bool {
	return match.ContainsWord(text, needle)
}

// assignIncrements gives each comment of a batch, before it is written, the
// usage increment it counts under: one per (crawler, instance, lease) in the
// batch, numbered in the order batches are written. It returns the
// increments' intents for a store that journals them.
func (n *Node) assignIncrements(batch []pending) []store.Intent {
	type key struct {
		crawler  int64
		instance uint64
		lease    uint64
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	idx := map[key]int{}
	var intents []store.Intent
	for i := range batch {
		p := &batch[i]
		k := key{p.comment.CrawlerID, p.instance, p.leaseSeq}
		j, ok := idx[k]
		if !ok {
			n.incSeq++
			intents = append(intents, store.Intent{NodeID: n.id, Seq: n.incSeq, CrawlerID: k.crawler, UserID: p.userID, Instance: p.instance, LeaseSeq: p.leaseSeq})
			j = len(intents) - 1
			idx[k] = j
		}
		p.comment.NodeID, p.comment.IncSeq = n.id, intents[j].Seq
		day := p.comment.PublishedAt.UTC().Truncate(24 * time.Hour)
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
	n.mu.Lock()
	defer n.mu.Unlock()
	idx := map[uint64]int{}
	first := len(n.incs) // increments before this batch all have lower numbers
	for j, p := range batch {
		c := p.comment
		s, live := n.subs[c.CrawlerID]
		if live && s.instance != p.instance {
			live = false
		}
		n.pendingLocked(c.CrawlerID, -1)
		if !fresh[j] {
			if live {
				s.reserved--
			}
			duplicatesSkipped.Inc()
			continue
		}
		if live {
			s.stored++
		}
		i, ok := idx[c.IncSeq]
		if !ok {
			n.incs = append(n.incs, api.Increment{NodeID: n.id, Seq: c.IncSeq, CrawlerID: c.CrawlerID, UserID: p.userID, Instance: p.instance, LeaseSeq: p.leaseSeq})
			i = len(n.incs) - 1
			idx[c.IncSeq] = i
		}
		n.incs[i].Count++
		if c.PublishedAt.After(n.incs[i].Newest) {
			n.incs[i].Newest = c.PublishedAt
		}
	}
	// Within a batch the first fresh comment of each increment decides the
	// order of appends: keep the batch's increments in number order.
	slices.SortFunc(n.incs[first:], func(a, b api.Increment) int { return cmp.Compare(a.Seq, b.Seq) })
}

// ErrNoJournal is returned when the spawn's store cannot recover usage.
var ErrNoJournal = errors.New("node: this spawn's store keeps no usage journal")

// RecoverUsage reads a lost node's unreported increments back from the
// store, for the hub of the current epoch.
func (n *Node) RecoverUsage(ctx context.Context, req api.RecoverRequest) ([]api.Increment, error) {
	n.mu.Lock()
	attached, epoch := n.state == api.NodeAttached, n.epoch
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

// Poll answers the hub's batched status poll.
func (n *Node) Poll(req api.PollRequest) (api.PollResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if req.NodeID != "" && req.NodeID != n.id {
		return api.PollResponse{}, fmt.Errorf("%w: poll for node %s reached node %s", ErrEpoch, req.NodeID, n.id)
	}
	err := n.checkHubLocked(req.Epoch, req.Seq)
	if err != nil && !errors.Is(err, ErrStale) {
		return api.PollResponse{}, err
	}
	fresh := err == nil
	now := time.Now()
	if fresh {
		wanted := make(map[int64]bool, len(req.Subscribers))
		for _, ref := range req.Subscribers {
			wanted[ref.CrawlerID] = true
			if s, ok := n.subs[ref.CrawlerID]; ok {
				s.lastPolled = now
			}
		}
		for id := range n.subs {
			if !wanted[id] {
				n.logger.Info("subscriber no longer assigned here", "crawler_id", id)
				n.removeLocked(id)
			}
		}
		var released []pending
		for _, l := range req.Leases {
			if s, ok := n.subs[l.CrawlerID]; ok && s.instance == l.Instance && l.Seq > s.leaseSeq {
				s.leaseSeq, s.leaseTotal, s.leaseUntil = l.Seq, l.Total, l.ExpiresAt
				released = append(released, n.drainBacklogLocked(s)...)
			}
		}
		if len(released) > 0 && n.runCtx != nil {
			// Enqueueing may block on a slow store: not under the lock.
			ctx := n.runCtx
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				for _, p := range released {
					if n.writer.enqueue(ctx, p) != nil {
						n.unreserve(p)
					}
				}
			}()
		}
	}
	if len(req.Acks) > 0 {
		acked := make(map[uint64]bool, len(req.Acks))
		for _, a := range req.Acks {
			acked[a] = true
		}
		n.incs = slices.DeleteFunc(n.incs, func(i api.Increment) bool { return acked[i.Seq] })
	}
	clock := n.clock()
	resp := api.PollResponse{NodeID: n.id, Clock: clock, Store: n.writer.health()}
	for _, ref := range req.Subscribers {
		s, ok := n.subs[ref.CrawlerID]
		if !ok {
			resp.Subscribers = append(resp.Subscribers, api.SubscriberStatus{CrawlerID: ref.CrawlerID, State: api.StateMissing})
			continue
		}
		resp.Subscribers = append(resp.Subscribers, n.statusLocked(s, clock, now))
	}
	resp.Increments = slices.Clone(n.incs[:min(len(n.incs), maxIncrementsPerPoll)])
	resp.MoreIncrements = len(n.incs) > maxIncrementsPerPoll
	resp.DataSources = n.dataSourcesLocked()
	if len(n.pending) > 0 {
		resp.Pending = maps.Clone(n.pending)
	}
	polls.Inc()
	return resp, nil
}

func (n *Node) statusLocked(s *subscriber, clock int64, now time.Time) api.SubscriberStatus {
	st := api.SubscriberStatus{
		CrawlerID:  s.spec.CrawlerID,
		Version:    s.spec.Version,
		QueryUUID:  s.spec.QueryUUID,
		State:      api.StateRunning,
		DataSource: strings.Join(s.keys, ","),
		Stored:     s.stored,
		RatePerSec: s.rate.perSecond(now),
		Instance:   s.instance,
		Reserved:   s.reserved,
		LeaseSeq:   s.leaseSeq,
		LeaseTotal: s.leaseTotal,
	}
	if s.spec.Limited && (s.reserved >= s.leaseTotal || clock >= s.leaseUntil) {
		st.State = api.StateQuotaWait
	}
	var errs []string
	failing := 0
	for _, k := range s.keys {
		if ds, ok := n.sources[k]; ok {
			if err := subscriberErr(ds.ds, s.spec); err != nil {
				errs = append(errs, err.Error())
				if !errors.Is(err, source.ErrDegraded) {
					failing++
				}
			}
		}
	}
	// Failed only when every data source of the subscriber is failing
	// for good; a passing error shows without changing its state.
	if failing > 0 && failing == len(s.keys) {
		st.State = api.StateFailed
	}
	st.Error = strings.Join(errs, "; ")
	return st
}

// subscriberErr is the error of a data source that concerns spec's
// subscriber: only its own query's, on a source that tells them apart.
func subscriberErr(ds source.DataSource, spec api.SubscriberSpec) error {
	if per, ok := ds.(source.SubscriberErrors); ok {
		return per.ErrFor(spec)
	}
	return ds.Err()
}

func (n *Node) dataSourcesLocked() []api.DataSourceStatus {
	out := make([]api.DataSourceStatus, 0, len(n.sources))
	for k, ds := range n.sources {
		st := api.DataSourceStatus{Key: k, Subscribers: len(ds.subs)}
		if len(ds.subs) > 0 {
			for _, s := range ds.subs {
				st.Source = s.spec.Source
				break
			}
		}
		if err := ds.ds.Err(); err != nil {
			st.Error = err.Error()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b api.DataSourceStatus) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Health is the spawn's GET /v1/health document.
func (n *Node) Health() api.SpawnHealth {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := api.SpawnHealth{NodeID: n.id, State: n.state, Epoch: n.epoch, Hub: n.cfg.HubURL, Store: n.writer.health(),
		Subscribers: []api.HealthSubscriber{}, DataSources: []api.HealthDataSource{}}
	clock, now := n.clock(), time.Now()
	ids := make([]int64, 0, len(n.subs))
	for id := range n.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		st := n.statusLocked(n.subs[id], clock, now)
		h.Subscribers = append(h.Subscribers, api.HealthSubscriber{CrawlerID: id, QueryUUID: st.QueryUUID, State: st.State, DataSource: st.DataSource, Stored: st.Stored, Error: st.Error})
	}
	for _, ds := range n.dataSourcesLocked() {
		h.DataSources = append(h.DataSources, api.HealthDataSource{Key: ds.Key, Subscribers: ds.Subscribers, Error: ds.Error})
	}
	return h
}

// Recent reads a crawler's latest comments from the store.
func (n *Node) Recent(ctx context.Context, crawlerID int64, limit int) ([]api.Comment, error) {
	return n.cfg.Store.Recent(ctx, crawlerID, limit)
}
