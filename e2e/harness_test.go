// Package e2e starts real hubs and spawns on loopback ports in one test
// process (and, in binaries_test.go, as separate processes) against a local
// feed server, and checks the system's promises end to end.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/faultproxy"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// Test timings: the defaults scaled down twentyfold, so every recovery the
// tests wait for takes well under a second or two.
const (
	pollInterval = 100 * time.Millisecond
	orphanAfter  = 500 * time.Millisecond
	detachAfter  = 750 * time.Millisecond
	feedInterval = 50 * time.Millisecond
	waitTimeout  = 20 * time.Second
)

const (
	nodeToken  = "test-node-token"
	adminToken = "test-admin-token"
)

// waitFor polls cond until it holds or waitTimeout passes, and returns how
// long it took.
func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	return testkit.WaitFor(t, waitTimeout, what, cond)
}

// testLogger writes to the test log only when the test fails or -v is set.
func testLogger(t *testing.T, name string) *slog.Logger { return testkit.Logger(t, name) }

// cluster is a hub, its spawns, a feed server and an admin client.
type cluster struct {
	t        *testing.T
	ctx      context.Context
	hubCfg   hubapp.Settings
	hub      *hubapp.Hub
	spawns   []*spawnapp.Spawn
	feeds    *feedserver.Server
	feedBase string
	storeDir string
	storeURI string
	client   *api.Client
	// links are the fault proxies between the hub and each spawn, in the
	// order of spawns, when the cluster was built with proxied set.
	links   []*link
	proxied bool
}

// link is the pair of proxies a proxied spawn talks through: down carries
// the hub's calls to the spawn, up the spawn's registration with the hub.
type link struct {
	down, up *faultproxy.Proxy
}

// cut breaks the link both ways; heal restores it.
func (l *link) cut()  { l.down.Cut(); l.up.Cut() }
func (l *link) heal() { l.down.Heal(); l.up.Heal() }

// setFaults applies random faults to the hub's calls to the spawn (polls,
// sends, removals) and to the spawn's registrations.
func (l *link) setFaults(f faultproxy.Faults) { l.down.SetFaults(f); l.up.SetFaults(f) }

type clusterOpts struct {
	spawns  int
	routing string
	// store is the spawns' --store URI; empty means a file store in a
	// temporary directory.
	store string
	// detachAfter overrides the hub's detach_after (sent to spawns).
	detachAfter time.Duration
	// proxied puts a fault proxy between the hub and every spawn.
	proxied bool
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func newCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	feeds := feedserver.New(feedserver.Options{})
	fs := httptest.NewServer(feeds.Handler())
	t.Cleanup(fs.Close)

	c := &cluster{t: t, ctx: ctx, feeds: feeds, feedBase: fs.URL, storeDir: filepath.Join(dir, "data"), storeURI: o.store, proxied: o.proxied}
	if c.storeURI == "" {
		c.storeURI = "file://" + c.storeDir
	}
	c.hubCfg = hubapp.DefaultSettings()
	c.hubCfg.Listen = freeAddr(t)
	c.hubCfg.DB = "sqlite://" + filepath.Join(dir, "hub.db")
	c.hubCfg.PollInterval = pollInterval
	c.hubCfg.OrphanAfter = orphanAfter
	c.hubCfg.DetachAfter = detachAfter
	c.hubCfg.NodeToken = nodeToken
	c.hubCfg.AdminToken = adminToken
	if o.routing != "" {
		c.hubCfg.Routing = o.routing
	}
	if o.detachAfter > 0 {
		c.hubCfg.DetachAfter = o.detachAfter
	}
	c.startHub()
	c.client = api.NewClient(c.hub.URL(), adminToken, nil)
	for range o.spawns {
		c.addSpawn()
	}
	c.waitNodes(o.spawns)
	return c
}

func (c *cluster) startHub() {
	c.t.Helper()
	h, err := hubapp.Start(c.ctx, c.hubCfg, testLogger(c.t, "hub"))
	if err != nil {
		c.t.Fatal(err)
	}
	c.hub = h
	c.t.Cleanup(func() { _ = h.Stop() })
}

func (c *cluster) addSpawn() *spawnapp.Spawn {
	c.t.Helper()
	return c.addSpawnWith(nil)
}

// addSpawnWith starts a spawn with the test settings, changed by edit when
// it is not nil.
func (c *cluster) addSpawnWith(edit func(*spawnapp.Settings)) *spawnapp.Spawn {
	c.t.Helper()
	cfg := spawnapp.DefaultSettings()
	cfg.Hub = "http://" + c.hubCfg.Listen
	cfg.Store = c.storeURI
	cfg.AllowTargets = []string{"127.0.0.0/8"}
	cfg.FeedInterval = feedInterval
	cfg.OrphanAfter = orphanAfter
	cfg.DetachAfter = detachAfter
	cfg.NodeToken = nodeToken
	if edit != nil {
		edit(&cfg)
	}
	var l *link
	if c.proxied {
		l = c.newLink()
		cfg.Hub, cfg.Advertise = l.up.URL(), l.down.URL()
	}
	s, err := spawnapp.Start(c.ctx, cfg, testLogger(c.t, fmt.Sprintf("spawn%d", len(c.spawns)+1)))
	if err != nil {
		c.t.Fatal(err)
	}
	if l != nil {
		l.down.SetTarget(s.URL())
		c.links = append(c.links, l)
	}
	c.spawns = append(c.spawns, s)
	c.t.Cleanup(func() { _ = s.Stop() })
	return s
}

// newLink starts the two proxies of a spawn's link to the hub.
func (c *cluster) newLink() *link {
	c.t.Helper()
	seed := uint64(time.Now().UnixNano())
	c.t.Logf("fault proxy seed for spawn%d: %d", len(c.spawns)+1, seed)
	down, err := faultproxy.New("", seed)
	if err != nil {
		c.t.Fatal(err)
	}
	up, err := faultproxy.New("http://"+c.hubCfg.Listen, seed+1)
	if err != nil {
		down.Close()
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { down.Close(); up.Close() })
	return &link{down: down, up: up}
}

func (c *cluster) waitNodes(n int) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("%d nodes registered", n), func() bool {
		nodes, err := c.client.ListNodes(c.ctx)
		return err == nil && len(nodes) == n
	})
}

func (c *cluster) feedURL(name string) string { return c.feedBase + "/feeds/" + name + ".xml" }

func (c *cluster) user(limit int64) api.User {
	c.t.Helper()
	u, err := c.client.CreateUser(c.ctx, api.UserCreate{Name: "customer", CommentLimit: limit})
	if err != nil {
		c.t.Fatal(err)
	}
	return u
}

func (c *cluster) rssCrawler(userID int64, feeds []string, keywords []string, limit int64) api.Crawler {
	c.t.Helper()
	cr, err := c.client.CreateCrawler(c.ctx, api.CrawlerCreate{UserID: userID, Source: api.SourceRSS, Query: feeds, Keywords: keywords, CommentLimit: limit})
	if err != nil {
		c.t.Fatal(err)
	}
	return cr
}

func (c *cluster) crawler(id int64) api.Crawler {
	c.t.Helper()
	cr, err := c.client.GetCrawler(c.ctx, id)
	if err != nil {
		c.t.Fatal(err)
	}
	return cr
}

// spawnHealth reads a spawn's GET /v1/health over HTTP, as an operator would.
func spawnHealth(t *testing.T, s *spawnapp.Spawn) (api.SpawnHealth, bool) {
	t.Helper()
	resp, err := http.Get(s.URL() + api.PathHealth)
	if err != nil {
		return api.SpawnHealth{}, false
	}
	defer resp.Body.Close()
	var h api.SpawnHealth
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&h) != nil {
		return api.SpawnHealth{}, false
	}
	return h, true
}

// runningOn maps each crawler id to the spawns (by node id) whose health
// lists it as a subscriber.
func (c *cluster) runningOn(spawns ...*spawnapp.Spawn) map[int64][]string {
	if len(spawns) == 0 {
		spawns = c.spawns
	}
	out := map[int64][]string{}
	for _, s := range spawns {
		h, ok := spawnHealth(c.t, s)
		if !ok {
			continue
		}
		for _, sub := range h.Subscribers {
			out[sub.CrawlerID] = append(out[sub.CrawlerID], h.NodeID)
		}
	}
	return out
}

// storedComments reads every comment line the file store holds for a crawler.
func (c *cluster) storedComments(crawlerID int64) []api.Comment {
	c.t.Helper()
	return storedIn(c.t, c.storeDir, crawlerID)
}

// storedIn reads every complete comment line a file store directory holds
// for a crawler.
func storedIn(t *testing.T, dir string, crawlerID int64) []api.Comment {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, fmt.Sprint(crawlerID), "*.jsonl"))
	var out []api.Comment
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A line still being appended has no newline yet: skip it.
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		} else {
			b = nil
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var cm api.Comment
			if err := json.Unmarshal(line, &cm); err != nil {
				t.Fatalf("%s: bad line %q: %v", f, line, err)
			}
			out = append(out, cm)
		}
	}
	return out
}

// adminDo sends a raw admin request, for the bad-input tests.
func (c *cluster) adminDo(method, path, token, body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.ctx, method, c.hub.URL()+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
