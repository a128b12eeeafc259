package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestFidelity_XRepostStoredWholeWithItsLinksAndEntities runs a twitter
// crawler over X API v2 against a local X that speaks as X does: the
// repost arrives as "RT @golang: …" cut to 140 characters, HTML-escaped,
// its link a t.co address, the whole original in includes.tweets. The
// crawler's query names words only the uncut original holds (a hashtag
// past the cut, the domain behind the t.co link), so X matches it and the
// spawn must too. The admin API then shows the repost as its author wrote
// the original: whole, unescaped, the link in full and among its links,
// with repost_of naming the original and author_id the reposter's id.
func TestFidelity_XRepostStoredWholeWithItsLinksAndEntities(t *testing.T) {
	srv, apiURL := xv2.Start(t, xv2.Options{BearerToken: "bearer"})
	c := newCluster(t, clusterOpts{})
	c.addSpawnWith(func(cfg *spawnapp.Settings) { cfg.Twitter.APIURL, cfg.Twitter.BearerToken = apiURL, "bearer" })
	c.WaitNodes(1)

	const origText = "Go 1.24 <is out> & it's fast: generic type aliases, Swiss Table maps, weak pointers, " +
		"os.Root for directory-limited file access & more https://go.dev/blog/go1.24 #swisstables"
	// Published before any rule exists, so only the repost is delivered.
	orig, _ := srv.Publish(xv2.Post{Text: origText, Username: "golang", AuthorID: "113419064", Lang: "en"})

	u := c.user(0)
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceTwitter, Query: []string{`swisstables "go.dev"`}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler's rule and the stream", func() bool {
		return len(srv.Rules()) > 0 && srv.Connected()
	})
	repost, matched := srv.Publish(xv2.Post{RepostOf: orig.ID, Username: "gopher", AuthorID: "42"})
	if len(matched) == 0 {
		t.Fatalf("X's rules %v did not match the repost", srv.Rules())
	}

	var got []api.Comment
	testkit.WaitFor(t, clustertest.WaitTimeout, "the repost in the admin API", func() bool {
		got, err = c.Client.RecentComments(c.Ctx, cr.ID, 10)
		return err == nil && len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("%d comments shown, want the repost alone: %+v", len(got), got)
	}
	cm := got[0]
	if cm.ID != "tw:"+repost.ID || cm.Author != "gopher" || cm.AuthorID != "42" || cm.RepostOf != "tw:"+orig.ID {
		t.Errorf("comment id %q author %q author_id %q repost_of %q; want tw:%s gopher 42 tw:%s", cm.ID, cm.Author, cm.AuthorID, cm.RepostOf, repost.ID, orig.ID)
	}
	if cm.Text != origText {
		t.Errorf("text %q\nwant the whole original %q", cm.Text, origText)
	}
	if strings.Contains(cm.Text, "t.co/") || strings.Contains(cm.Text, "&amp;") || strings.HasPrefix(cm.Text, "RT @") {
		t.Errorf("text %q keeps X's shortening, escaping or cut", cm.Text)
	}
	if !slices.Equal(cm.Links, []string{"https://go.dev/blog/go1.24"}) {
		t.Errorf("links %q", cm.Links)
	}
	if cm.URL != "https://twitter.com/gopher/status/"+repost.ID || cm.Lang != "en" {
		t.Errorf("url %q lang %q", cm.URL, cm.Lang)
	}
}
