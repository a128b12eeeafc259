// Package clustertest runs a Black Widow cluster inside a test process: a
// hub and spawns (hub/app, spawn/app) on loopback ports, a local feed
// server, and an admin client, with timings scaled down so that polls,
// failures and recoveries take well under a second. The end-to-end tests
// and bwctl's tests share it; each adds its own checks on top.
package clustertest

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// Tokens of every test cluster: spawns register with NodeToken, the admin
// client uses AdminToken.
const (
	NodeToken  = "test-cluster-node-token"
	AdminToken = "test-cluster-admin-token"
)

// WaitTimeout bounds every condition a cluster test waits for.
const WaitTimeout = 20 * time.Second

// Timings are a cluster's intervals and timeouts.
type Timings struct {
	Poll         time.Duration // the hub's poll interval
	OrphanAfter  time.Duration // hub and spawns
	DetachAfter  time.Duration // hub and spawns
	FeedInterval time.Duration // how often a spawn polls a feed
}

// Fast is the defaults scaled down twentyfold, so every recovery a test
// waits for takes well under a second or two.
var Fast = Timings{
	Poll:         100 * time.Millisecond,
	OrphanAfter:  500 * time.Millisecond,
	DetachAfter:  750 * time.Millisecond,
	FeedInterval: 50 * time.Millisecond,
}

// Options configure a cluster. The zero value is a hub with no spawns and
// Fast timings.
type Options struct {
	// Spawns is how many spawns New starts and waits for.
	Spawns int
	// Timings are the cluster's; zero means Fast.
	Timings Timings
	// Store is the spawns' --store URI; empty means a file store in a
	// temporary directory (Cluster.StoreDir), shared by all spawns.
	Store string
	// Hub, when not nil, changes the hub's settings before it starts.
	Hub func(*hubapp.Settings)
	// CA, when set, is the PEM CA that signs the certificate a Hub edit
	// gave the hub (--tls-cert): the admin client and the spawns trust it.
	CA string
}

// Cluster is a running hub, its spawns, a feed server and an admin client.
// Everything stops when the test ends. Its methods must be called from the
// test's goroutine.
type Cluster struct {
	tb      testing.TB
	timings Timings
	ca      string

	// Ctx ends when the test does.
	Ctx context.Context
	// HubSettings are what StartHub starts the hub with; after the first
	// start Listen is the hub's address, so a restarted hub keeps it.
	HubSettings hubapp.Settings
	// Hub is the hub running now.
	Hub *hubapp.Hub
	// Spawns are the spawns started so far, in order, stopped ones
	// included.
	Spawns []*spawnapp.Spawn
	// Feeds is the local feed server, at FeedBase.
	Feeds    *feedserver.Server
	FeedBase string
	// StoreURI is the spawns' store; StoreDir the directory of the
	// default file store.
	StoreURI string
	StoreDir string
	// Client is an admin client of the hub.
	Client *api.Client
}

// New starts a feed server, a hub and o.Spawns spawns, and waits until the
// spawns have registered.
func New(tb testing.TB, o Options) *Cluster {
	tb.Helper()
	if o.Timings == (Timings{}) {
		o.Timings = Fast
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	dir := tb.TempDir()
	feeds, feedBase := feedserver.Start(tb, feedserver.Options{})
	c := &Cluster{tb: tb, timings: o.Timings, ca: o.CA, Ctx: ctx, Feeds: feeds, FeedBase: feedBase,
		StoreURI: o.Store, StoreDir: filepath.Join(dir, "data")}
	if c.StoreURI == "" {
		c.StoreURI = "file://" + c.StoreDir
	}
	cfg := hubapp.DefaultSettings()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = "sqlite://" + filepath.Join(dir, "hub.db")
	cfg.PollInterval = o.Timings.Poll
	cfg.OrphanAfter = o.Timings.OrphanAfter
	cfg.DetachAfter = o.Timings.DetachAfter
	cfg.NodeToken = NodeToken
	cfg.AdminToken = AdminToken
	if o.Hub != nil {
		o.Hub(&cfg)
	}
	c.HubSettings = cfg
	c.StartHub()
	var httpClient *http.Client
	if o.CA != "" {
		tlsCfg, err := httpx.ClientTLS(httpx.TLSFiles{CA: o.CA})
		if err != nil {
			tb.Fatal(err)
		}
		httpClient = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	}
	c.Client = api.NewClient(c.Hub.URL(), AdminToken, httpClient)
	for range o.Spawns {
		c.AddSpawn(nil)
	}
	c.WaitNodes(o.Spawns)
	return c
}

// StartHub starts the hub with HubSettings, again after it was stopped: on
// the same address and database, with a new epoch. It stops it when the
// test ends.
func (c *Cluster) StartHub() {
	c.tb.Helper()
	h, err := hubapp.Start(c.Ctx, c.HubSettings, testkit.Logger(c.tb, "hub"))
	if err != nil {
		c.tb.Fatal(err)
	}
	c.Hub = h
	c.HubSettings.Listen = h.Addr()
	c.tb.Cleanup(func() {
		if err := h.Stop(); err != nil {
			c.tb.Errorf("hub stopped with %v", err)
		}
	})
}

// SpawnSettings are the settings AddSpawn starts a spawn with: registered
// with the hub, the cluster's store, timings and node token, and crawl
// targets on loopback allowed (the feed server is there).
func (c *Cluster) SpawnSettings() spawnapp.Settings {
	cfg := spawnapp.DefaultSettings()
	cfg.Hub = c.Hub.URL()
	cfg.Store = c.StoreURI
	cfg.NodeToken = NodeToken
	cfg.AllowTargets = []string{"127.0.0.0/8"}
	cfg.RSS.Interval = c.timings.FeedInterval
	cfg.OrphanAfter = c.timings.OrphanAfter
	cfg.DetachAfter = c.timings.DetachAfter
	cfg.HubCA = c.ca
	return cfg
}

// AddSpawn starts a spawn with SpawnSettings, changed by edit when it is
// not nil, and opts, appends it to Spawns and stops it when the test ends.
// It does not wait for the spawn to register.
func (c *Cluster) AddSpawn(edit func(*spawnapp.Settings), opts ...spawnapp.Option) *spawnapp.Spawn {
	c.tb.Helper()
	cfg := c.SpawnSettings()
	if edit != nil {
		edit(&cfg)
	}
	s, err := spawnapp.Start(c.Ctx, cfg, testkit.Logger(c.tb, fmt.Sprintf("spawn%d", len(c.Spawns)+1)), opts...)
	if err != nil {
		c.tb.Fatal(err)
	}
	c.Spawns = append(c.Spawns, s)
	c.tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			c.tb.Errorf("spawn stopped with %v", err)
		}
	})
	return s
}

// WaitNodes waits until the hub lists n nodes.
func (c *Cluster) WaitNodes(n int) {
	c.tb.Helper()
	testkit.WaitFor(c.tb, WaitTimeout, fmt.Sprintf("%d nodes registered", n), func() bool {
		nodes, err := c.Client.ListNodes(c.Ctx)
		return err == nil && len(nodes) == n
	})
}

// FeedURL is the RSS URL of a feed of the feed server.
func (c *Cluster) FeedURL(name string) string { return c.FeedBase + "/feeds/" + name + ".xml" }
