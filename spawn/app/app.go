// Package app assembles a spawn from its settings: the comment store, the
// data source kinds, the node runtime and its HTTP server. The spawn binary
// and the end-to-end tests both start spawns through it.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/service"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/langid"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/queue"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/server"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/cassandra"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

// StoreDrainTimeout is how long a stopping spawn keeps writing counted
// comments after its data sources stopped.
const StoreDrainTimeout = 30 * time.Second

// DefaultDrainTimeout is how long a spawn given SIGTERM waits for the hub
// to move its crawlers to other spawns and acknowledge its usage before it
// stops anyway (--drain-timeout). A handover takes a few seconds; an AWS
// spot interruption leaves two minutes, which this, StoreDrainTimeout and
// the HTTP server's shutdown fit in.
const DefaultDrainTimeout = 60 * time.Second

// StopBudget is the longest a spawn takes to stop after SIGTERM at default
// settings: the drain, then the store drain, then the HTTP server's
// shutdown. A supervisor's stop timeout must exceed it.
const StopBudget = DefaultDrainTimeout + StoreDrainTimeout + httpx.ShutdownGrace

// Settings are the spawn's flags; each also reads BW_<NAME> and the --config
// YAML file.
type Settings struct {
	// Common are the flags the hub and the spawn share.
	service.Common

	Hub          string        `flag:"hub" env:"BW_HUB_URL,BW_HUB" usage:"URL of the hub, or of several hubs sharing a database, comma-separated (required; env BW_HUB_URL)"`
	Store        string        `flag:"store" usage:"comment store: file://DIR or cassandra://host[,host]/keyspace"`
	Queue        string        `flag:"queue" usage:"optional queue for stored comments: nats://host:port or tls://host:port (comma-separated for a cluster; nats://user:pass@host or nats://token@host for credentials)"`
	QueueCreds   string        `flag:"queue-creds" usage:"NATS credentials file (user JWT and nkey seed) for --queue"`
	QueueMaxAge  time.Duration `flag:"queue-max-age" usage:"how long the JetStream stream keeps a comment"`
	DrainTimeout time.Duration `flag:"drain-timeout" usage:"on SIGTERM, wait this long for the hub to move the spawn's crawlers elsewhere before stopping anyway"`
	HubCA        string        `flag:"hub-ca" usage:"PEM CA that signs the hubs' HTTPS certificates (default: the system's roots)"`

	// Sources are the settings of each source kind (their flags:
	// --feed-interval, --twitter-bearer-token, --bluesky, …).
	Sources

	// RetentionSweep is how often a file store drops the day files past
	// their crawlers' retention (Cassandra expires rows by itself).
	RetentionSweep time.Duration `flag:"retention-sweep" usage:"how often a file store drops day files past their crawlers' retention"`

	// NoSentiment turns off language detection and sentiment scoring
	// (docs/sentiment.md).
	NoSentiment bool `flag:"no-sentiment" usage:"neither detect comments' languages nor score their sentiment (saves the detector's memory)"`
}

// DefaultSettings are the spawn's defaults, which a config file, the
// environment and flags override (pkg/config).
func DefaultSettings() Settings {
	s := Settings{
		Common:         service.DefaultCommon("127.0.0.1:0"),
		Store:          "file://./data",
		QueueMaxAge:    queue.DefaultMaxAge,
		DrainTimeout:   DefaultDrainTimeout,
		RetentionSweep: node.DefaultRetentionSweep,
	}
	s.Sources.setDefaults()
	return s
}

// Spawn is a running spawn.
type Spawn struct {
	*service.Service
	Node  *node.Node
	addr  string
	url   string
	fence *node.FencedStore
	// drainTimeout bounds Drain (--drain-timeout).
	drainTimeout time.Duration
}

// Drain hands the spawn's crawlers to other spawns through the hub, for up
// to --drain-timeout, then stops it: what a spawn does on SIGTERM. It
// returns why the spawn stopped, as Stop does; a drain cut short by its
// timeout is logged, and the hub reads the usage the spawn could not
// report back from the store.
func (s *Spawn) Drain() error {
	timeout := s.drainTimeout
	if timeout <= 0 {
		timeout = DefaultDrainTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_ = s.Node.Drain(ctx) // logged by the node
	return s.Stop()
}

// Option changes how Start assembles a spawn beyond its settings: what
// tests need and an operator never sets.
type Option func(*options)

type options struct {
	wrapStore func(store.Store) store.Store
}

// WrapStore wraps the comment store the spawn writes to (a test makes it
// slow or failing); the write fence stays outside it.
func WrapStore(wrap func(store.Store) store.Store) Option {
	return func(o *options) { o.wrapStore = wrap }
}

// Start opens the store, binds the listener and runs the spawn until ctx
// ends or Stop is called.
func Start(ctx context.Context, cfg Settings, logger *slog.Logger, opts ...Option) (*Spawn, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tokens, err := httpx.CheckTokens(httpx.Token{Name: "BW_NODE_TOKEN (--node-token)", Value: cfg.NodeToken})
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	cfg.NodeToken = tokens[0]
	// The language detector's models load while the rest starts, and the
	// spawn takes no crawler before they are in: a comment's language is
	// detected from the first item on.
	var langs *langid.Detector
	if !cfg.NoSentiment {
		langs = langid.Default()
	}
	hubs, err := hubURLs(cfg.Hub)
	if err != nil {
		return nil, err
	}
	serverTLS, err := httpx.ServerTLS(httpx.TLSFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.ClientCA})
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	hubTLS, err := httpx.ClientTLS(httpx.TLSFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, CA: cfg.HubCA})
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	if hubTLS != nil {
		// TLS is configured: the hubs must be reached over it.
		for _, u := range hubs {
			if !strings.HasPrefix(u, "https://") {
				return nil, fmt.Errorf("spawn: hub URL %s is not https although TLS is configured (--hub-ca, --tls-cert)", u)
			}
		}
	}
	if cfg.Queue != "" {
		if _, err := queue.ParseURL(cfg.Queue); err != nil {
			return nil, err
		}
	}
	allow, err := netguard.ParseAllow(cfg.AllowTargets)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("spawn: unable to listen on %s: %w", cfg.Listen, err)
	}
	if err := httpx.CheckExposure(ln.Addr(), cfg.NodeToken != "", cfg.Insecure); err != nil {
		ln.Close()
		return nil, fmt.Errorf("spawn: %w", err)
	}
	hosts, err := httpx.NewHosts(ln.Addr(), []string{cfg.Advertise}, cfg.AllowedHosts)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("spawn: %w", err)
	}
	st, err := OpenStore(ctx, cfg.Store, logger)
	if err != nil {
		ln.Close()
		return nil, err
	}
	scheme := "http"
	if serverTLS != nil {
		scheme = "https"
	}
	advertise := cfg.Advertise
	if advertise == "" {
		advertise = scheme + "://" + ln.Addr().String()
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	// The spawn's metrics: the node's and the queue publisher's, on one
	// registry of this spawn's own.
	metrics := node.NewMetrics()
	if cfg.Queue != "" {
		// The writer retries a batch until the store and the queue both
		// take it; closing the wrapped store closes the queue after it.
		pub, err := queue.Connect(ctx, queue.Options{
			URL: cfg.Queue, CredsFile: cfg.QueueCreds, MaxAge: cfg.QueueMaxAge,
			Name: "blackwidow spawn " + advertise, Logger: logger, Registerer: metrics.Registry,
		})
		if err != nil {
			ln.Close()
			st.Close()
			return nil, err
		}
		st = queue.Wrap(st, pub)
	}
	sources, declared, err := source.Build(cfg.Sources.drivers(), source.Deps{Guard: netguard.Options{Allow: allow}, Logger: logger})
	if err != nil {
		ln.Close()
		st.Close()
		return nil, err
	}
	if o.wrapStore != nil {
		st = o.wrapStore(st)
	}
	// Writes obey the node's deadline, so a node cut off from the hub
	// stores nothing after the hub may have read its usage back.
	fenced := node.NewFencedStore(st)
	var client *http.Client
	if hubTLS != nil {
		client = &http.Client{Timeout: hubCallTimeout, Transport: &http.Transport{TLSClientConfig: hubTLS, Proxy: http.ProxyFromEnvironment}}
	}
	if langs != nil {
		began := time.Now()
		select {
		case <-langs.Ready():
			logger.Info("language models loaded", "took", time.Since(began).Round(time.Millisecond))
		case <-ctx.Done():
			ln.Close()
			st.Close()
			return nil, fmt.Errorf("spawn: stopped while the language models loaded: %w", ctx.Err())
		}
	}
	n, err := node.New(node.Config{
		HubURL: strings.Join(hubs, ","), AdvertiseURL: advertise, NodeToken: cfg.NodeToken, Sources: sources, Store: fenced, Logger: logger,
		OrphanAfter: cfg.OrphanAfter, DetachAfter: cfg.DetachAfter, Metrics: metrics, HTTPClient: client,
		Declared: declared, RetentionSweep: cfg.RetentionSweep, NoSentiment: cfg.NoSentiment,
	})
	if err != nil {
		ln.Close()
		st.Close()
		return nil, err
	}
	fenced.Bind(n)
	logger.Info("spawn listening", "addr", ln.Addr().String(), "advertise", advertise, "node_id", n.ID(), "hubs", strings.Join(hubs, ","), "tls", serverTLS != nil)

	srv := &server.Server{Node: n, Store: fenced, NodeToken: cfg.NodeToken, Logger: logger.With("component", "spawn"), Hosts: hosts}
	handler := srv.Handler()
	if cfg.ClientCA != "" {
		handler = httpx.RequireClientCert(hubOnly, handler)
	}
	s := &Spawn{Node: n, addr: ln.Addr().String(), url: scheme + "://" + ln.Addr().String(), fence: fenced, drainTimeout: cfg.DrainTimeout}
	s.Service = service.Start(ctx,
		func() error {
			logger.Info("spawn stopped", "node_id", n.ID())
			return st.Close()
		},
		func(ctx context.Context) error { return n.Run(ctx, StoreDrainTimeout) },
		func(ctx context.Context) error { return httpx.Serve(ctx, ln, handler) },
	)
	return s, nil
}

// URL is the spawn's own base URL, on its bound address (it may advertise
// another: --advertise).
func (s *Spawn) URL() string { return s.url }

// FencedComments is how many counted comments the spawn kept out of the
// store because it had lost the right to write them (node.FencedStore).
func (s *Spawn) FencedComments() int64 { return s.fence.Dropped() }

// hubCallTimeout bounds a call to a hub (registration) over TLS, as the
// node's default client does over plain HTTP.
const hubCallTimeout = 5 * time.Second

// hubOnly names the node API paths only a hub calls: everything but the
// open health and metrics endpoints.
func hubOnly(path string) bool {
	switch path {
	case "/healthz", "/metrics", api.PathHealth:
		return false
	}
	return true
}

// hubURLs checks --hub: one URL or several, comma-separated.
func hubURLs(raw string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(raw, ",") {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("spawn: hub URL %q must look like http(s)://host:port", u)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("spawn: --hub or BW_HUB_URL is required (the URL of the hub, e.g. http://127.0.0.1:8700, or of several hubs, comma-separated)")
	}
	return out, nil
}

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
