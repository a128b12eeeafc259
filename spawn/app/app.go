// Package app assembles a spawn from its settings: the comment store, the
// data source kinds, the node runtime and its HTTP server. The spawn binary
// and the end-to-end tests both start spawns through it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/service"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/rss"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/cassandra"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

// DrainTimeout is how long a stopping spawn keeps writing counted comments.
const DrainTimeout = 30 * time.Second

// Settings are the spawn's flags; each also reads BW_<NAME> and the --config
// YAML file.
type Settings struct {
	Hub          string        `flag:"hub" usage:"URL of the hub (required)"`
	Listen       string        `flag:"listen" usage:"address to serve the node API on"`
	Advertise    string        `flag:"advertise" usage:"URL the hub reaches this spawn at (default: derived from the bound address)"`
	Store        string        `flag:"store" usage:"comment store: file://DIR or cassandra://host[,host]/keyspace"`
	Queue        string        `flag:"queue" usage:"optional queue for stored comments: nats://host:port"`
	AllowTargets []string      `flag:"allow-targets" usage:"CIDRs crawl targets may be in although private or loopback"`
	FeedInterval time.Duration `flag:"feed-interval" usage:"how often a feed is fetched"`
	OrphanAfter  time.Duration `flag:"orphan-after" usage:"stop a subscriber not polled for this long (until the hub says otherwise)"`
	DetachAfter  time.Duration `flag:"detach-after" usage:"drop everything when the hub is silent this long (until the hub says otherwise)"`
	NodeToken    string        `flag:"node-token" usage:"shared token of hub-spawn calls (prefer BW_NODE_TOKEN)"`
	LogLevel     string        `flag:"log-level" usage:"debug, info, warn or error"`
	LogFormat    string        `flag:"log-format" usage:"text or json"`
}

// DefaultSettings are the spawn's defaults (DESIGN.md section 8).
func DefaultSettings() Settings {
	return Settings{
		Listen:       "127.0.0.1:0",
		Store:        "file://./data",
		FeedInterval: rss.DefaultInterval,
		OrphanAfter:  node.DefaultOrphanAfter,
		DetachAfter:  node.DefaultDetachAfter,
		LogLevel:     "info",
		LogFormat:    "text",
	}
}

// Logging names the log settings, for service.Main.
func (s *Settings) Logging() (string, string) { return s.LogLevel, s.LogFormat }

// Spawn is a running spawn.
type Spawn struct {
	*service.Service
	Node *node.Node
	addr string
}

// Start opens the store, binds the listener and runs the spawn until ctx
// ends or Stop is called.
func Start(ctx context.Context, cfg Settings, logger *slog.Logger) (*Spawn, error) {
	if cfg.Hub == "" {
		return nil, errors.New("spawn: --hub is required (the URL of the hub, e.g. http://127.0.0.1:8700)")
	}
	if cfg.Queue != "" {
		return nil, errors.New("spawn: --queue: publishing to a queue is not available in this build")
	}
	allow, err := netguard.ParseAllow(cfg.AllowTargets)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(ctx, cfg.Store, logger)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("spawn: unable to listen on %s: %w", cfg.Listen, err)
	}
	advertise := cfg.Advertise
	if advertise == "" {
		advertise = "http://" + ln.Addr().String()
	}
	sources := source.Registry{
		"rss": rss.New(rss.Options{Client: netguard.NewClient(netguard.Options{Allow: allow}), Interval: cfg.FeedInterval, Logger: logger}),
	}
	n, err := node.New(node.Config{
		HubURL: cfg.Hub, AdvertiseURL: advertise, NodeToken: cfg.NodeToken, Sources: sources, Store: st, Logger: logger,
		OrphanAfter: cfg.OrphanAfter, DetachAfter: cfg.DetachAfter,
	})
	if err != nil {
		ln.Close()
		st.Close()
		return nil, err
	}
	logger.Info("spawn listening", "addr", ln.Addr().String(), "advertise", advertise, "node_id", n.ID(), "hub", cfg.Hub)

	s := &Spawn{Node: n, addr: ln.Addr().String()}
	s.Service = service.Start(ctx,
		func() error {
			logger.Info("spawn stopped", "node_id", n.ID())
			return st.Close()
		},
		func(ctx context.Context) error { return n.Run(ctx, DrainTimeout) },
		func(ctx context.Context) error { return httpx.Serve(ctx, ln, n.Handler()) },
	)
	return s, nil
}

// URL is the spawn's base URL.
func (s *Spawn) URL() string { return "http://" + s.addr }

// ID is the spawn's node id.
func (s *Spawn) ID() string { return s.Node.ID() }

// OpenStore chooses the comment store from the --store URI.
func OpenStore(ctx context.Context, uri string, logger *slog.Logger) (store.Store, error) {
	switch {
	case strings.HasPrefix(uri, "file://"):
		dir, err := file.ParseURI(uri)
		if err != nil {
			return nil, err
		}
		return file.Open(dir)
	case strings.HasPrefix(uri, "cassandra://"):
		return cassandra.Open(ctx, uri, logger)
	}
	return nil, fmt.Errorf("spawn: --store must be file://DIR or cassandra://host[,host]/keyspace, got %q", uri)
}
