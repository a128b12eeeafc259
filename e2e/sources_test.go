package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestCluster_CrawlersRouteToSpawnsOfferingTheirSource runs spawns that
// differ in what they can crawl: only one has the stream service's
// credentials. Every stream crawler runs there however its query hashes,
// none fails on a spawn without credentials, a source no spawn offers
// leaves its crawler pending with a reason, and when the only stream spawn
// goes the stream crawlers wait rather than move to spawns that cannot run
// them.
func TestCluster_CrawlersRouteToSpawnsOfferingTheirSource(t *testing.T) {
	_, streamURL := streamserver.Start(t, streamserver.Options{Username: "u", APIKey: "k", TickInterval: 50 * time.Millisecond})

	c := newCluster(t, clusterOpts{spawns: 2})
	streaming := c.addSpawnWith(func(cfg *spawnapp.Settings) {
		cfg.Stream.URL, cfg.Stream.Username, cfg.Stream.APIKey = streamURL, "u", "k"
	})
	c.WaitNodes(3)

	nodes, err := c.Client.ListNodes(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		// Every spawn offers rss, bluesky and hackernews (none needs
		// credentials).
		want := []string{api.SourceRSS, api.SourceBluesky, "hackernews"}
		if n.ID == streaming.ID() {
			want = []string{api.SourceRSS, api.SourceStream, api.SourceBluesky, "hackernews"}
		}
		if !slices.Equal(n.Sources, want) {
			t.Fatalf("node %s offers %v, want %v", n.ID, n.Sources, want)
		}
	}

	u := c.user(0)
	var streamIDs []int64
	for i := range 6 {
		cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceStream, Query: []string{fmt.Sprintf("brand%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		streamIDs = append(streamIDs, cr.ID)
	}
	rss := c.rssCrawler(u.ID, []string{c.FeedURL("plain")}, nil, 0)
	tw, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceTwitter, Query: []string{"golang"}})
	if err != nil {
		t.Fatal(err)
	}

	took := testkit.WaitFor(t, clustertest.WaitTimeout, "every stream crawler running on the stream spawn", func() bool {
		for _, id := range streamIDs {
			if cr := c.crawler(id); cr.State != api.StateRunning || cr.Node != streaming.ID() {
				return false
			}
		}
		return c.crawler(rss.ID).State == api.StateRunning
	})
	t.Logf("6 stream crawlers running on the one spawn offering stream after %s", took)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the twitter crawler pending with a reason", func() bool {
		cr := c.crawler(tw.ID)
		return cr.State == api.StatePending && strings.Contains(cr.Error, "no spawn node offers source twitter")
	})
	if on := c.runningOn(); len(on[tw.ID]) != 0 {
		t.Fatalf("twitter crawler sent to %v, which cannot run it", on[tw.ID])
	}

	// The stream spawn goes: its crawlers wait for a spawn that can run
	// them, and never fail on one that cannot.
	if err := streaming.Stop(); err != nil {
		t.Fatal(err)
	}
	took = testkit.WaitFor(t, clustertest.WaitTimeout, "stream crawlers pending once no spawn offers stream", func() bool {
		for _, id := range streamIDs {
			cr := c.crawler(id)
			if cr.State != api.StatePending || !strings.Contains(cr.Error, "no spawn node offers source stream") {
				return false
			}
		}
		return true
	})
	t.Logf("stream crawlers pending %s after the stream spawn stopped", took)
	for id, on := range c.runningOn(c.Spawns[:2]...) {
		if slices.Contains(streamIDs, id) {
			t.Fatalf("stream crawler %d runs on %v, which has no stream credentials", id, on)
		}
	}
}
