package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	mastodonfake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestMastodon_ClosedLiveFeedsServeHashtagsThroughFollowedTags runs a
// spawn against an instance that closed its live and hashtag feeds, as
// mastodon.social did: its public stream carries only deletes. A hashtag
// crawler receives the tag's statuses through the tag its account follows
// and the home timeline — and nothing else the home timeline carries; a
// free-text crawler fails with an error naming the instance and why.
func TestMastodon_ClosedLiveFeedsServeHashtagsThroughFollowedTags(t *testing.T) {
	inst := mastodonfake.Start(t, mastodonfake.Options{Token: "tok", Domain: "social.example", TimelinesAccess: mastodonfake.ClosedLiveFeeds})
	inst.FollowAccount("friend")
	c := newCluster(t, clusterOpts{})
	c.addSpawnWith(func(cfg *spawnapp.Settings) {
		cfg.Mastodon.URL, cfg.Mastodon.Token = []string{inst.URL()}, "tok"
	})
	c.WaitNodes(1)
	u := c.user(0)
	tags, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceMastodon, Query: []string{"#golang"}})
	if err != nil {
		t.Fatal(err)
	}
	free, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceMastodon, Query: []string{"golang"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the tag followed and the home timeline read", func() bool {
		return slices.Equal(inst.FollowedTags(), []string{"golang"}) &&
			slices.ContainsFunc(inst.Subscriptions(), func(s []string) bool { return slices.Equal(s, []string{"user"}) })
	})

	st := inst.Post(mastodonfake.Status{Acct: "gopher@go.example", Content: `<p>Release day <a href="https://social.example/tags/golang" class="mention hashtag" rel="tag">#<span>golang</span></a></p>`,
		Language: "en", Tags: []string{"golang"}})
	inst.Post(mastodonfake.Status{Acct: "friend", Content: "<p>golang lunch, no tag</p>"})
	inst.Post(mastodonfake.Status{Acct: "friend", Content: "<p>#golang for my followers</p>", Tags: []string{"golang"}, Visibility: mastodonfake.VisibilityPrivate})
	last := inst.Post(mastodonfake.Status{Acct: "carol", Content: "<p>more #golang</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the tag's statuses stored", func() bool { return len(c.storedComments(tags.ID)) >= 2 })
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage reported", func() bool { return c.crawler(tags.ID).Usage >= 2 })
	got := c.storedComments(tags.ID)
	ids := []string{}
	for _, cm := range got {
		ids = append(ids, cm.ID)
	}
	slices.Sort(ids)
	want := []string{st.URI, last.URI}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("stored %v, want the tag's public statuses %v", ids, want)
	}
	for _, cm := range got {
		if cm.ID == st.URI && (cm.Author != "gopher@go.example" || cm.AuthorID != "https://go.example/users/gopher" || cm.Text != "Release day #golang" || cm.Lang != "en") {
			t.Fatalf("stored %+v", cm)
		}
	}

	host := strings.TrimPrefix(inst.URL(), "http://")
	testkit.WaitFor(t, clustertest.WaitTimeout, "the free-text crawler failed", func() bool {
		cr := c.crawler(free.ID)
		return cr.State == api.StateFailed && strings.Contains(cr.Error, host) && strings.Contains(cr.Error, "live_feeds local disabled, remote disabled")
	})
	if cr := c.crawler(tags.ID); cr.State != api.StateRunning || cr.Error != "" {
		t.Fatalf("hashtag crawler %s: %q", cr.State, cr.Error)
	}
}
