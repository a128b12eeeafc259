// Package app assembles a hub from its settings: the SQL store, the
// leader election, the cluster control loop and the HTTP server. The hub
// binary and the end-to-end tests both start hubs through it.
package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/alert"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/leader"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/server"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/service"
)

// Settings are the hub's flags; each also reads BW_<NAME> and the --config
// YAML file.
type Settings struct {
	// Common are the flags the hub and the spawn share.
	service.Common

	DB           string        `flag:"db" usage:"database: sqlite://FILE or postgres://… (several hubs on one PostgreSQL database: one leads, the others stand by)"`
	Routing      string        `flag:"routing" usage:"subscriber routing: modulo or rendezvous"`
	PollInterval time.Duration `flag:"poll-interval" usage:"how often each spawn is polled"`
	NodeFailures int           `flag:"node-failures" usage:"failed polls and probes in a row before a node is removed"`
	LeaderLease  time.Duration `flag:"leader-lease" usage:"a standby takes over when the leader has not renewed its leadership for this long"`
	LeaderRenew  time.Duration `flag:"leader-renew" usage:"how often the leader renews its leadership (well inside --leader-lease)"`
	AdminToken   string        `flag:"admin-token" usage:"token of the admin API (prefer BW_ADMIN_TOKEN)"`
	NodeCA       string        `flag:"node-ca" usage:"PEM CA that signs the spawns' HTTPS certificates (default: --client-ca, else the system's roots)"`

	// ComplianceInterval is how often the leader checks stored X posts
	// with X's batch compliance API (0: never).
	ComplianceInterval time.Duration `flag:"compliance-interval" usage:"how often the leader checks stored X posts with X's batch compliance API through a spawn holding X API v2 credentials (0: never)"`

	// ScalingTarget feeds the autoscaling signal (GET /v1/scaling).
	ScalingTarget int `flag:"scaling-target" usage:"subscribers one spawn should run; GET /v1/scaling and bw_hub_desired_nodes ask for max(1, ceil(subscribers / this)) spawns"`

	// Alerts (hub/internal/alert).
	SMTPServer    string        `flag:"smtp-server" usage:"host:port of the SMTP server e-mail alerts go through (STARTTLS required)"`
	SMTPUser      string        `flag:"smtp-user" usage:"SMTP user name (AUTH PLAIN over STARTTLS)"`
	SMTPPassword  string        `flag:"smtp-password" usage:"SMTP password (prefer BW_SMTP_PASSWORD or BW_SMTP_PASSWORD_FILE)"`
	SMTPFrom      string        `flag:"smtp-from" usage:"sender address of e-mail alerts"`
	SMTPCA        string        `flag:"smtp-ca" usage:"PEM CA the SMTP server's certificate must chain to (default: the system's roots)"`
	AlertRetryMin time.Duration `flag:"alert-retry-min" usage:"wait before the first retry of a failed alert delivery; it doubles, with jitter, up to 30m, for 24h"`
}

// DefaultSettings are the hub's defaults, which a config file, the
// environment and flags override (pkg/config).
func DefaultSettings() Settings {
	return Settings{
		Common:       service.DefaultCommon("127.0.0.1:8700"),
		DB:           "sqlite://blackwidow.db",
		Routing:      cluster.RoutingModulo,
		PollInterval: cluster.DefaultPollInterval,
		NodeFailures: cluster.DefaultNodeFailures,
		LeaderLease:  leader.DefaultLease,
		LeaderRenew:  leader.DefaultRenew,

		ScalingTarget:      server.DefaultScalingTarget,
		AlertRetryMin:      alert.DefaultRetryMin,
		ComplianceInterval: cluster.DefaultComplianceInterval,
	}
}

// Hub is a running hub: the leader of its database, or a standby.
type Hub struct {
	*service.Service
	addr   string
	url    string
	cfg    Settings
	logger *slog.Logger
	store  *sqlstore.Store
	// sources are the source kinds' declarations: the builtin ones and
	// what spawns bring, kept across leadership terms.
	sources *api.SourceRegistry
	alerts  *alert.Service
	router  cluster.Router
	elector *leader.Elector
	nodeTLS *tls.Config  // hub→spawn calls
	hosts   *httpx.Hosts // the names the hub answers to (httpx.Guard)
	standby http.Handler

	mu      sync.Mutex
	cluster *cluster.Hub // while leading
	handler http.Handler // what the listener serves now
	pending *cluster.Hub // built by TryLead before the service started
}

// Start opens the database, binds the listener, takes the leadership when
// it may, and runs the hub until ctx ends or Stop is called.
func Start(ctx context.Context, cfg Settings, logger *slog.Logger) (*Hub, error) {
	tokens, err := httpx.CheckTokens(
		httpx.Token{Name: "BW_NODE_TOKEN (--node-token)", Value: cfg.NodeToken},
		httpx.Token{Name: "BW_ADMIN_TOKEN (--admin-token)", Value: cfg.AdminToken})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	cfg.NodeToken, cfg.AdminToken = tokens[0], tokens[1]
	if cfg.ScalingTarget < 1 {
		return nil, fmt.Errorf("hub: --scaling-target must be 1 or more, got %d", cfg.ScalingTarget)
	}
	router, err := cluster.NewRouter(cfg.Routing)
	if err != nil {
		return nil, err
	}
	allow, err := netguard.ParseAllow(cfg.AllowTargets)
	if err != nil {
		return nil, fmt.Errorf("hub: --allow-targets: %w", err)
	}
	serverTLS, err := httpx.ServerTLS(httpx.TLSFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.ClientCA})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	nodeCA := cfg.NodeCA
	if nodeCA == "" {
		nodeCA = cfg.ClientCA
	}
	nodeTLS, err := httpx.ClientTLS(httpx.TLSFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: nodeCA})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("hub: unable to listen on %s: %w", cfg.Listen, err)
	}
	if err := httpx.CheckExposure(ln.Addr(), cfg.AdminToken != "" && cfg.NodeToken != "", cfg.Insecure); err != nil {
		ln.Close()
		return nil, fmt.Errorf("hub: %w", err)
	}
	if cfg.AdminToken == "" || cfg.NodeToken == "" {
		logger.Warn("running without tokens: set BW_ADMIN_TOKEN and BW_NODE_TOKEN outside a local demo")
	}
	hosts, err := httpx.NewHosts(ln.Addr(), []string{cfg.Advertise}, cfg.AllowedHosts)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("hub: %w", err)
	}
	store, err := sqlstore.Open(ctx, cfg.DB, logger)
	if err != nil {
		ln.Close()
		return nil, err
	}
	scheme := "http"
	if serverTLS != nil {
		scheme = "https"
		ln = tls.NewListener(ln, serverTLS)
	}
	h := &Hub{addr: ln.Addr().String(), cfg: cfg, logger: logger, store: store, router: router, nodeTLS: nodeTLS, hosts: hosts,
		sources: api.NewSourceRegistry(api.BuiltinSources()...)}
	store.UseSources(h.sources)
	acfg := alert.Config{Store: store, Logger: logger, Allow: allow, NodeToken: cfg.NodeToken, RetryMin: cfg.AlertRetryMin,
		SMTP: alert.SMTP{Addr: cfg.SMTPServer, User: cfg.SMTPUser, Password: cfg.SMTPPassword, From: cfg.SMTPFrom, CAFile: cfg.SMTPCA}}
	if nodeTLS != nil {
		acfg.NodeHTTPClient = cluster.NodeHTTPClient(nodeTLS)
	}
	if h.alerts, err = alert.New(acfg); err != nil {
		ln.Close()
		store.Close()
		return nil, fmt.Errorf("hub: %w", err)
	}
	h.url = strings.TrimRight(cfg.Advertise, "/")
	if h.url == "" {
		h.url = scheme + "://" + h.addr
	}
	h.elector = leader.New(leader.Config{
		Store: store, URL: h.url, Lease: cfg.LeaderLease, Renew: cfg.LeaderRenew,
		Alone: store.Dialect() != sqlstore.DialectPostgres, Logger: logger,
	})
	h.standby = httpx.Guard(hosts, h.elector.StandbyHandler(leader.StandbyOptions{
		Routing: cfg.Routing, NodeToken: cfg.NodeToken, ClientCerts: cfg.ClientCA != "", Leading: h.Leading, Logger: logger,
	}))
	h.handler = h.standby

	// A hub alone on its database, or the first on a fresh one, leads
	// before Start returns, so its API works at once.
	first, won, err := h.elector.TryLead(ctx)
	if err != nil {
		ln.Close()
		store.Close()
		return nil, fmt.Errorf("hub: leader election: %w", err)
	}
	var firstTerm *leader.Term
	if won {
		if h.pending, err = h.becomeLeader(first); err != nil {
			ln.Close()
			store.Close()
			return nil, err
		}
		firstTerm = &first
	}
	role := api.RoleStandby
	if won {
		role = api.RoleLeader
	}
	logger.Info("hub listening", "addr", h.addr, "url", h.url, "role", role, "epoch", h.Epoch(), "db", sqlstore.Redact(cfg.DB), "routing", cfg.Routing, "tls", serverTLS != nil)

	h.Service = service.Start(ctx,
		func() error {
			logger.Info("hub stopped")
			return store.Close()
		},
		func(ctx context.Context) error { return h.elector.Run(ctx, firstTerm, h.lead) },
		func(ctx context.Context) error { return httpx.Serve(ctx, ln, http.HandlerFunc(h.serveHTTP)) },
	)
	return h, nil
}

// becomeLeader builds the control loop of a won term and serves its API.
func (h *Hub) becomeLeader(t leader.Term) (*cluster.Hub, error) {
	cfg := h.cfg
	ccfg := cluster.Config{
		Store: h.store, Router: h.router, RoutingName: cfg.Routing, NodeToken: cfg.NodeToken,
		PollInterval: cfg.PollInterval, NodeFailures: cfg.NodeFailures,
		OrphanAfter: cfg.OrphanAfter, DetachAfter: cfg.DetachAfter, Logger: h.logger,
		Epoch: t.Epoch, URL: h.url, LeadershipDeadline: h.elector.Deadline, GrantsFrom: t.GrantsFrom(time.Now()),
		ComplianceInterval: cfg.ComplianceInterval, Sources: h.sources,
	}
	if h.nodeTLS != nil {
		ccfg.HTTPClient = cluster.NodeHTTPClient(h.nodeTLS)
	}
	c, err := cluster.New(ccfg)
	if err != nil {
		return nil, err
	}
	srv := &server.Server{Hub: c, Store: h.store, AdminToken: cfg.AdminToken, NodeToken: cfg.NodeToken, Logger: h.logger,
		ScalingTarget: cfg.ScalingTarget, Alerts: h.alerts, Hosts: h.hosts}
	if h.nodeTLS != nil {
		srv.NodeHTTPClient = cluster.NodeHTTPClient(h.nodeTLS)
	}
	handler := srv.Handler()
	if cfg.ClientCA != "" {
		handler = httpx.RequireClientCert(func(path string) bool { return path == api.PathRegister || path == api.PathDrain }, handler)
	}
	h.mu.Lock()
	h.cluster, h.handler = c, handler
	h.mu.Unlock()
	h.logger.Info("leading", "term", t.Number, "epoch", t.Epoch, "grants_at_once", t.Lapsed)
	return c, nil
}

// lead runs the control loop of a won term until the leadership ends.
func (h *Hub) lead(ctx context.Context, t leader.Term) error {
	h.mu.Lock()
	c := h.pending
	h.pending = nil
	h.mu.Unlock()
	if c == nil || c.Epoch() != t.Epoch {
		var err error
		if c, err = h.becomeLeader(t); err != nil {
			return err
		}
	}
	// Alerts are evaluated and sent by the leader alone, under its term.
	actx, stopAlerts := context.WithCancel(ctx)
	alertsDone := make(chan struct{})
	go func() {
		defer close(alertsDone)
		_ = h.alerts.Run(actx, t.Number, c)
	}()
	err := c.Run(ctx)
	stopAlerts()
	<-alertsDone
	h.mu.Lock()
	h.cluster, h.handler = nil, h.standby
	h.mu.Unlock()
	return err
}

func (h *Hub) serveHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	handler := h.handler
	h.mu.Unlock()
	handler.ServeHTTP(w, r)
}

// Addr is the bound address.
func (h *Hub) Addr() string { return h.addr }

// URL is the hub's base URL (its --advertise URL when given).
func (h *Hub) URL() string { return h.url }

// Epoch identifies this hub's current leadership; empty on a standby.
func (h *Hub) Epoch() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.cluster != nil:
		return h.cluster.Epoch()
	case h.pending != nil:
		return h.pending.Epoch()
	}
	return ""
}

// Leading reports whether this hub leads now and its control loop runs.
// Parts that only the leader may run follow the elector instead
// (leader.Elector.Watch), which also tells them when that changes.
func (h *Hub) Leading() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cluster != nil
}
