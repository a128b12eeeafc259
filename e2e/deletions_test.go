package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// removalDeadline is how soon after the event reaches a spawn a removal
// must reach every store (DESIGN §11).
const removalDeadline = 10 * time.Second

// blueskySpawn starts a spawn of c reading js and av, with a file store of
// its own, and returns it with its store's directory.
func blueskySpawn(t *testing.T, c *cluster, js *jetstream.Server, av *appview.Server) (*spawnapp.Spawn, string) {
	t.Helper()
	dir := t.TempDir()
	s := c.addSpawnWith(func(cfg *spawnapp.Settings) {
		cfg.Store = "file://" + dir
		cfg.Bluesky.JetstreamURL, cfg.Bluesky.AppViewURL = js.URL(), av.URL()
	})
	return s, dir
}

// hubSample sums a metric's samples on the hub's /metrics.
func hubSample(t *testing.T, c *cluster, name string) float64 {
	t.Helper()
	return spawnSample(t, c.Hub.URL(), name)
}

// TestDeletions_TombstoneHoldsAcrossACrawlerMoveAndAReconnect stores a
// post on one spawn, deletes it at the source, and checks it is gone within
// the deadline. The crawler then moves to a spawn with a store of its own,
// whose Jetstream connection replays the post from the crawler's cursor
// (the post's position, less the resume overlap), and later reconnects
// with overlap again: the post is never stored there (its usage would
// count it), since the tombstone reached that store through the hub's log
// before the spawn wrote anything.
func TestDeletions_TombstoneHoldsAcrossACrawlerMoveAndAReconnect(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	av := appview.Start(t)
	av.Set("did:plc:poster4deletions", "poster.example.test")
	c := newCluster(t, clusterOpts{})
	first, firstDir := blueskySpawn(t, c, js, av)
	c.WaitNodes(1)
	u := c.user(0)
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceBluesky, Query: []string{"golang"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running", func() bool { return c.crawler(cr.ID).State == api.StateRunning })
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn connected", func() bool { return js.Conns() == 1 })

	post := js.Publish(jetstream.Post{DID: "did:plc:poster4deletions", Text: "golang 1.30 is out"})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the post stored", func() bool {
		return slices.Contains(commentIDs(storedIn(t, firstDir, cr.ID)), post.URI)
	})
	testkit.WaitFor(t, clustertest.WaitTimeout, "its usage", func() bool { return c.crawler(cr.ID).Usage == 1 })

	js.Publish(jetstream.Post{DID: "did:plc:poster4deletions", RKey: rkeyOf(post.URI), Operation: "delete"})
	deleted := time.Now()
	took := testkit.WaitFor(t, removalDeadline, "the post removed", func() bool {
		return len(storedIn(t, firstDir, cr.ID)) == 0
	})
	t.Logf("delete → removed in %s", took)
	recent, err := c.Client.RecentComments(c.Ctx, cr.ID, 10)
	if err != nil || len(recent) != 0 {
		t.Errorf("comments recent after the delete: %v, %v", commentIDs(recent), err)
	}
	// The removal is in the hub's log before the spawn goes.
	testkit.WaitFor(t, clustertest.WaitTimeout, "the delete logged by the hub", func() bool {
		return hubSample(t, c, "bw_hub_retractions_logged_total") >= 1
	})

	// The crawler moves to a new spawn with a store of its own.
	second, secondDir := blueskySpawn(t, c, js, av)
	c.WaitNodes(2)
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	c.WaitNodes(1)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running on the second spawn", func() bool {
		on := c.runningOn(second)[cr.ID]
		return len(on) == 1 && c.crawler(cr.ID).State == api.StateRunning
	})
	// Its connection replayed from the crawler's cursor, before the post.
	testkit.WaitFor(t, clustertest.WaitTimeout, "the second spawn's connection", func() bool {
		for _, a := range js.Accepted() {
			if a.Cursor > 0 && a.Cursor < post.TimeUS {
				return true
			}
		}
		return false
	})
	marker := js.Publish(jetstream.Post{DID: "did:plc:poster4deletions", Text: "golang marker after the move"})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the marker stored on the second spawn", func() bool {
		return slices.Contains(commentIDs(storedIn(t, secondDir, cr.ID)), marker.URI)
	})
	if ids := commentIDs(storedIn(t, secondDir, cr.ID)); slices.Contains(ids, post.URI) {
		t.Errorf("the deleted post was stored again after the move: %v", ids)
	}

	// A reconnect resumes with overlap: the post, the delete and the
	// marker are read again.
	js.Cut(200 * time.Millisecond)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the reconnect", func() bool { return js.Conns() == 1 && len(js.Accepted()) >= 3 })
	marker2 := js.Publish(jetstream.Post{DID: "did:plc:poster4deletions", Text: "golang marker after the reconnect"})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the second marker stored", func() bool {
		return slices.Contains(commentIDs(storedIn(t, secondDir, cr.ID)), marker2.URI)
	})
	if ids := commentIDs(storedIn(t, secondDir, cr.ID)); !slices.Equal(sorted(ids), sorted([]string{marker.URI, marker2.URI})) {
		t.Errorf("second spawn stored %v, want the two markers", ids)
	}
	// Usage: the post once (it was paid for; not refunded), the markers
	// once each — the post was never stored a second time.
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage of 3", func() bool { return c.crawler(cr.ID).Usage >= 3 })
	if got := c.crawler(cr.ID).Usage; got != 3 {
		t.Errorf("usage %d, want 3: the deleted post was counted again", got)
	}
	t.Logf("removal took %s; the scenario ran %s after the delete", took, time.Since(deleted).Round(time.Millisecond))
}

// TestDeletions_ReachEveryStoreAndForgetCounts runs one post stored by two
// crawlers on two spawns with stores of their own. One crawler is then
// disabled, so its spawn no longer reads Jetstream: the post's delete
// reaches that spawn's store only through the hub's log, within the
// deadline. Then a forget through the admin API removes an author's posts
// from both stores and counts them per crawler.
func TestDeletions_ReachEveryStoreAndForgetCounts(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	av := appview.Start(t)
	c := newCluster(t, clusterOpts{})
	a, aDir := blueskySpawn(t, c, js, av)
	b, bDir := blueskySpawn(t, c, js, av)
	c.WaitNodes(2)
	u := c.user(0)
	// Two crawlers whose posts both match, placed on the two spawns.
	var onA, onB api.Crawler
	dirOf := map[string]string{a.ID(): aDir, b.ID(): bDir}
	for i := 0; onA.ID == 0 || onB.ID == 0; i++ {
		if i > 40 {
			t.Fatal("no query landed on both spawns")
		}
		q := "gopher OR tag" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceBluesky, Query: []string{q}})
		if err != nil {
			t.Fatal(err)
		}
		var node string
		testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running", func() bool {
			v := c.crawler(cr.ID)
			node = v.Node
			return v.State == api.StateRunning && node != ""
		})
		switch {
		case node == a.ID() && onA.ID == 0:
			onA = c.crawler(cr.ID)
		case node == b.ID() && onB.ID == 0:
			onB = c.crawler(cr.ID)
		default:
			if err := c.Client.DeleteCrawler(c.Ctx, cr.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "both spawns connected", func() bool { return js.Conns() == 2 })
	post := js.Publish(jetstream.Post{DID: "did:plc:gopher4deletions", Text: "a gopher at the door"})
	stored := func(cr api.Crawler) []string { return commentIDs(storedIn(t, dirOf[cr.Node], cr.ID)) }
	testkit.WaitFor(t, clustertest.WaitTimeout, "the post stored by both crawlers", func() bool {
		return slices.Contains(stored(onA), post.URI) && slices.Contains(stored(onB), post.URI)
	})

	// The crawler on b is disabled: b drops its Jetstream connection.
	disabled := false
	if _, err := c.Client.UpdateCrawler(c.Ctx, onB.ID, api.CrawlerUpdate{Enabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "b without its bluesky connection", func() bool {
		h, ok := spawnHealth(t, b)
		return ok && len(h.DataSources) == 0 && js.Conns() == 1
	})
	js.Publish(jetstream.Post{DID: "did:plc:gopher4deletions", RKey: rkeyOf(post.URI), Operation: "delete"})
	took := testkit.WaitFor(t, removalDeadline, "the post removed from both stores", func() bool {
		return !slices.Contains(stored(onA), post.URI) && !slices.Contains(stored(onB), post.URI)
	})
	t.Logf("delete → removed from the store of a spawn not reading Jetstream in %s", took)

	// Forget: the author's posts in both crawlers, by handle.
	enabled := true
	if _, err := c.Client.UpdateCrawler(c.Ctx, onB.ID, api.CrawlerUpdate{Enabled: &enabled}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "both spawns connected again", func() bool { return js.Conns() == 2 })
	av.Set("did:plc:forgetme", "forget.example.test")
	var posts []string
	for _, text := range []string{"gopher one", "gopher two"} {
		posts = append(posts, js.Publish(jetstream.Post{DID: "did:plc:forgetme", Text: text}).URI)
	}
	keep := js.Publish(jetstream.Post{DID: "did:plc:gopher4deletions", Text: "another gopher"}).URI
	testkit.WaitFor(t, clustertest.WaitTimeout, "the author's posts stored by both crawlers", func() bool {
		for _, cr := range []api.Crawler{onA, onB} {
			ids := stored(cr)
			if !slices.Contains(ids, posts[0]) || !slices.Contains(ids, posts[1]) || !slices.Contains(ids, keep) {
				return false
			}
		}
		return true
	})
	status, body := c.adminDo("POST", api.PathForget, clustertest.AdminToken, `{"source":"bluesky","author":"did:plc:forgetme"}`)
	if status != 200 {
		t.Fatalf("POST /v1/forget: %d %s", status, body)
	}
	var res api.ForgetResult
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if res.Removed != 4 || res.Pending != 0 {
		t.Errorf("forget answered %s, want 4 removed (2 posts, 2 crawlers)", body)
	}
	for _, cr := range []api.Crawler{onA, onB} {
		if ids := stored(cr); !slices.Equal(ids, []string{keep}) {
			t.Errorf("crawler %d holds %v after the forget, want %v", cr.ID, ids, []string{keep})
		}
	}
	// The event names neither the author nor their words.
	events, err := c.Client.Events(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events {
		if e.Kind == "forget" {
			found = true
			if containsAny(e.Message, "forgetme", "forget.example.test", "gopher one") {
				t.Errorf("the forget event tells about the author: %q", e.Message)
			}
		}
	}
	if !found {
		t.Error("no forget event")
	}
	if status, body := c.adminDo("POST", api.PathForget, clustertest.AdminToken, `{"source":"bluesky","author":""}`); status != 400 {
		t.Errorf("a forget without an author: %d %s", status, body)
	}
}

// rkeyOf is the record key of a post's at:// URI.
func rkeyOf(uri string) string { return uri[strings.LastIndexByte(uri, '/')+1:] }

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func containsAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}
