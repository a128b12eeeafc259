// Package cluster is the hub's control loop, run by the leading hub: it
// knows the live spawns, routes every enabled crawler's subscriber to one of
// them, polls each spawn once per interval with one batched request, applies
// the usage the spawns report exactly once (usage.go), grants comment leases
// (lease.go), and reloads — hard when a node joins or is lost, soft when
// crawlers change or a send fails.
package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Defaults of the hub's timings: how often spawns are polled and how many
// failed contacts remove a node. When a spawn stops a subscriber the hub no
// longer polls (orphan) and drops everything (detach) defaults to
// api.DefaultOrphanAfter and api.DefaultDetachAfter, shared with the spawn.
const (
	DefaultPollInterval = 2 * time.Second
	DefaultNodeFailures = 3
	// sendConcurrency bounds requests to different nodes in flight at once.
	sendConcurrency = 64
	// storeReadTimeout bounds a request that makes a spawn read the comment
	// store (recent comments, a lost node's usage): a cold Cassandra read
	// can take seconds, whatever the poll interval.
	storeReadTimeout = 10 * time.Second
)

// ErrUnknownNode is returned for a node id the hub does not know.
var ErrUnknownNode = errors.New("cluster: unknown node")

// Config configures a Hub.
type Config struct {
	Store        *sqlstore.Store
	Router       Router
	RoutingName  string
	NodeToken    string
	PollInterval time.Duration
	// PollTimeout bounds one request to a spawn; zero picks PollInterval.
	PollTimeout  time.Duration
	NodeFailures int
	OrphanAfter  time.Duration
	DetachAfter  time.Duration
	// LeaseTTL is how long a lease lasts; zero picks 3 poll intervals.
	LeaseTTL   time.Duration
	Logger     *slog.Logger
	HTTPClient *http.Client
	// Epoch is this leadership's epoch (api.NewEpoch of its term); empty
	// picks a new one of term 0.
	Epoch string
	// URL is where spawns and operators reach this hub (GET /v1/health
	// names it as the leader).
	URL string
	// GrantsFrom is when the hub may grant its first lease. Zero keeps the
	// restart rule: one lease lifetime after New, by when every lease a
	// previous leader granted has expired.
	GrantsFrom time.Time
	// LeadershipDeadline, when set, tells when this hub's leadership could
	// lapse (zero: never). No lease it grants outlives it, so a hub that
	// takes over after the lapse may grant at once.
	LeadershipDeadline func() time.Time
	// ProbeInterval is the pause between the quick probes that follow a
	// failed poll; zero picks DefaultProbeInterval, or half the poll
	// interval when that is shorter.
	ProbeInterval time.Duration
	// ComplianceInterval is how often the leader checks the stored items
	// of the kinds that declare a check with their services (X's batch
	// compliance API; compliance.go); zero never.
	ComplianceInterval time.Duration
	// Sources are the declarations of the source kinds the hub knows;
	// spawns add theirs when they register. Nil starts from the builtin
	// ones (api.BuiltinSources).
	Sources *api.SourceRegistry
}

// Hub is the control loop. Its methods are safe for concurrent use.
type Hub struct {
	// Its state is split by concern, each in the file of that name: the
	// spawns (nodes.go), the crawlers and users read from SQL (crawler.go,
	// sqlread.go), reloads (reload.go), leases (lease.go), usage
	// (usage.go), lost nodes' recovery (recovery.go), retractions
	// (retractions.go) and the events operators see (events.go).

	cfg Config
	// sources are the kinds' declarations (sources.go).
	sources *api.SourceRegistry
	epoch   string
	started time.Time
	logger  *slog.Logger
	// nodeOpts configure the client of every hub→spawn call.
	nodeOpts api.NodeOptions
	metrics  *metrics
	// run is Run's context and the goroutines it joins.
	run runState
	// reload serialises reloads and records the reload wanted (reload.go).
	reload reloadState
	// usage merges the increments of answers that arrive together
	// (usage.go).
	usage *collector
	// history is the comments per step, for the dashboard (history.go).
	history usageHistory
	// events are what operators see of the hub's decisions (events.go).
	events eventLog
	// retract is the log of what was taken back (retractions.go).
	retract *retractLog
	// complianceBusy is set while an X compliance run goes (compliance.go).
	complianceBusy atomic.Bool

	// mu guards the hub's picture of the cluster below; a method named
	// …Locked must be called with it held.
	mu sync.Mutex
	// nodes are the live spawns by id (nodes.go).
	nodes map[string]*node
	// crawlers, their users, and each user's crawlers, as read from SQL
	// with their live state (crawler.go, sqlread.go).
	crawlers map[int64]*crawler
	users    map[int64]*user
	byUser   map[int64][]*crawler
	// fleetHolders names, per fleet-scoped source kind, the node holding
	// its one connection (placement.go).
	fleetHolders map[string]string
	// grants is what lease grants wait for and reuse (lease.go).
	grants grantState
	// lost are the lost nodes whose usage is still to be read back or
	// whose lease accounts have not settled (recovery.go).
	lost lostNodes
}

// runState is Run's context, for the work a request starts in the
// background, and the goroutines Run joins before it returns. Requests
// arrive before Run starts as well as after (a spawn may register the
// moment the listener opens), so the context is read only through
// context, under a mutex of its own.
type runState struct {
	mu  sync.Mutex
	ctx context.Context // set by Run; nil before
	wg  sync.WaitGroup
}

// start records Run's context.
func (r *runState) start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctx = ctx
}

// context is Run's context, and whether Run has started; before it, a
// background context, so SQL calls made before Run get no nil context.
func (r *runState) context() (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil {
		return context.Background(), false
	}
	return r.ctx, true
}

// runContext is Run's context, or a background one before Run.
func (h *Hub) runContext() context.Context {
	ctx, _ := h.run.context()
	return ctx
}

// New builds a hub with a fresh epoch.
func New(cfg Config) (*Hub, error) {
	if cfg.Store == nil {
		return nil, errors.New("cluster: a store is required")
	}
	if cfg.Router == nil {
		cfg.Router = moduloRouter{}
		cfg.RoutingName = RoutingModulo
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = cfg.PollInterval
	}
	if cfg.NodeFailures <= 0 {
		cfg.NodeFailures = DefaultNodeFailures
	}
	if cfg.OrphanAfter <= 0 {
		cfg.OrphanAfter = api.DefaultOrphanAfter
	}
	if cfg.DetachAfter <= 0 {
		cfg.DetachAfter = api.DefaultDetachAfter
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 3 * cfg.PollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: nodeTransport()}
	}
	if cfg.Epoch == "" {
		cfg.Epoch = api.NewEpoch(0)
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = min(DefaultProbeInterval, cfg.PollInterval/2)
	}
	if cfg.Sources == nil {
		cfg.Sources = api.NewSourceRegistry(api.BuiltinSources()...)
	}
	return &Hub{
		cfg:     cfg,
		sources: cfg.Sources,
		epoch:   cfg.Epoch,
		started: time.Now(),
		logger:  cfg.Logger.With("component", "hub"),
		nodeOpts: api.NodeOptions{
			Token:      cfg.NodeToken,
			HTTPClient: cfg.HTTPClient,
			Timeouts: api.NodeTimeouts{
				Poll:        cfg.PollTimeout,
				Subscribers: cfg.PollTimeout,
				// Reading a lost node's usage back scans the store: it
				// is not bounded by how often nodes are polled.
				Recover:  max(cfg.PollTimeout, storeReadTimeout),
				Comments: max(2*cfg.PollTimeout, storeReadTimeout),
			},
			MaxAnswerBytes: maxAnswerBytes,
		},
		metrics:      newMetrics(),
		usage:        &collector{store: cfg.Store},
		reload:       reloadState{wake: make(chan struct{}, 1)},
		nodes:        map[string]*node{},
		crawlers:     map[int64]*crawler{},
		fleetHolders: map[string]string{},
		users:        map[int64]*user{},
		lost:         lostNodes{leased: map[string]map[int64]bool{}},
		retract:      newRetractLog(),
	}, nil
}

// Epoch identifies this run of the hub; spawns polled by another epoch
// re-register.
func (h *Hub) Epoch() string { return h.epoch }

// Run loads the crawlers and runs the poll and reload loops until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	h.run.start(ctx)
	if _, err := h.Reload(ctx, false); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while loading: not a failure
		}
		return err
	}
	h.wakeKnownNodes(ctx)
	h.run.wg.Add(4)
	go func() { defer h.run.wg.Done(); h.pollLoop(ctx) }()
	go func() { defer h.run.wg.Done(); h.reloadLoop(ctx) }()
	go func() { defer h.run.wg.Done(); h.pruneLoop(ctx) }()
	go func() { defer h.run.wg.Done(); h.complianceLoop(ctx) }()
	<-ctx.Done()
	h.run.wg.Wait()
	return nil
}
