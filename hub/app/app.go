// Package app assembles a hub from its settings: the SQL store, the cluster
// control loop and the HTTP server. The hub binary and the end-to-end tests
// both start hubs through it.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/server"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/service"
)

// Settings are the hub's flags; each also reads BW_<NAME> and the --config
// YAML file.
type Settings struct {
	Listen       string        `flag:"listen" usage:"address to serve the admin and node APIs on"`
	DB           string        `flag:"db" usage:"database: sqlite://FILE or postgres://…"`
	Routing      string        `flag:"routing" usage:"subscriber routing: modulo or rendezvous"`
	PollInterval time.Duration `flag:"poll-interval" usage:"how often each spawn is polled"`
	OrphanAfter  time.Duration `flag:"orphan-after" usage:"a spawn stops a subscriber the hub has not polled for this long"`
	DetachAfter  time.Duration `flag:"detach-after" usage:"a spawn the hub has not contacted for this long drops everything and registers again"`
	NodeFailures int           `flag:"node-failures" usage:"failed polls in a row before a node is removed"`
	NodeToken    string        `flag:"node-token" usage:"shared token of hub-spawn calls (prefer BW_NODE_TOKEN)"`
	AdminToken   string        `flag:"admin-token" usage:"token of the admin API (prefer BW_ADMIN_TOKEN)"`
	LogLevel     string        `flag:"log-level" usage:"debug, info, warn or error"`
	LogFormat    string        `flag:"log-format" usage:"text or json"`

	// ScalingTarget feeds the autoscaling signal (GET /v1/scaling).
	ScalingTarget int `flag:"scaling-target" usage:"subscribers one spawn should run; GET /v1/scaling and bw_hub_desired_nodes ask for max(1, ceil(subscribers / this)) spawns"`
}

// DefaultSettings are the hub's defaults (DESIGN.md section 8).
func DefaultSettings() Settings {
	return Settings{
		Listen:       "127.0.0.1:8700",
		DB:           "sqlite://blackwidow.db",
		Routing:      cluster.RoutingModulo,
		PollInterval: cluster.DefaultPollInterval,
		OrphanAfter:  cluster.DefaultOrphanAfter,
		DetachAfter:  cluster.DefaultDetachAfter,
		NodeFailures: cluster.DefaultNodeFailures,
		LogLevel:     "info",
		LogFormat:    "text",

		ScalingTarget: server.DefaultScalingTarget,
	}
}

// Logging names the log settings, for service.Main.
func (s *Settings) Logging() (string, string) { return s.LogLevel, s.LogFormat }

// Hub is a running hub.
type Hub struct {
	*service.Service
	addr  string
	epoch string
}

// Start opens the database, binds the listener and runs the hub until ctx
// ends or Stop is called.
func Start(ctx context.Context, cfg Settings, logger *slog.Logger) (*Hub, error) {
	if cfg.ScalingTarget < 1 {
		return nil, fmt.Errorf("hub: --scaling-target must be 1 or more, got %d", cfg.ScalingTarget)
	}
	router, err := cluster.NewRouter(cfg.Routing)
	if err != nil {
		return nil, err
	}
	store, err := sqlstore.Open(ctx, cfg.DB, logger)
	if err != nil {
		return nil, err
	}
	c, err := cluster.New(cluster.Config{
		Store: store, Router: router, RoutingName: cfg.Routing, NodeToken: cfg.NodeToken,
		PollInterval: cfg.PollInterval, NodeFailures: cfg.NodeFailures,
		OrphanAfter: cfg.OrphanAfter, DetachAfter: cfg.DetachAfter, Logger: logger,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("hub: unable to listen on %s: %w", cfg.Listen, err)
	}
	if cfg.AdminToken == "" || cfg.NodeToken == "" {
		logger.Warn("running without tokens: set BW_ADMIN_TOKEN and BW_NODE_TOKEN outside a local demo")
	}
	srv := &server.Server{Hub: c, Store: store, AdminToken: cfg.AdminToken, NodeToken: cfg.NodeToken, Logger: logger,
		ScalingTarget: cfg.ScalingTarget}
	logger.Info("hub listening", "addr", ln.Addr().String(), "epoch", c.Epoch(), "db", sqlstore.Redact(cfg.DB), "routing", cfg.Routing)

	h := &Hub{addr: ln.Addr().String(), epoch: c.Epoch()}
	h.Service = service.Start(ctx,
		func() error {
			logger.Info("hub stopped")
			return store.Close()
		},
		c.Run,
		func(ctx context.Context) error { return httpx.Serve(ctx, ln, srv.Handler()) },
	)
	return h, nil
}

// Addr is the bound address.
func (h *Hub) Addr() string { return h.addr }

// URL is the hub's base URL.
func (h *Hub) URL() string { return "http://" + h.addr }

// Epoch identifies this run of the hub.
func (h *Hub) Epoch() string { return h.epoch }
