package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

func publish(c *cluster, feed, id, text string) {
	c.Feeds.Publish(feed, feedserver.Item{GUID: id, Title: text, Description: text, Published: time.Now()})
}

func TestCluster_EveryCrawlerRunsOnExactlyOneNode(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3})
	u := c.user(0)
	var ids []int64
	for i := range 9 {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("f%d", i))}, nil, 0).ID)
	}
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler running on exactly one node", func() bool {
		on := c.runningOn()
		for _, id := range ids {
			if len(on[id]) != 1 || c.crawler(id).State != api.StateRunning {
				return false
			}
		}
		return true
	})
	t.Logf("9 crawlers running on 3 nodes after %s", took)
	on := c.runningOn()
	for _, id := range ids {
		if got := c.crawler(id).Node; got != on[id][0] {
			t.Fatalf("crawler %d: hub says node %s, spawn %s runs it", id, got, on[id][0])
		}
	}
	health, err := c.Client.Health(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if health.Crawlers.Total != 9 || health.Crawlers.Assigned != 9 || len(health.Nodes) != 3 {
		t.Fatalf("hub health: %+v", health)
	}
}

func TestCluster_SameQuerySharesOneDataSource(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3})
	u := c.user(0)
	feed := c.FeedURL("shared")
	a := c.rssCrawler(u.ID, []string{feed}, []string{"golang"}, 0)
	b := c.rssCrawler(u.ID, []string{strings.ToUpper(feed[:4]) + feed[4:]}, []string{"weather"}, 0)
	if a.QueryUUID != b.QueryUUID {
		t.Fatalf("same feed, different query uuids: %s %s", a.QueryUUID, b.QueryUUID)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "both crawlers running", func() bool {
		on := c.runningOn()
		return len(on[a.ID]) == 1 && len(on[b.ID]) == 1
	})
	on := c.runningOn()
	if on[a.ID][0] != on[b.ID][0] {
		t.Fatalf("same query on different nodes: %s and %s", on[a.ID][0], on[b.ID][0])
	}
	sources := 0
	for _, s := range c.Spawns {
		h, _ := spawnHealth(t, s)
		for _, ds := range h.DataSources {
			if strings.Contains(ds.Key, "/feeds/shared.xml") {
				sources++
				if ds.Subscribers != 2 {
					t.Fatalf("data source %s has %d subscribers, want 2", ds.Key, ds.Subscribers)
				}
			}
		}
	}
	if sources != 1 {
		t.Fatalf("found %d data sources for the shared feed, want 1", sources)
	}

	// Each subscriber keeps only what its keywords match, from one fetch.
	publish(c, "shared", "g1", "golang release notes")
	publish(c, "shared", "w1", "weather warning for the weekend")
	publish(c, "shared", "x1", "nothing to see")
	testkit.WaitFor(t, clustertest.WaitTimeout, "filtered comments stored", func() bool {
		return len(c.storedComments(a.ID)) == 1 && len(c.storedComments(b.ID)) == 1
	})
	if got := c.storedComments(a.ID)[0]; got.ID != "g1" || !slices.Equal(got.Matched, []string{"golang"}) {
		t.Fatalf("crawler a stored %+v", got)
	}
	if got := c.storedComments(b.ID)[0]; got.ID != "w1" {
		t.Fatalf("crawler b stored %+v", got)
	}
}

func TestCluster_CommentsArriveOnceInStore(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	for i := range 20 {
		publish(c, "news", fmt.Sprintf("item-%d", i), fmt.Sprintf("story number %d", i))
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "20 comments stored", func() bool { return len(c.storedComments(cr.ID)) == 20 })
	// The feed keeps serving the same items; none may be stored twice.
	before := c.Feeds.Requests("news")
	testkit.WaitFor(t, clustertest.WaitTimeout, "several more fetches", func() bool { return c.Feeds.Requests("news") >= before+5 })
	if n := len(c.storedComments(cr.ID)); n != 20 {
		t.Fatalf("stored %d comments after re-fetches, want 20", n)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage reaches 20", func() bool { return c.crawler(cr.ID).Usage == 20 })
	recent, err := c.Client.RecentComments(c.Ctx, cr.ID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 5 {
		t.Fatalf("recent comments: got %d, want 5", len(recent))
	}
}

func TestCluster_DisableAndDeleteStopEverywhere(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3})
	u := c.user(0)
	a := c.rssCrawler(u.ID, []string{c.FeedURL("a")}, nil, 0)
	b := c.rssCrawler(u.ID, []string{c.FeedURL("b")}, nil, 0)
	testkit.WaitFor(t, clustertest.WaitTimeout, "both running", func() bool {
		on := c.runningOn()
		return len(on[a.ID]) == 1 && len(on[b.ID]) == 1
	})

	off := false
	if _, err := c.Client.UpdateCrawler(c.Ctx, a.ID, api.CrawlerUpdate{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "disabled crawler gone from every spawn", func() bool { return len(c.runningOn()[a.ID]) == 0 })
	t.Logf("disable took effect after %s", took)
	if st := c.crawler(a.ID).State; st != api.StateDisabled {
		t.Fatalf("state %q, want disabled", st)
	}

	if err := c.Client.DeleteCrawler(c.Ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "deleted crawler gone from every spawn", func() bool { return len(c.runningOn()[b.ID]) == 0 })
	if _, err := c.Client.GetCrawler(c.Ctx, b.ID); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("get deleted crawler: %v, want 404", err)
	}

	on := true
	if _, err := c.Client.UpdateCrawler(c.Ctx, a.ID, api.CrawlerUpdate{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "re-enabled crawler running again", func() bool { return len(c.runningOn()[a.ID]) == 1 })
}

func TestCluster_SpawnLossMovesSubscribers(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3})
	u := c.user(0)
	var ids []int64
	for i := range 12 {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("f%d", i))}, nil, 0).ID)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "all running", func() bool {
		on := c.runningOn()
		for _, id := range ids {
			if len(on[id]) != 1 {
				return false
			}
		}
		return true
	})
	// Stop the spawn running the most subscribers.
	count := map[string]int{}
	for _, nodes := range c.runningOn() {
		count[nodes[0]]++
	}
	victim := c.Spawns[0]
	for _, s := range c.Spawns {
		if count[s.ID()] > count[victim.ID()] {
			victim = s
		}
	}
	survivors := slices.DeleteFunc(slices.Clone(c.Spawns), func(s *spawnapp.Spawn) bool { return s == victim })
	lost := count[victim.ID()]
	if err := victim.Stop(); err != nil {
		t.Fatal(err)
	}
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler running on a survivor", func() bool {
		on := c.runningOn(survivors...)
		for _, id := range ids {
			if len(on[id]) != 1 {
				return false
			}
		}
		return true
	})
	t.Logf("%d subscribers of the lost node running on survivors after %s", lost, took)
	c.WaitNodes(2)
}

func TestCluster_HubRestartBringsEverythingBack(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	var ids []int64
	for i := range 4 {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("f%d", i))}, nil, 0).ID)
	}
	allRunning := func() bool {
		on := c.runningOn()
		for _, id := range ids {
			if len(on[id]) != 1 {
				return false
			}
		}
		return true
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "all running", allRunning)
	oldEpoch := c.Hub.Epoch()
	if err := c.Hub.Stop(); err != nil {
		t.Fatal(err)
	}
	restart := time.Now()
	c.StartHub()
	if c.Hub.Epoch() == oldEpoch {
		t.Fatal("restarted hub kept its epoch")
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "every spawn attached to the new epoch", func() bool {
		for _, s := range c.Spawns {
			h, ok := spawnHealth(t, s)
			if !ok || h.State != api.NodeAttached || h.Epoch != c.Hub.Epoch() {
				return false
			}
		}
		return true
	})
	testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler running again", func() bool {
		if !allRunning() {
			return false
		}
		for _, id := range ids {
			if c.crawler(id).State != api.StateRunning {
				return false
			}
		}
		return true
	})
	t.Logf("every crawler running again %s after the hub restarted", time.Since(restart).Round(time.Millisecond))
}

func TestAdminAPI_BadInputChangesNothing(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(0)
	big := `{"user_id": 1, "source": "rss", "query": ["` + strings.Repeat("a", 5<<20) + `"]}`
	cases := []struct {
		name, method, path, token, body string
		status                          int
		want                            string
	}{
		{"missing token", "POST", "/v1/crawlers", "", `{}`, http.StatusUnauthorized, "missing bearer token"},
		{"wrong token", "POST", "/v1/crawlers", "nope", `{}`, http.StatusUnauthorized, "invalid bearer token"},
		{"unknown source", "POST", "/v1/crawlers", clustertest.AdminToken, fmt.Sprintf(`{"user_id": %d, "source": "myspace", "query": ["x"]}`, u.ID), http.StatusBadRequest, "unknown source"},
		{"unparsable url", "POST", "/v1/crawlers", clustertest.AdminToken, fmt.Sprintf(`{"user_id": %d, "source": "rss", "query": ["http://[::1"]}`, u.ID), http.StatusBadRequest, "does not parse"},
		{"malformed json", "POST", "/v1/crawlers", clustertest.AdminToken, `{"user_id": 1, "source": `, http.StatusBadRequest, "JSON"},
		{"unknown field", "POST", "/v1/crawlers", clustertest.AdminToken, `{"user": 1}`, http.StatusBadRequest, "unknown field"},
		{"body over the cap", "POST", "/v1/crawlers", clustertest.AdminToken, big, http.StatusBadRequest, "larger than"},
		{"unknown user", "POST", "/v1/crawlers", clustertest.AdminToken, `{"user_id": 999, "source": "twitter", "query": ["go"]}`, http.StatusBadRequest, "user 999"},
		{"negative limit", "POST", "/v1/crawlers", clustertest.AdminToken, fmt.Sprintf(`{"user_id": %d, "source": "twitter", "query": ["go"], "comment_limit": -1}`, u.ID), http.StatusBadRequest, "comment_limit"},
		{"bad reload kind", "POST", "/v1/reload", clustertest.AdminToken, `{"kind": "medium"}`, http.StatusBadRequest, "kind"},
		{"bad id", "GET", "/v1/crawlers/abc", clustertest.AdminToken, ``, http.StatusBadRequest, "positive integer"},
		{"node token on admin api", "GET", "/v1/crawlers", clustertest.NodeToken, ``, http.StatusUnauthorized, "invalid"},
		{"admin token on node api", "POST", api.PathRegister, clustertest.AdminToken, `{"node_id": "x", "url": "http://127.0.0.1:1"}`, http.StatusUnauthorized, "invalid"},
		{"bad node url", "POST", api.PathRegister, clustertest.NodeToken, `{"node_id": "x", "url": "gopher://h"}`, http.StatusBadRequest, "url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := c.adminDo(tc.method, tc.path, tc.token, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("got %d %s, want %d containing %q", status, body, tc.status, tc.want)
			}
		})
	}
	crawlers, err := c.Client.ListCrawlers(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(crawlers) != 0 {
		t.Fatalf("bad requests created %d crawlers", len(crawlers))
	}
	nodes, _ := c.Client.ListNodes(c.Ctx)
	if len(nodes) != 1 {
		t.Fatalf("bad registrations changed the nodes: %d", len(nodes))
	}
}

func feedItem(id string, published time.Time) feedserver.Item {
	return feedserver.Item{GUID: id, Title: "story " + id, Description: "text of " + id, Published: published}
}

// TestCluster_HubRestartWakesSpawnsAtOnce gives spawns a detach_after far
// longer than the wait, so the only way back in time is the new hub
// contacting the nodes its predecessor knew.
func TestCluster_HubRestartWakesSpawnsAtOnce(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2, detachAfter: time.Minute})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("wake")}, nil, 0)
	testkit.WaitFor(t, clustertest.WaitTimeout, "running", func() bool { return c.crawler(cr.ID).State == api.StateRunning })
	if err := c.Hub.Stop(); err != nil {
		t.Fatal(err)
	}
	restart := time.Now()
	c.StartHub()
	testkit.WaitFor(t, clustertest.WaitTimeout, "crawler running under the new hub", func() bool {
		on := c.runningOn()
		return len(on[cr.ID]) == 1 && c.crawler(cr.ID).State == api.StateRunning
	})
	t.Logf("crawler running again %s after the hub restarted (spawns' detach_after is 1m)", time.Since(restart).Round(time.Millisecond))
}
