package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestQuery_EqualQueriesShareANodeAndNegationsHold runs stream crawlers in
// the query language on three spawns: two queries written differently but
// equal share a query uuid, a node, a data source and one subscription on
// the service; `golang -java` never stores a comment that mentions java;
// an invalid query is refused with the parser's message before anything is
// stored.
func TestQuery_EqualQueriesShareANodeAndNegationsHold(t *testing.T) {
	srv, streamURL := streamserver.Start(t, streamserver.Options{Username: "u", APIKey: "k", TickInterval: 50 * time.Millisecond})
	c := newCluster(t, clusterOpts{})
	for range 3 {
		c.addSpawnWith(func(cfg *spawnapp.Settings) {
			cfg.Stream.URL, cfg.Stream.Username, cfg.Stream.APIKey = streamURL, "u", "k"
		})
	}
	c.WaitNodes(3)
	u := c.user(0)
	add := func(q string) api.Crawler {
		t.Helper()
		cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceStream, Query: []string{q}})
		if err != nil {
			t.Fatal(err)
		}
		return cr
	}
	a, b := add("rust OR golang"), add("(golang OR  Rust)")
	neg := add("golang -java")
	if a.QueryUUID != b.QueryUUID || a.QueryCanonical != "golang OR rust" || b.QueryCanonical != a.QueryCanonical {
		t.Fatalf("equal queries differ: %q %s and %q %s", a.QueryCanonical, a.QueryUUID, b.QueryCanonical, b.QueryUUID)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "three crawlers running", func() bool {
		for _, id := range []int64{a.ID, b.ID, neg.ID} {
			if c.crawler(id).State != api.StateRunning {
				return false
			}
		}
		return true
	})
	if na, nb := c.crawler(a.ID).Node, c.crawler(b.ID).Node; na != nb {
		t.Fatalf("equal queries run on %s and %s", na, nb)
	}
	// One subscription serves both equal queries; the negation has its own.
	subs := 0
	for _, hashes := range srv.Subscriptions() {
		subs += len(hashes)
	}
	if subs != 2 {
		t.Fatalf("%d subscriptions on the service, want 2 (one per distinct query)", subs)
	}
	for _, s := range c.Spawns {
		h, _ := spawnHealth(t, s)
		for _, ds := range h.DataSources {
			if ds.Subscribers > 0 && h.NodeID == c.crawler(a.ID).Node && ds.Subscribers < 2 {
				t.Fatalf("the equal queries' node shows data source %+v, want both on it", ds)
			}
		}
	}

	srv.Publish(streamserver.Interaction{Content: "Golang 1.30 released"})
	srv.Publish(streamserver.Interaction{Content: "golang beats Java at startup"})
	srv.Publish(streamserver.Interaction{Content: "rust and java interop"})
	testkit.WaitFor(t, clustertest.WaitTimeout, "comments stored", func() bool {
		return len(c.storedComments(a.ID)) == 3 && len(c.storedComments(b.ID)) == 3 && len(c.storedComments(neg.ID)) == 1
	})
	for _, cm := range c.storedComments(neg.ID) {
		if strings.Contains(strings.ToLower(cm.Text), "java") {
			t.Fatalf("golang -java stored %q", cm.Text)
		}
	}

	// Invalid queries are refused with the parser's message; nothing is
	// stored.
	before, err := c.Client.ListCrawlers(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		`(golang OR rust`: `query: unclosed "(" at column 1`,
		`-java`:           `query:`,
	} {
		code, body := c.adminDo("POST", "/v1/crawlers", clustertest.AdminToken,
			`{"user_id": 1, "source": "stream", "query": [`+jsonString(q)+`]}`)
		var e api.Error
		if err := json.Unmarshal([]byte(body), &e); code != 400 || err != nil || !strings.HasPrefix(e.Error, want) {
			t.Errorf("query %q: %d %s, want 400 with %q", q, code, body, want)
		}
	}
	if after, _ := c.Client.ListCrawlers(c.Ctx); len(after) != len(before) {
		t.Fatalf("a refused query stored a crawler: %d crawlers, had %d", len(after), len(before))
	}
}

// TestQuery_LangFilterHolds runs rss crawlers whose filters test the feed's
// declared language: `golang lang:en` stores only the English feed's items.
func TestQuery_LangFilterHolds(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2})
	c.Feeds.SetLanguage("english", "en-GB")
	c.Feeds.SetLanguage("german", "de")
	for _, feed := range []string{"english", "german"} {
		c.Feeds.Publish(feed, feedserver.Item{Title: "golang news from " + feed})
		c.Feeds.Publish(feed, feedserver.Item{Title: "python news from " + feed})
	}
	u := c.user(0)
	en := c.rssCrawler(u.ID, []string{c.FeedURL("english"), c.FeedURL("german")}, []string{"golang lang:en"}, 0)
	any := c.rssCrawler(u.ID, []string{c.FeedURL("english"), c.FeedURL("german")}, []string{"golang"}, 0)
	if en.Keywords[0] != "golang lang:en" {
		t.Fatalf("filter stored as %q", en.Keywords)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "both feeds read", func() bool { return len(c.storedComments(any.ID)) == 2 })
	testkit.WaitFor(t, clustertest.WaitTimeout, "the English comment", func() bool { return len(c.storedComments(en.ID)) == 1 })
	if cm := c.storedComments(en.ID)[0]; cm.Lang != "en-gb" || !strings.Contains(cm.Text, "english") {
		t.Fatalf("lang:en stored %+v", cm)
	}
}

// TestQuery_ProximityAndPrefixFiltersHold runs rss crawlers on one feed
// whose filters use NEAR and a prefix: the spawn's shared index stores for
// each only the items its filter matches.
func TestQuery_ProximityAndPrefixFiltersHold(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 1})
	for _, title := range []string{
		"Logitech solar keyboard review",
		"the keyboard by Logitech",
		"Logitech mouse, and far from it a keyboard",
		"Kubernetes 1.30 is out",
	} {
		c.Feeds.Publish("tech", feedserver.Item{Title: title})
	}
	u := c.user(0)
	feed := []string{c.FeedURL("tech")}
	all := c.rssCrawler(u.ID, feed, nil, 0)
	ordered := c.rssCrawler(u.ID, feed, []string{"logitech NEAR/2f keyboard"}, 0)
	either := c.rssCrawler(u.ID, feed, []string{"keyboard NEAR/2 logitech"}, 0)
	prefix := c.rssCrawler(u.ID, feed, []string{"kube* OR logitech NEAR/0f keyboard*"}, 0)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the feed read", func() bool { return len(c.storedComments(all.ID)) == 4 })
	for _, tc := range []struct {
		crawler api.Crawler
		want    []string
	}{
		{ordered, []string{"Logitech solar keyboard review"}},
		{either, []string{"Logitech solar keyboard review", "the keyboard by Logitech"}},
		{prefix, []string{"Kubernetes 1.30 is out"}},
	} {
		testkit.WaitFor(t, clustertest.WaitTimeout, "the filter's comments", func() bool { return len(c.storedComments(tc.crawler.ID)) >= len(tc.want) })
		var got []string
		for _, cm := range c.storedComments(tc.crawler.ID) {
			got = append(got, cm.Text)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("filter %q stored %q, want %q", tc.crawler.Keywords, got, tc.want)
		}
	}
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
