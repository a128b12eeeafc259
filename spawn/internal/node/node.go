// Package node is the spawn's runtime: it registers with the hub, keeps the
// subscribers and data sources the hub assigns, shares one data source among
// every subscriber that wants the same data, counts comments against leases,
// writes them through a bounded buffer to the store, and drops whatever the
// hub stops supervising.
package node

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
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
	// Metrics are the spawn's metrics; nil builds a registry of the
	// node's own. A caller that registers more of the spawn's metrics (the
	// queue publisher) builds them first with NewMetrics.
	Metrics *Metrics
	// NoAnalytics turns off term counting, activity and query candidates
	// (api.IncrementAnalytics); usage is counted either way.
	NoAnalytics bool
	// StoreLinger is how long the store writer waits for a partial batch
	// to fill before it writes it; zero picks 20 ms.
	StoreLinger time.Duration
	// RetentionSweep is how often a store that drops comments past their
	// retention itself is asked to; zero picks DefaultRetentionSweep.
	RetentionSweep time.Duration
	// Declared are the declarations of every kind in Sources, offered or
	// not (source.Build): the node sends them at registration and asks
	// them what it must know of a kind.
	Declared []api.SourceInfo
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

	cfg Config
	// infos are the declarations of the kinds (declare.go).
	infos   *api.SourceRegistry
	id      string
	start   time.Time
	logger  *slog.Logger
	metrics *Metrics
	writer  *writer
	// extractQ holds the term sets of counted items for extractTerms.
	extractQ *termsQueue
	// names are the authors' names sources learn late (names.go).
	names *authorNames
	// retracts are what sources take back (retract.go).
	retracts *retractions
	// analysis is the batch being written's (startAnalysis); the store
	// writer's goroutine alone uses it.
	analysis *analysis
	kick     chan struct{} // wakes the attach loop
	// indexBuilder compiles query indexes (buildIndex; a test may slow
	// it down to watch the node work while one compiles).
	indexBuilder func(prev *match.QueryIndex, byID map[int64]*query.Query) *match.QueryIndex

	// mu guards the fields below it (wg excepted) and the subscribers' and data
	// sources' state; a method named …Locked must be called with it held.
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
	// delta is what the hub has been told of each subscriber, so a poll
	// is answered with what changed (api.StatusDelta).
	delta api.StatusDelta
	// draining is set once the node drains (drain.go), at drainStart.
	draining   bool
	drainStart time.Time
	wg         sync.WaitGroup // data source goroutines

	// attach is which hubs the node follows and the terms it has seen
	// (attach.go), and when it last lost the right to write (fence.go).
	attach attachState
}

// subscriber is one crawler's consumer on this node.
type subscriber struct {
	spec api.SubscriberSpec
	// filter is the query an item must match (the query of a search
	// source, the keyword filter of an rss crawler); nil takes every item.
	filter     *query.Query
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
	seen       seenIDs
	backlog    []heldItem // items waiting for a lease
	// rejectedTotal is the node's bw_spawn_comments_rejected_total.
	rejectedTotal prometheus.Counter
}

// heldItem is an item a limited subscriber holds until a lease covers
// it, with the key of the data source it came from.
type heldItem struct {
	item source.Item
	key  string
}

// dataSource is one shared crawl and the subscribers it feeds.
type dataSource struct {
	key    string
	ds     source.DataSource
	subs   map[int64]*subscriber
	cancel context.CancelFunc
	// index finds the subscribers whose queries an item matches; open
	// are the subscribers without a filter, who see every item. Both are
	// rebuilt from subs on the first emit after a change (stale), so a
	// burst of subscriber changes costs one rebuild, and an item costs one
	// pass over its text however many subscribers share the source. gen
	// counts the changes, so a rebuild made without the node lock knows
	// whether it is still current.
	index *match.QueryIndex
	open  []*subscriber
	stale bool
	gen   uint64
	hits  []match.QueryHit // reused by the emitter
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
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	cfg.HubURL = strings.TrimRight(cfg.HubURL, "/")
	n := &Node{
		cfg:         cfg,
		id:          uuid.NewString(),
		start:       time.Now(),
		logger:      cfg.Logger.With("component", "spawn"),
		metrics:     cfg.Metrics,
		kick:        make(chan struct{}, 1),
		state:       api.NodeRegistering,
		orphanAfter: cfg.OrphanAfter,
		detachAfter: cfg.DetachAfter,
		subs:        map[int64]*subscriber{},
		sources:     map[string]*dataSource{},
		pending:     map[int64]int{},

		indexBuilder: buildIndex,
	}
	n.infos = declarations(cfg.Declared)
	n.extractQ = newTermsQueue()
	n.names = newAuthorNames(n.logger)
	n.retracts = newRetractions(n.logger, n.metrics, func(kind string) time.Duration { return n.info(kind).TombstoneFor() })
	n.writer = newWriter(cfg.Store, n.logger, n.metrics, n.assignIncrements, n.recordWritten)
	n.writer.names = n.names
	n.writer.edits = n.retracts
	if cfg.StoreLinger > 0 {
		n.writer.lingerFor = cfg.StoreLinger
	}
	// Unchecked (it describes nothing up front), so it always registers.
	n.metrics.Registry.MustRegister(sourceCollector{n})
	return n, nil
}

// Metrics are the node's metrics, which GET /metrics serves.
func (n *Node) Metrics() *Metrics { return n.metrics }

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
	wg.Add(8)
	writerDone := make(chan struct{})
	go func() { defer wg.Done(); defer close(writerDone); n.writer.run(ctx, drainCtx) }()
	go func() { defer wg.Done(); n.extractTerms(ctx) }()
	go func() { defer wg.Done(); n.attachLoop(ctx) }()
	go func() { defer wg.Done(); n.watch(ctx) }()
	go func() { defer wg.Done(); n.names.run(ctx, n.cfg.Store) }()
	go func() { defer wg.Done(); n.retracts.run(ctx, n.cfg.Store) }()
	go func() { defer wg.Done(); n.expireLoop(ctx) }()
	go func() { defer wg.Done(); n.sweepLoop(ctx) }()

	<-ctx.Done()
	n.mu.Lock()
	n.dropAllLocked()
	n.mu.Unlock()
	n.wg.Wait() // data sources have stopped emitting
	select {
	case <-writerDone:
	case <-time.After(drainTimeout):
		n.logger.Error("store drain timed out", "waiting", n.writer.queued())
		cancelDrain()
	}
	wg.Wait()
	return nil
}

// Recent reads a crawler's latest comments from the store.
func (n *Node) Recent(ctx context.Context, crawlerID int64, limit int) ([]api.Comment, error) {
	return n.cfg.Store.Recent(ctx, crawlerID, limit)
}
