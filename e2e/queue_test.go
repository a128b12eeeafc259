package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/natstest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// commentStream is the spawns' JetStream stream (spawn/internal/queue).
const commentStream = "BW_COMMENTS"

// published is what a consumer replaying the comment stream from its start
// sees: each comment's id by crawler, and how many messages there were.
type published struct {
	ids  map[int64]map[string]bool
	msgs int
}

// readPublished replays every message of the comment stream, checking each
// one's subject and Nats-Msg-Id against its comment.
func readPublished(t *testing.T, url string) published {
	t.Helper()
	out := published{ids: map[int64]map[string]bool{}}
	for _, m := range natstest.ReadStream(t, url, commentStream) {
		var cm api.Comment
		if err := json.Unmarshal(m.Data(), &cm); err != nil {
			t.Fatalf("message on %s is not a comment: %v", m.Subject(), err)
		}
		if want := fmt.Sprintf("comments.%d", cm.CrawlerID); m.Subject() != want {
			t.Fatalf("comment %s of crawler %d published on %s, want %s", cm.ID, cm.CrawlerID, m.Subject(), want)
		}
		if id, want := m.Headers().Get(jetstream.MsgIDHeader), fmt.Sprintf("%d:%s", cm.CrawlerID, cm.ID); id != want {
			t.Fatalf("comment %s has Nats-Msg-Id %q, want %q", cm.ID, id, want)
		}
		if out.ids[cm.CrawlerID] == nil {
			out.ids[cm.CrawlerID] = map[string]bool{}
		}
		out.ids[cm.CrawlerID][cm.ID] = true
		out.msgs++
	}
	return out
}

// queueSpawn starts a spawn like cluster.addSpawn does, publishing to the
// queue at url.
func (c *cluster) queueSpawn(url string) *spawnapp.Spawn {
	c.t.Helper()
	return c.addSpawnWith(func(cfg *spawnapp.Settings) { cfg.Queue = url })
}

// storedIDs is the set of a crawler's comment ids in the file store.
func (c *cluster) storedIDs(crawlerID int64) map[string]bool {
	out := map[string]bool{}
	for _, cm := range c.storedComments(crawlerID) {
		out[cm.ID] = true
	}
	return out
}

// sameIDs compares two id sets and says what differs.
func sameIDs(t *testing.T, what string, stored, pub map[string]bool) {
	t.Helper()
	var missing, extra []string
	for id := range stored {
		if !pub[id] {
			missing = append(missing, id)
		}
	}
	for id := range pub {
		if !stored[id] {
			extra = append(extra, id)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("%s: stored but not published %v; published but not stored %v", what, missing, extra)
	}
}

// TestQueue_PublishesExactlyTheStoredComments runs a limited crawler with
// more items than its limit and an unlimited one with a keyword filter on
// two spawns, and replays the stream: every stored comment was published,
// and nothing else (no rejected or filtered item), and the distinct
// comments published equal the crawler's usage.
func TestQueue_PublishesExactlyTheStoredComments(t *testing.T) {
	srv := natstest.Start(t, true)
	c := newCluster(t, clusterOpts{})
	c.queueSpawn(srv.URL())
	c.queueSpawn(srv.URL())
	c.WaitNodes(2)

	const limit, offered = 15, 40
	u := c.user(0)
	limited := c.rssCrawler(u.ID, []string{c.FeedURL("qlimited")}, nil, limit)
	filtered := c.rssCrawler(u.ID, []string{c.FeedURL("qfiltered")}, []string{"golang"}, 0)
	base := time.Now().Add(-time.Hour)
	for i := range offered {
		c.Feeds.Publish("qlimited", feedItem(fmt.Sprintf("lim-%d", i), base.Add(time.Duration(i)*time.Second)))
	}
	for i := range 10 {
		id := fmt.Sprintf("other-%d", i)
		if i%2 == 0 {
			id = fmt.Sprintf("golang-%d", i)
		}
		c.Feeds.Publish("qfiltered", feedItem(id, base.Add(time.Duration(i)*time.Second)))
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the limited crawler at its limit", func() bool {
		cr := c.crawler(limited.ID)
		return cr.State == api.StateLimitReached && cr.Usage == limit
	})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the filtered crawler's 5 matches counted", func() bool { return c.crawler(filtered.ID).Usage == 5 })

	// A comment is counted only after it is stored and published, so the
	// stream is complete once usage is.
	pub := readPublished(t, srv.URL())
	for _, cr := range []api.Crawler{limited, filtered} {
		stored := c.storedIDs(cr.ID)
		usage := c.crawler(cr.ID).Usage
		t.Logf("crawler %d: stored %d, published %d distinct, usage %d", cr.ID, len(stored), len(pub.ids[cr.ID]), usage)
		sameIDs(t, fmt.Sprintf("crawler %d", cr.ID), stored, pub.ids[cr.ID])
		if int64(len(pub.ids[cr.ID])) != usage {
			t.Errorf("crawler %d: %d distinct comments published, usage %d", cr.ID, len(pub.ids[cr.ID]), usage)
		}
	}
	if len(pub.ids) != 2 {
		t.Errorf("comments published for crawlers %v, want only %d and %d", slices.Sorted(maps.Keys(pub.ids)), limited.ID, filtered.ID)
	}
	t.Logf("%d messages in the stream for %d distinct comments", pub.msgs, limit+5)
}

// TestQueue_OutageLosesNothingCounted kills the test's own NATS server while
// a crawler runs: the spawn goes degraded and counts nothing it could not
// publish, and once the server is back every comment is stored, published
// and counted.
func TestQueue_OutageLosesNothingCounted(t *testing.T) {
	srv := natstest.Start(t, true)
	c := newCluster(t, clusterOpts{})
	sp := c.queueSpawn(srv.URL())
	c.WaitNodes(1)
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("qoutage")}, nil, 0)
	base := time.Now().Add(-time.Hour)
	c.Feeds.Publish("qoutage", feedItem("before", base))
	testkit.WaitFor(t, clustertest.WaitTimeout, "the first comment counted", func() bool { return c.crawler(cr.ID).Usage == 1 })

	srv.Stop(syscall.SIGKILL)
	const during = 20
	for i := range during {
		c.Feeds.Publish("qoutage", feedItem(fmt.Sprintf("during-%d", i), base.Add(time.Duration(i+1)*time.Second)))
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn reports its store degraded", func() bool {
		h, ok := spawnHealth(t, sp)
		return ok && h.Store == "degraded"
	})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the outage's comments in the file store", func() bool { return len(c.storedIDs(cr.ID)) == 1+during })
	if usage := c.crawler(cr.ID).Usage; usage != 1 {
		t.Fatalf("usage %d while the queue is down, want 1: counted without being published", usage)
	}

	srv.Restart()
	restarted := time.Now()
	testkit.WaitFor(t, clustertest.WaitTimeout, "every comment counted", func() bool { return c.crawler(cr.ID).Usage == 1+during })
	t.Logf("every counted comment published %s after NATS came back", time.Since(restarted).Round(time.Millisecond))
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn's store ok again", func() bool {
		h, ok := spawnHealth(t, sp)
		return ok && h.Store == "ok"
	})
	pub := readPublished(t, srv.URL())
	sameIDs(t, "after the outage", c.storedIDs(cr.ID), pub.ids[cr.ID])
	t.Logf("%d messages in the stream for %d distinct comments", pub.msgs, len(pub.ids[cr.ID]))
}

// TestQueue_SpawnRefusesBadQueue checks that a spawn does not start with a
// queue it cannot use, and says why.
func TestQueue_SpawnRefusesBadQueue(t *testing.T) {
	closed := testkit.FreeAddr(t)
	cases := []struct{ name, queue, want string }{
		{"http scheme", "http://127.0.0.1:4222", "only nats:// and tls:// are supported"},
		{"no scheme", "127.0.0.1:4222", "names no server"},
		{"unreachable", "nats://s3cret@" + closed, "unable to connect to nats://***@" + closed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := spawnapp.DefaultSettings()
			cfg.Hub = "http://127.0.0.1:1"
			cfg.Store = "file://" + filepath.Join(t.TempDir(), "data")
			cfg.Queue = tc.queue
			s, err := spawnapp.Start(context.Background(), cfg, testkit.Logger(t, "spawn"))
			if err == nil {
				_ = s.Stop()
				t.Fatalf("spawn started with --queue %s", tc.queue)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %q, want one saying %q (without credentials)", err, tc.want)
			}
		})
	}
}
