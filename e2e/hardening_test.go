package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit/clustertest"
)

// healthAt reads the spawn health document at base, giving up after
// timeout.
func healthAt(base string, timeout time.Duration) (api.SpawnHealth, bool) {
	c := http.Client{Timeout: timeout}
	resp, err := c.Get(base + api.PathHealth)
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

// placementAt maps each crawler to the nodes whose health lists it.
func placementAt(urls ...string) map[int64][]string {
	out := map[int64][]string{}
	for _, u := range urls {
		h, ok := healthAt(u, time.Second)
		if !ok {
			continue
		}
		for _, s := range h.Subscribers {
			out[s.CrawlerID] = append(out[s.CrawlerID], h.NodeID)
		}
	}
	return out
}

// TestHardening_FrozenSpawnDropsItsCrawlersWhenResumed stops a spawn process
// with SIGSTOP past detach_after while the hub polls it, so polls the hub
// gave up on wait in its socket buffers, and resumes it with SIGCONT. The
// hub has moved its crawlers meanwhile; the resumed spawn must not run them
// beside their new node: no crawler runs on two nodes for more than a
// second after the resume (with orphan_after of 2 s, taking the buffered
// polls for fresh would keep them running twice for 2 s).
func TestHardening_FrozenSpawnDropsItsCrawlersWhenResumed(t *testing.T) {
	bin := binDir(t)
	timings := clustertest.Timings{Poll: 200 * time.Millisecond, OrphanAfter: 2 * time.Second, DetachAfter: 3 * time.Second, FeedInterval: 100 * time.Millisecond}
	c := clustertest.New(t, clustertest.Options{Spawns: 1, Timings: timings})
	survivor := c.Spawns[0].URL()

	addr := testkit.FreeAddr(t)
	frozen := startProc(t, []string{"BW_NODE_TOKEN=" + clustertest.NodeToken}, filepath.Join(bin, "spawn"),
		"--hub", c.Hub.URL(), "--listen", addr, "--store", c.StoreURI, "--allow-targets", "127.0.0.0/8", "--feed-interval", timings.FeedInterval.String())
	victim := "http://" + addr
	c.WaitNodes(2)

	u, err := c.Client.CreateUser(c.Ctx, api.UserCreate{Name: "customer"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 12 {
		cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{c.FeedURL(fmt.Sprintf("frozen%d", i))}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.ID)
	}
	var onVictim int
	testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler on one node, some on the spawn to freeze", func() bool {
		on := placementAt(survivor, victim)
		h, ok := healthAt(victim, time.Second)
		onVictim = len(h.Subscribers)
		return ok && onVictim > 0 && onOne(on, ids)
	})

	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = frozen.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	freeze := 2 * timings.DetachAfter
	t.Logf("stopped a spawn running %d of %d crawlers, for %s", onVictim, len(ids), freeze)
	testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler moved to the survivor and the freeze over", func() bool {
		h, ok := healthAt(survivor, time.Second)
		if !ok || len(h.Subscribers) != len(ids) {
			return false
		}
		return time.Since(stopped) >= freeze
	})

	resume()
	at := time.Now()
	// Watch both spawns for orphan_after and a second: every stretch of
	// samples showing a crawler on two nodes must end within a second.
	var worst time.Duration
	twice := map[int64]time.Time{} // crawler → first sample of its current stretch on two nodes
	sample := time.NewTicker(50 * time.Millisecond)
	defer sample.Stop()
	for ; time.Since(at) < timings.OrphanAfter+time.Second; <-sample.C {
		on := placementAt(survivor, victim)
		now := time.Now()
		for _, id := range ids {
			if len(on[id]) < 2 {
				delete(twice, id)
				continue
			}
			first, ok := twice[id]
			if !ok {
				first, twice[id] = now, now
			}
			worst = max(worst, now.Sub(first))
		}
		if worst > time.Second {
			break
		}
	}
	t.Logf("after the resume: the longest stretch of a crawler on two nodes was %s", worst.Round(time.Millisecond))
	if worst > time.Second {
		t.Fatalf("a crawler ran on two nodes for %s after the frozen spawn resumed (orphan_after %s)", worst.Round(time.Millisecond), timings.OrphanAfter)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler on exactly one node, the resumed spawn back in service", func() bool {
		h, ok := healthAt(victim, time.Second)
		return ok && h.State == api.NodeAttached && onOne(placementAt(survivor, victim), ids) &&
			slices.ContainsFunc(ids, func(id int64) bool {
				return slices.ContainsFunc(h.Subscribers, func(s api.HealthSubscriber) bool { return s.CrawlerID == id })
			})
	})
}
