package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	mastodonfake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestBluesky_CrawlerMovedResumesFromItsCursor runs a bluesky crawler on
// two spawns reading a local Jetstream server. Posts keep being published
// while the spawn running the crawler stops; the crawler moves to the other
// spawn, which resumes from the crawler's cursor: every matching post is
// stored exactly once, nothing lost, nothing repeated.
func TestBluesky_CrawlerMovedResumesFromItsCursor(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{ReplayWindow: time.Hour})
	av := appview.Start(t)
	c := newCluster(t, clusterOpts{})
	for range 2 {
		c.addSpawnWith(func(cfg *spawnapp.Settings) { cfg.Bluesky.JetstreamURL, cfg.Bluesky.AppViewURL = js.URL(), av.URL() })
	}
	c.WaitNodes(2)
	u := c.user(0)
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceBluesky, Query: []string{"golang -java lang:en"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running", func() bool { return c.crawler(cr.ID).State == api.StateRunning })
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn connected to Jetstream", func() bool { return js.Conns() == 1 })

	var want []string
	publish := func(i int) {
		lang := []string{"en"}
		text := fmt.Sprintf("golang post %d", i)
		switch i % 4 {
		case 1:
			text += " about java" // refused by -java
		case 2:
			lang = []string{"de"} // refused by lang:en
		}
		p := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: text, Langs: lang})
		if i%4 == 0 || i%4 == 3 {
			want = append(want, p.URI)
		}
	}
	for i := range 8 {
		publish(i)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the first posts stored", func() bool { return len(c.storedComments(cr.ID)) == len(want) })
	first := c.storedComments(cr.ID)[0]
	if !strings.HasPrefix(first.ID, "at://did:plc:alice/app.bsky.feed.post/") || first.Lang != "en" ||
		!strings.HasPrefix(first.URL, "https://bsky.app/profile/") {
		t.Fatalf("stored comment %+v", first)
	}

	// The spawn running the crawler stops; posts keep coming.
	running := c.crawler(cr.ID).Node
	for _, s := range c.Spawns {
		if s.ID() == running {
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 8; i < 16; i++ {
		publish(i)
	}
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running on the other spawn", func() bool {
		cur := c.crawler(cr.ID)
		return cur.State == api.StateRunning && cur.Node != "" && cur.Node != running
	})
	t.Logf("crawler moved %s after its spawn stopped", took)
	for i := 16; i < 20; i++ {
		publish(i)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "every matching post stored", func() bool { return len(c.storedComments(cr.ID)) >= len(want) })
	var got []string
	for _, cm := range c.storedComments(cr.ID) {
		got = append(got, cm.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("stored %d posts %v,\nwant %d %v", len(got), got, len(want), want)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage equal to what is stored", func() bool { return c.crawler(cr.ID).Usage == int64(len(want)) })
	if n := len(c.storedComments(cr.ID)); n != len(want) {
		t.Fatalf("%d comments stored once usage settled, want %d", n, len(want))
	}
}

// TestMastodon_StatusThroughTwoInstancesIsOneComment runs a mastodon
// crawler on a spawn streaming from two instances that both carry the same
// status: it is stored once, with its reply link.
func TestMastodon_StatusThroughTwoInstancesIsOneComment(t *testing.T) {
	a := mastodonfake.Start(t, mastodonfake.Options{Token: "tok", Domain: "a.example"})
	b := mastodonfake.Start(t, mastodonfake.Options{Token: "tok", Domain: "b.example"})
	c := newCluster(t, clusterOpts{})
	c.addSpawnWith(func(cfg *spawnapp.Settings) {
		cfg.Mastodon.URL, cfg.Mastodon.Token = []string{a.URL(), b.URL()}, "tok"
	})
	c.WaitNodes(1)
	u := c.user(0)
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceMastodon, Query: []string{"#golang"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "hashtag streams on both instances", func() bool {
		for _, srv := range []*mastodonfake.Server{a, b} {
			if !slices.ContainsFunc(srv.Subscriptions(), func(s []string) bool { return slices.Contains(s, "hashtag:golang") }) {
				return false
			}
		}
		return true
	})
	st := mastodonfake.Status{URI: "https://a.example/users/alice/statuses/1", URL: "https://a.example/@alice/1", Acct: "alice",
		Content: "<p>Release day <a href=\"https://a.example/tags/golang\">#<span>golang</span></a></p>", Language: "en", Tags: []string{"golang"}}
	a.Post(st)
	remote := st
	remote.Acct = "alice@a.example"
	b.Post(remote)
	a.Post(mastodonfake.Status{URI: "https://a.example/users/bob/statuses/2", Acct: "bob", Content: "<p>no tag here, golang</p>", Tags: nil})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the status stored", func() bool { return len(c.storedComments(cr.ID)) >= 1 })
	// The untagged status is not delivered on the hashtag stream; wait for
	// the usage to settle before counting.
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage reported", func() bool { return c.crawler(cr.ID).Usage >= 1 })
	got := c.storedComments(cr.ID)
	if len(got) != 1 || got[0].ID != st.URI || got[0].Text != "Release day #golang" || got[0].Lang != "en" || got[0].Author != "alice@a.example" {
		t.Fatalf("stored %+v, want the one status", got)
	}
}

// engagementScore is loklak's harvester score of one sighting, the oracle of the
// suggestion test: α = 5·reposts + likes, α / (α + 10·e^(−0.01·α)).
func engagementScore(reposts, likes int64) float64 {
	a := float64(5*reposts + likes)
	return a / (a + 10*math.Exp(-0.01*a))
}

// TestSuggest_RanksMastodonCandidatesByEngagement streams statuses of a
// mastodon crawler from a local instance: a hashtag in many new statuses
// nobody has shared yet, one in two statuses liked a little, one in an edit
// of a widely shared status. bwctl crawler suggest lists them by their
// engagement-weighted score (by frequency they would come the other way
// round), and the stored comments keep their counts.
func TestSuggest_RanksMastodonCandidatesByEngagement(t *testing.T) {
	bin := binDir(t)
	inst := mastodonfake.Start(t, mastodonfake.Options{Token: "tok", Domain: "a.example"})
	c := newCluster(t, clusterOpts{})
	c.addSpawnWith(func(cfg *spawnapp.Settings) {
		cfg.Mastodon.URL, cfg.Mastodon.Token = []string{inst.URL()}, "tok"
	})
	c.WaitNodes(1)
	u := c.user(0)
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceMastodon, Query: []string{"#golang"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the hashtag stream", func() bool {
		return slices.ContainsFunc(inst.Subscriptions(), func(s []string) bool { return slices.Contains(s, "hashtag:golang") })
	})

	tags := []string{"golang"}
	for i := range 6 {
		inst.Post(mastodonfake.Status{Acct: fmt.Sprintf("user%d", i), Content: "<p>#golang #weekly roundup</p>", Tags: tags})
	}
	for i := range 2 {
		inst.Post(mastodonfake.Status{Acct: fmt.Sprintf("tipster%d", i), Content: "<p>#golang #tips for you</p>", Tags: tags,
			Reblogs: 1, Favourites: 3})
	}
	// Mastodon never streams a boost on a hashtag stream; a widely shared
	// status comes back with its counts when it is edited.
	shared := inst.Remember(mastodonfake.Status{ID: "1", URI: "https://a.example/users/gopher/statuses/1", Acct: "gopher",
		Content: "<p>#golang #release is out</p>", Tags: tags, Reblogs: 40, Favourites: 120})
	inst.Post(mastodonfake.Status{Acct: "booster", Reblog: &shared})
	inst.Edit(shared)

	want := []api.Suggestion{
		{Term: "#release", Score: engagementScore(40, 120), Count: 1},
		{Term: "#tips", Score: 2 * engagementScore(1, 3), Count: 2},
		{Term: "#weekly", Score: 0, Count: 6},
	}
	var got api.Suggestions
	testkit.WaitFor(t, clustertest.WaitTimeout, "every status counted and its candidates applied", func() bool {
		r := runBwctl(t, bin, c.Hub.URL(), "crawler", "suggest", fmt.Sprint(cr.ID), "--json")
		if err := json.Unmarshal([]byte(r), &got); err != nil {
			t.Fatalf("bwctl crawler suggest --json printed %q: %v", r, err)
		}
		n := int64(0)
		for _, s := range got.Terms {
			n += s.Count
		}
		return n == 9
	})
	if len(got.Terms) != len(want) {
		t.Fatalf("suggestions %+v, want %+v", got.Terms, want)
	}
	for i, w := range want {
		if g := got.Terms[i]; g.Term != w.Term || g.Count != w.Count || math.Abs(g.Score-w.Score) > 1e-9 {
			t.Fatalf("suggestions %+v, want %+v", got.Terms, want)
		}
	}
	table := runBwctl(t, bin, c.Hub.URL(), "crawler", "suggest", fmt.Sprint(cr.ID))
	if i, j, k := strings.Index(table, "#release"), strings.Index(table, "#tips"), strings.Index(table, "#weekly"); i < 0 || !(i < j && j < k) {
		t.Fatalf("bwctl crawler suggest lists them out of order:\n%s", table)
	}

	stored := map[string]*api.Engagement{}
	for _, cm := range c.storedComments(cr.ID) {
		stored[cm.ID] = cm.Engagement
	}
	if e := stored[shared.URI]; e == nil || *e != (api.Engagement{Reposts: 40, Likes: 120}) {
		t.Errorf("the widely shared status was stored with engagement %+v, want its reblogs and favourites", e)
	}
}

// runBwctl runs bin/bwctl against the hub with the admin token and returns
// its standard output, failing the test when it fails.
func runBwctl(t *testing.T, bin, hub string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "bwctl"), args...)
	cmd.Env = append(os.Environ(), "BW_HUB_URL="+hub, "BW_ADMIN_TOKEN="+clustertest.AdminToken)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bwctl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}
