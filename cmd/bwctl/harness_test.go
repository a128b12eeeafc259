package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// Test timings: polls and fetches are fast so a cluster settles in well
// under a second, while the orphan and detach timeouts leave room for a
// slow poll under the race detector, which these tests do not exercise.
const (
	pollInterval = 200 * time.Millisecond
	orphanAfter  = 2 * time.Second
	detachAfter  = 3 * time.Second
	feedInterval = 50 * time.Millisecond
	waitTimeout  = 15 * time.Second
)

const (
	testToken = "admin-secret"
	nodeToken = "node-secret"
)

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, waitTimeout, what, cond)
}

// testLogger writes to the test log; a hub started for a fuzz target logs
// nowhere.
func testLogger(tb testing.TB, name string) *slog.Logger { return testkit.Logger(tb, name) }

// startHub starts a hub on a free loopback port with a fresh SQLite
// database, changed by edit when it is not nil, and stops it when the test
// ends.
func startHub(tb testing.TB, edit func(*hubapp.Settings)) *hubapp.Hub {
	tb.Helper()
	cfg := hubapp.DefaultSettings()
	cfg.Listen = "127.0.0.1:0"
	cfg.DB = "sqlite://" + filepath.Join(tb.TempDir(), "hub.db")
	cfg.AdminToken = testToken
	cfg.NodeToken = nodeToken
	cfg.PollInterval = pollInterval
	cfg.OrphanAfter = orphanAfter
	cfg.DetachAfter = detachAfter
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := hubapp.Start(ctx, cfg, testLogger(tb, "hub"))
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := h.Stop(); err != nil {
			tb.Errorf("hub stopped with %v", err)
		}
		cancel()
	})
	return h
}

// startSpawn starts a spawn that registers with the hub at hubURL and keeps
// comments in the file store under storeDir (spawns of one cluster share
// it), and stops it when the test ends.
func startSpawn(t *testing.T, hubURL, storeDir string) *spawnapp.Spawn {
	t.Helper()
	cfg := spawnapp.DefaultSettings()
	cfg.Hub = hubURL
	cfg.Store = "file://" + storeDir
	cfg.NodeToken = nodeToken
	cfg.AllowTargets = []string{"127.0.0.0/8"} // the feed server is on loopback
	cfg.FeedInterval = feedInterval
	cfg.OrphanAfter = orphanAfter
	cfg.DetachAfter = detachAfter
	ctx, cancel := context.WithCancel(context.Background())
	s, err := spawnapp.Start(ctx, cfg, testLogger(t, "spawn"))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("spawn stopped with %v", err)
		}
		cancel()
	})
	return s
}

// startFeeds starts a local feed server and returns it with its base URL.
func startFeeds(t *testing.T) (*feedserver.Server, string) {
	t.Helper()
	feeds := feedserver.New(feedserver.Options{})
	srv := httptest.NewServer(feeds.Handler())
	t.Cleanup(srv.Close)
	return feeds, srv.URL
}

// adminClient talks to a hub's admin API directly, to set up a test or read
// back what a bwctl command changed.
func adminClient(h *hubapp.Hub) *api.Client {
	return api.NewClient(h.URL(), testToken, nil)
}
