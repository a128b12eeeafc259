package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestFleet_XV2CrawlersShareTheFleetsOneConnection runs twitter crawlers
// over X API v2 on three spawns sharing one app: the service allows one
// filtered-stream connection, so every crawler is placed on the one spawn
// holding it, and when that spawn goes they all move to one survivor,
// which opens the single connection again. Posts reach exactly the
// crawlers whose queries match.
func TestFleet_XV2CrawlersShareTheFleetsOneConnection(t *testing.T) {
	srv, apiURL := xv2.Start(t, xv2.Options{BearerToken: "bearer"})
	c := newCluster(t, clusterOpts{})
	for range 3 {
		c.addSpawnWith(func(cfg *spawnapp.Settings) { cfg.Twitter.APIURL, cfg.Twitter.BearerToken = apiURL, "bearer" })
	}
	c.WaitNodes(3)
	u := c.user(0)
	var ids []int64
	for i := range 8 {
		cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceTwitter, Query: []string{fmt.Sprintf("topic%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.ID)
	}
	onOneNode := func() (string, bool) {
		node := ""
		for _, id := range ids {
			cr := c.crawler(id)
			if cr.State != api.StateRunning || (node != "" && cr.Node != node) {
				return "", false
			}
			node = cr.Node
		}
		return node, true
	}
	var holder string
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "every twitter crawler running on one spawn", func() bool {
		var ok bool
		holder, ok = onOneNode()
		return ok
	})
	t.Logf("8 crawlers on the holder after %s", took)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the fleet's one stream connection", srv.Connected)
	for id, on := range c.runningOn() {
		if slices.Contains(ids, id) && (len(on) != 1 || on[0] != holder) {
			t.Fatalf("crawler %d runs on %v, want only the holder %s", id, on, holder)
		}
	}
	if n := openStreams(srv); n != 1 {
		t.Fatalf("%d stream connections accepted, want 1", n)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "rules for every query", func() bool {
		_, matched := srv.Publish(xv2.Post{Text: "probe topic7", Username: "probe"})
		return len(matched) > 0
	})
	_, _ = srv.Publish(xv2.Post{Text: "news about topic3 today", Username: "gopher"})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the post stored for its crawler", func() bool {
		return len(c.storedComments(ids[3])) == 1
	})
	for i, id := range ids {
		if n := len(c.storedComments(id)); (i == 3 && n != 1) || (i != 3 && i != 7 && n != 0) {
			t.Fatalf("crawler %d (topic%d) stored %d comments", id, i, n)
		}
	}

	// The holder goes: every crawler moves to one survivor, which opens
	// the fleet's connection again.
	for _, s := range c.Spawns {
		if s.ID() == holder {
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
		}
	}
	took = testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler on one survivor", func() bool {
		node, ok := onOneNode()
		return ok && node != holder
	})
	t.Logf("all crawlers on one survivor %s after the holder stopped", took)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the stream reconnected", srv.Connected)
	if n := openStreams(srv); n != 2 {
		t.Fatalf("%d stream connections accepted over the test, want 2 (one per holder)", n)
	}
}

// openStreams counts the stream connections the server accepted.
func openStreams(srv *xv2.Server) int {
	n := 0
	for _, c := range srv.Connections() {
		if c.Status == 200 {
			n++
		}
	}
	return n
}
