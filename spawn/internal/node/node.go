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

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
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
	// OrphanAfter and DetachAfter apply until the hub sends its own; zero
	// picks api.DefaultOrphanAfter and api.DefaultDetachAfter.
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
	// NoSentiment turns off language detection and sentiment scoring:
	// comments then carry the language their source says and no
	// sentiment.
	NoSentiment bool
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
	// Its state is split by concern, each in the file of that name: its
	// tie to the hub (attach.go, liveness.go), the subscribers and data
	// sources it runs (subscribers.go), the usage it counted (usage.go),
	// its drain (drain.go) and the analytics of what it stores
	// (analytics.go). Those under mu change together: a hub request checks
	// the attachment, changes subscribers and reads usage in one hold of
	// the lock.

	cfg Config
	// infos are the declarations of the kinds (declare.go).
	infos   *api.SourceRegistry
	id      string
	start   time.Time
	logger  *slog.Logger
	metrics *Metrics
	// writer writes counted comments to the store (writer.go).
	writer *writer
	// names are the authors' names sources learn late (names.go).
	names *authorNames
	// retracts are what sources take back (retract.go).
	retracts *retractions
	// analytics extracts the terms of counted comments (analytics.go).
	analytics analyticsState
	// enrich detects languages and scores sentiment (enrich.go); nil
	// when off.
	enrich *enricher

	// mu guards the states below and the subscribers' and data sources'
	// state; a method named …Locked must be called with it held.
	mu sync.Mutex
	// attach is the node's tie to the hub: whether and to which hub it is
	// attached, and when the hub last spoke (attach.go, liveness.go).
	attach attachState
	// table is the subscribers and the data sources they share
	// (subscribers.go).
	table subscriberTable
	// usage is what the node counted and the hub has not acknowledged
	// (usage.go).
	usage usageBook
	// delta is what the hub has been told of each subscriber, so a poll
	// is answered with what changed (api.StatusDelta).
	delta api.StatusDelta
	// drain is set once the node drains (drain.go).
	drain drainState
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
		cfg.OrphanAfter = api.DefaultOrphanAfter
	}
	if cfg.DetachAfter <= 0 {
		cfg.DetachAfter = api.DefaultDetachAfter
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	cfg.HubURL = strings.TrimRight(cfg.HubURL, "/")
	n := &Node{
		cfg:     cfg,
		id:      uuid.NewString(),
		start:   time.Now(),
		logger:  cfg.Logger.With("component", "spawn"),
		metrics: cfg.Metrics,
		attach: attachState{
			kick:        make(chan struct{}, 1),
			state:       api.NodeRegistering,
			orphanAfter: cfg.OrphanAfter,
			detachAfter: cfg.DetachAfter,
		},
		table: subscriberTable{
			subs:         map[int64]*subscriber{},
			sources:      map[string]*dataSource{},
			indexBuilder: buildIndex,
		},
		usage:     usageBook{pending: map[int64]int{}},
		analytics: analyticsState{queue: newTermsQueue()},
	}
	n.infos = declarations(cfg.Declared)
	n.enrich = newEnricher(cfg, n.logger)
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
	n.table.runCtx = ctx
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
	n.table.wg.Wait() // data sources have stopped emitting
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
