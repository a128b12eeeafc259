package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

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

// hubMetric reads one sample (name with its labels, as /metrics prints it)
// from the hub's /metrics; -1 when absent.
func hubMetric(t *testing.T, c *clustertest.Cluster, sample string) float64 {
	t.Helper()
	resp, err := http.Get(c.Hub.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sample, err)
			}
			return f
		}
	}
	return -1
}

// TestHardening_BigFeedsDoNotFlapTheNode runs four rss crawlers on feeds of
// 100,000 items (8 MB each, under the 10 MiB document cap) on one spawn,
// with the hub polling every 500 ms (a poll times out after as long): the
// hub never loses the node, and each crawler takes the newest items one
// fetch allows.
func TestHardening_BigFeedsDoNotFlapTheNode(t *testing.T) {
	const feeds, items, kept = 4, 100_000, 1000 // kept: rss's maxItemsPerFetch
	docs := map[string][]byte{}
	for i := range feeds {
		name := fmt.Sprintf("big%d", i)
		docs["/"+name+".xml"] = feedserver.BigRSS(name, items)
	}
	feedURL := feedserver.StartStatic(t, docs)

	timings := clustertest.Timings{Poll: 500 * time.Millisecond, OrphanAfter: 5 * time.Second, DetachAfter: 7500 * time.Millisecond, FeedInterval: 100 * time.Millisecond}
	c := clustertest.New(t, clustertest.Options{Spawns: 1, Timings: timings})
	u, err := c.Client.CreateUser(c.Ctx, api.UserCreate{Name: "customer"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range feeds {
		cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{fmt.Sprintf("%s/big%d.xml", feedURL, i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.ID)
	}
	var peak uint64
	var ms runtime.MemStats
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler's newest items stored and counted", func() bool {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		for _, id := range ids {
			cr, err := c.Client.GetCrawler(c.Ctx, id)
			if err != nil || cr.Usage < kept {
				return false
			}
		}
		return true
	})
	lost := hubMetric(t, c, "bw_hub_nodes_lost_total")
	failed := hubMetric(t, c, "bw_hub_poll_failures_total")
	polls := hubMetric(t, c, "bw_hub_poll_seconds_count")
	under := hubMetric(t, c, `bw_hub_poll_seconds_bucket{le="0.256"}`)
	t.Logf("%d feeds of %d items stored in %s: %v polls, %v under 256 ms, %v failed, nodes lost %v; peak heap in use (hub, spawn and feeds in one process) %d MB",
		feeds, items, took.Round(time.Millisecond), polls, under, failed, lost, peak>>20)
	if lost != 0 {
		t.Errorf("the hub lost the node %v times", lost)
	}
	events, err := c.Client.Events(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Kind == "node_lost" || ev.Kind == "node_detached" {
			t.Errorf("event %s: %s", ev.Kind, ev.Message)
		}
	}
	for _, id := range ids {
		if cr, _ := c.Client.GetCrawler(c.Ctx, id); cr.Usage != kept {
			t.Errorf("crawler %d: usage %d, want the newest %d of one fetch", id, cr.Usage, kept)
		}
	}
}
