package e2e

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestDegradedCrawler_UnreachableSourceSaysWhyUntilItRecovers runs crawlers
// as a new user offline would: a feed on a host that does not resolve, a
// feed on a port nothing listens on, and Bluesky through a Jetstream that
// does not resolve. None is "running": each is degraded, saying why (the
// name did not resolve, the connection was refused), in the crawler
// document, the hub's counts and bwctl's crawler list and show; when the
// feed's server comes up its crawler is running again, the reason gone.
func TestDegradedCrawler_UnreachableSourceSaysWhyUntilItRecovers(t *testing.T) {
	bin := binDir(t)
	c := newCluster(t, clusterOpts{})
	c.addSpawnWith(func(cfg *spawnapp.Settings) {
		cfg.Bluesky.JetstreamURL = "ws://jetstream.invalid/subscribe"
		cfg.Bluesky.AppViewURL = "http://appview.invalid"
	})
	c.WaitNodes(1)
	u := c.user(0)
	closedAddr := testkit.FreeAddr(t)
	unresolved := c.rssCrawler(u.ID, []string{"http://feeds.invalid/news.xml"}, nil, 0)
	refused := c.rssCrawler(u.ID, []string{"http://" + closedAddr + "/feeds/news.xml"}, nil, 0)
	sky, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceBluesky, Query: []string{"golang"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id     int64
		reason string
	}{{unresolved.ID, "DNS"}, {refused.ID, "connection refused"}, {sky.ID, "DNS"}} {
		testkit.WaitFor(t, clustertest.WaitTimeout, "crawler degraded saying why", func() bool {
			cr := c.crawler(tc.id)
			return cr.State == api.StateDegraded && strings.Contains(cr.Error, tc.reason)
		})
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the hub counting them", func() bool {
		h, err := c.Client.Health(c.Ctx)
		return err == nil && h.Crawlers.ByState[api.StateDegraded] == 3 && h.Crawlers.ByState[api.StateRunning] == 0
	})
	ctl := func(args ...string) string {
		cmd := exec.Command(filepath.Join(bin, "bwctl"), args...)
		cmd.Env = []string{"BW_HUB_URL=" + c.Hub.URL(), "BW_ADMIN_TOKEN=" + clustertest.AdminToken, "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bwctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	list := ctl("crawler", "list")
	for _, id := range []int64{unresolved.ID, refused.ID, sky.ID} {
		if !regexp.MustCompile(`(?m)^` + strconv.FormatInt(id, 10) + `\s.*\sdegraded\s.*\s(DNS|connection refused)`).MatchString(list) {
			t.Fatalf("crawler list does not show crawler %d degraded with the reason:\n%s", id, list)
		}
	}
	show := ctl("crawler", "show", strconv.FormatInt(refused.ID, 10))
	if !regexp.MustCompile(`(?m)^state:\s+degraded$`).MatchString(show) || !regexp.MustCompile(`(?m)^error:\s+connection refused`).MatchString(show) {
		t.Fatalf("crawler show does not say degraded and why:\n%s", show)
	}

	// The feed's server comes up on the address the crawler reads.
	ln, err := net.Listen("tcp", closedAddr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	feeds := feedserver.New(feedserver.Options{})
	srv := &http.Server{Handler: feeds.Handler()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	testkit.WaitFor(t, clustertest.WaitTimeout, "the recovered crawler running again", func() bool {
		cr := c.crawler(refused.ID)
		return cr.State == api.StateRunning && cr.Error == ""
	})
	if cr := c.crawler(unresolved.ID); cr.State != api.StateDegraded {
		t.Fatalf("the unresolved feed's crawler is %s (%q), want still degraded", cr.State, cr.Error)
	}
}
