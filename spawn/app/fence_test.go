package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/faultproxy"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// stallStore is a store whose writes can be held: a held write waits until
// it is released or its context ends, like a slow database that honours
// the caller's deadline. A write released after its context ended is not
// made.
type stallStore struct {
	store.Store
	mu      sync.Mutex
	held    bool
	release chan struct{}
	waiting int // writes held now
}

func (s *stallStore) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held, s.release = true, make(chan struct{})
}

func (s *stallStore) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.held = false
		close(s.release)
	}
}

func (s *stallStore) waitingWrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

func (s *stallStore) wait(ctx context.Context) error {
	s.mu.Lock()
	if !s.held {
		s.mu.Unlock()
		return nil
	}
	release := s.release
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	select {
	case <-release:
		return ctx.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stallStore) Write(ctx context.Context, comments []api.Comment) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.Write(ctx, comments)
}

func (s *stallStore) WriteFresh(ctx context.Context, comments []api.Comment) ([]bool, error) {
	if err := s.wait(ctx); err != nil {
		return make([]bool, len(comments)), err
	}
	return s.Store.(store.FreshWriter).WriteFresh(ctx, comments)
}

func (s *stallStore) Intend(ctx context.Context, intents []store.Intent) error {
	return s.Store.(store.UsageJournal).Intend(ctx, intents)
}

func (s *stallStore) Recover(ctx context.Context, nodeID string, afterSeq uint64) ([]api.Increment, error) {
	return s.Store.(store.UsageJournal).Recover(ctx, nodeID, afterSeq)
}

// TestFence_CutOffSlowSpawnStoresNothingAfterItsUsageIsRecovered: a spawn
// holds counted comments in a stalled store write when the hub loses it.
// The hub moves the crawler, reads the lost spawn's usage back and gives
// its allowance to the new spawn. The stalled write must not land after
// that, nor after the spawn comes back: usage equals what is stored, within
// the limit.
func TestFence_CutOffSlowSpawnStoresNothingAfterItsUsageIsRecovered(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{})
	seed := uint64(time.Now().UnixNano())
	t.Logf("fault proxy seed: %d", seed)
	down := faultproxy.Start(t, "", seed)
	up := faultproxy.Start(t, c.Hub.URL(), seed+1)
	stall := &stallStore{}
	a := c.AddSpawn(func(cfg *spawnapp.Settings) {
		cfg.Hub, cfg.Advertise = up.URL(), down.URL()
	}, spawnapp.WrapStore(func(st store.Store) store.Store { stall.Store = st; return stall }))
	down.SetTarget(a.URL())
	c.WaitNodes(1)

	const limit = 50
	u, err := c.Client.CreateUser(c.Ctx, api.UserCreate{Name: "fenced"})
	if err != nil {
		t.Fatal(err)
	}
	// A feed of at most feedWindow items: what the lost spawn counted
	// has left it by the time another spawn reads it, so a late write of
	// those comments is no duplicate the store would ignore.
	const feedWindow = 100
	feeds, feedBase := feedserver.Start(t, feedserver.Options{MaxItems: feedWindow})
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{feedBase + "/feeds/fence.xml"}, CommentLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			feeds.Publish("fence", feedserver.Item{GUID: fmt.Sprintf("f%d", i), Title: "story", Description: "text", Published: base.Add(time.Duration(i) * time.Second)})
		}
	}
	usage := func() int64 {
		got, err := c.Client.GetCrawler(c.Ctx, cr.ID)
		if err != nil {
			return -1
		}
		return got.Usage
	}
	publish(0, 10)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the first comments counted", func() bool { return usage() == 10 })

	// The store stalls with counted comments in a write; then the link to
	// the hub is cut.
	stall.hold()
	publish(10, 20)
	testkit.WaitFor(t, clustertest.WaitTimeout, "a write stalled", func() bool { return stall.waitingWrites() > 0 })
	down.Cut()
	up.Cut()
	cut := time.Now()
	testkit.WaitFor(t, clustertest.WaitTimeout, "the cut-off spawn stops its subscriber", func() bool {
		h, ok := spawnHealth(a)
		return ok && len(h.Subscribers) == 0
	})
	publish(20, 20+feedWindow)
	c.AddSpawn(nil)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the cut-off spawn's usage read back", func() bool {
		events, err := c.Client.Events(c.Ctx)
		return err == nil && slices.ContainsFunc(events, func(e api.Event) bool { return e.Kind == "usage_recovered" })
	})
	t.Logf("usage recovered %s after the cut", time.Since(cut).Round(time.Millisecond))

	// The new spawn fills the allowance the lost one gave back.
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler at its limit", func() bool {
		got, err := c.Client.GetCrawler(c.Ctx, cr.ID)
		return err == nil && got.State == api.StateLimitReached
	})
	// Only now does the stalled store catch up and the link heal.
	stall.free()
	down.Heal()
	up.Heal()
	testkit.WaitFor(t, clustertest.WaitTimeout, "the cut-off spawn back, with nothing left to write", func() bool {
		nodes, err := c.Client.ListNodes(c.Ctx)
		return err == nil && len(nodes) == 2 && stall.waitingWrites() == 0
	})
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage equal to what is stored", func() bool {
		return int64(len(stored(t, c.StoreDir, cr.ID))) == usage()
	})
	n := len(stored(t, c.StoreDir, cr.ID))
	t.Logf("stored %d, usage %d, limit %d; the cut-off spawn dropped %d counted comments", n, usage(), limit, a.FencedComments())
	if n > limit {
		t.Fatalf("stored %d comments, over the limit of %d", n, limit)
	}
	if a.FencedComments() == 0 {
		t.Fatal("the stalled write was not fenced")
	}
}

// spawnHealth reads a spawn's whole health directly, not through its link.
func spawnHealth(s *spawnapp.Spawn) (api.SpawnHealth, bool) {
	req, err := http.NewRequest(http.MethodGet, s.URL()+api.PathHealth, nil)
	if err != nil {
		return api.SpawnHealth{}, false
	}
	req.Header.Set("Authorization", "Bearer "+clustertest.NodeToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return api.SpawnHealth{}, false
	}
	defer resp.Body.Close()
	var h api.SpawnHealth
	return h, resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil
}

// stored reads every complete comment line a file store holds for a
// crawler, each comment id once.
func stored(t *testing.T, dir string, crawlerID int64) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, fmt.Sprint(crawlerID), "*.jsonl"))
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		} else {
			b = nil
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			var cm api.Comment
			if len(line) == 0 || json.Unmarshal(line, &cm) != nil || seen[cm.ID] {
				continue
			}
			seen[cm.ID] = true
			out = append(out, cm.ID)
		}
	}
	return out
}
