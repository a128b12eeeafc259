// Package cluster is the hub's control loop, run by the leading hub: it
// knows the live spawns, routes every enabled crawler's subscriber to one of
// them, polls each spawn once per interval with one batched request, applies
// the usage the spawns report exactly once (usage.go), grants comment leases
// (lease.go), and reloads — hard when a node joins or is lost, soft when
// crawlers change or a send fails.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Defaults of the hub's timings: how often spawns are polled, when a spawn
// stops a subscriber the hub no longer polls (orphan) and drops everything
// (detach), and how many failed contacts remove a node.
const (
	DefaultPollInterval = 2 * time.Second
	DefaultOrphanAfter  = 10 * time.Second
	DefaultDetachAfter  = 15 * time.Second
	DefaultNodeFailures = 3
	// sendConcurrency bounds requests to different nodes in flight at once.
	sendConcurrency = 64
	// eventsKept is how many recent events the hub remembers for operators.
	eventsKept = 200
	// storeReadTimeout bounds a request that makes a spawn read the comment
	// store (recent comments, a lost node's usage): a cold Cassandra read
	// can take seconds, whatever the poll interval.
	storeReadTimeout = 10 * time.Second
	// maxDetachReason bounds the reason a spawn gives for a detach.
	maxDetachReason = 500
)

// Connections to spawns. The hub talks to every node once per poll
// interval, so it keeps one or two connections to each open instead of the
// default transport's 100 idle connections in all, which a cluster of
// hundreds of nodes would churn through every round.
const (
	nodeIdlePerHost = 2
	nodeIdleTimeout = 90 * time.Second
	nodeDialTimeout = 5 * time.Second
)

func nodeTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil, // spawns are reached directly, never through HTTP_PROXY
		DialContext:         (&net.Dialer{Timeout: nodeDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no cap across hosts
		MaxIdleConnsPerHost: nodeIdlePerHost,
		IdleConnTimeout:     nodeIdleTimeout,
		ForceAttemptHTTP2:   false,
	}
}

// NodeHTTPClient is the client of hub→spawn calls over TLS: the spawns'
// CA and the certificate the hub presents to spawns that ask for one.
func NodeHTTPClient(tlsCfg *tls.Config) *http.Client {
	t := nodeTransport()
	t.TLSClientConfig = tlsCfg
	return &http.Client{Transport: t}
}

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
	cfg Config
	// sources are the kinds' declarations (sources.go).
	sources *api.SourceRegistry
	epoch   string
	started time.Time
	logger  *slog.Logger
	// nodeOpts configure the client of every hub→spawn call.
	nodeOpts api.NodeOptions
	metrics  *metrics
	// usage merges the increments of answers that arrive together.
	usage *collector

	reloadMu sync.Mutex    // one reload at a time
	view     sqlView       // guarded by reloadMu: how far SQL was read (sqlread.go)
	wake     chan struct{} // a soft reload is wanted
	hardWant bool          // guarded by mu: the wanted reload is hard

	mu       sync.Mutex
	nodes    map[string]*node
	crawlers map[int64]*crawler
	// fleetHolders names, per fleet-scoped source kind, the node holding
	// its one connection (placement.go).
	fleetHolders map[string]string
	byUser       map[int64][]*crawler
	users        map[int64]*user
	events       []api.Event
	history      usageHistory // comments per step, for the dashboard
	// recoveries are lost nodes whose unreported usage is still to be
	// read back from the comment store.
	recoveries []recovery
	userTotals map[int64]*userTotal // see userTotalLocked
	// prior are the previous run's spawns still to report what they
	// counted under its leases; no lease is granted until they have.
	prior priorSpawns
	// lostLeased keeps, per lost node, the crawlers that may still hold
	// lease accounts on it (its leased set when it was lost), for its
	// recovery and its registering again; pruneLostLocked drops what
	// settled.
	lostLeased map[string]map[int64]bool
	// resendDue says a send failed since the last reload began.
	resendDue bool
	wg        sync.WaitGroup
	ctx       context.Context
	// retract is the log of what was taken back (retractions.go).
	retract *retractLog
	// complianceBusy is set while an X compliance run goes (compliance.go).
	complianceBusy atomic.Bool
}

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
	// draining is set when the node drains (drain.go), at drainStart;
	// keep are the crawlers routed elsewhere that it runs until their new
	// node does.
	draining   bool
	drainStart time.Time
	keep       map[int64]*crawler
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

// crawler is a crawler's configuration and live state. A hub holds a
// million of them: keep it small.
type crawler struct {
	row     sqlstore.Crawler
	limited bool // the subscriber counts against leases (respecLocked)
	// node is where it is routed, the node whose wanted set holds it
	// (wantLocked); nil when it is inactive or no node offers its source.
	node *node
	// sentTo is the node a send of it last succeeded to, whose sent set
	// holds it (sentToLocked); sentVersion is the version sent.
	sentTo      *node
	sentVersion int64
	needSend    bool
	// leaving is the draining node that still runs the crawler until
	// its new node does (drain.go); nil otherwise.
	leaving *node
	state   string
	err     string
	rate    float64
	leases  leaseBook
	// quuid is row.QueryUUID parsed (queryUUID) while quuidState is
	// quuidParsed; upsertCrawlerLocked forgets it when the row changes.
	quuid      uuid.UUID
	quuidState int8
	// heard is the status heardFrom (a node registration) last reported,
	// taken again for every answer that leaves it out as unchanged;
	// heardIn is that answer's number.
	heard     heardStatus
	heardFrom *node
	heardIn   uint64
}

// heardStatus is what the hub keeps of a subscriber's last status.
type heardStatus struct {
	state    string
	err      string
	rate     float64
	version  int64
	instance uint64
	reserved int64
	live     bool
}

// States of crawler.quuid.
const (
	quuidUnknown int8 = iota
	quuidParsed
	quuidInvalid
)

// queryUUID is the crawler's query uuid, parsed once per row.
func (c *crawler) queryUUID() (uuid.UUID, error) {
	switch c.quuidState {
	case quuidParsed:
		return c.quuid, nil
	case quuidUnknown:
		q, err := uuid.Parse(c.row.QueryUUID)
		if err == nil {
			c.quuid, c.quuidState = q, quuidParsed
			return q, nil
		}
		c.quuidState = quuidInvalid
	}
	_, err := uuid.Parse(c.row.QueryUUID)
	return uuid.UUID{}, err
}

// nodeID is the id of the node the crawler is routed to, "" when none.
func (c *crawler) nodeID() string {
	if c.node == nil {
		return ""
	}
	return c.node.id
}

// sentID is the id of the node a send of the crawler last succeeded to,
// "" when none.
func (c *crawler) sentID() string {
	if c.sentTo == nil {
		return ""
	}
	return c.sentTo.id
}

// sentToLocked records that a send of the crawler to n (nil: nowhere)
// succeeded, keeping the node's index of what was sent there.
func (h *Hub) sentToLocked(c *crawler, n *node) {
	if c.sentTo != nil {
		delete(c.sentTo.sent, c.row.ID)
	}
	c.sentTo = n
	if n != nil {
		n.sent[c.row.ID] = c
	}
}

// askAllLocked makes the node's next poll ask for every status.
func (n *node) askAllLocked() {
	n.statusBase = 0
	n.baseResets++
}

type user struct {
	row sqlstore.User
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
		cfg.OrphanAfter = DefaultOrphanAfter
	}
	if cfg.DetachAfter <= 0 {
		cfg.DetachAfter = DefaultDetachAfter
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
		wake:         make(chan struct{}, 1),
		nodes:        map[string]*node{},
		crawlers:     map[int64]*crawler{},
		fleetHolders: map[string]string{},
		users:        map[int64]*user{},
		lostLeased:   map[string]map[int64]bool{},
		retract:      newRetractLog(),
	}, nil
}

// Epoch identifies this run of the hub; spawns polled by another epoch
// re-register.
func (h *Hub) Epoch() string { return h.epoch }

// Run loads the crawlers and runs the poll and reload loops until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	if _, err := h.Reload(ctx, false); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while loading: not a failure
		}
		return err
	}
	h.wakeKnownNodes(ctx)
	h.wg.Add(4)
	go func() { defer h.wg.Done(); h.pollLoop(ctx) }()
	go func() { defer h.wg.Done(); h.reloadLoop(ctx) }()
	go func() { defer h.wg.Done(); h.pruneLoop(ctx) }()
	go func() { defer h.wg.Done(); h.complianceLoop(ctx) }()
	<-ctx.Done()
	h.wg.Wait()
	return nil
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
	h.hardWant = h.hardWant || hard
	select {
	case h.wake <- struct{}{}:
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
		case <-h.wake:
		case <-retry.C:
			// Re-send what failed, even when no event asked for it,
			// and read all of SQL again when that is due.
			if !h.takeResendDue() && !h.fullReadDue() {
				continue
			}
		}
		h.mu.Lock()
		hard := h.hardWant
		h.hardWant = false
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
	due := h.resendDue
	h.resendDue = false
	return due
}

func (h *Hub) eventLocked(kind, msg string) {
	h.events = append(h.events, api.Event{Time: time.Now().UTC(), Kind: kind, Message: msg})
	if len(h.events) > eventsKept {
		h.events = slices.Delete(h.events, 0, len(h.events)-eventsKept)
	}
}

// Events returns the recent events, oldest first.
func (h *Hub) Events() []api.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// ctxOrBackground keeps a nil context out of SQL calls made before Run.
func ctxOrBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
