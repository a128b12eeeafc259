package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// Browser test timings.
const (
	// domTimeout bounds one wait for the page to show something; the page
	// refreshes every 2 s, so a few refreshes fit.
	domTimeout = 10 * time.Second
	// domPollInterval is how often a DOM condition is evaluated.
	domPollInterval = 50 * time.Millisecond
	// browserTimeout bounds the whole browser session.
	browserTimeout = 60 * time.Second
)

// hostileText is comment text that would run script if the page inserted it
// as markup.
const hostileText = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>`

// chromiumPath finds a Chromium for the browser test (BW_CHROMIUM, then
// PATH), or skips the test (always with -short); with BW_REQUIRE_SERVICES=1
// a missing Chromium fails it instead.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a real browser; skipped with -short")
	}
	if p := os.Getenv("BW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
		t.Fatal("chromium not found (run: scripts/chromium.sh, or set BW_CHROMIUM)")
	}
	t.Skip("chromium not found (scripts/chromium.sh installs it)")
	return ""
}

// artifactFile is where the test saves a file for people to look at:
// $BW_ARTIFACTS, or e2e/artifacts (ignored by git).
func artifactFile(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("BW_ARTIFACTS")
	if dir == "" {
		dir = "artifacts"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// chromeTab is a headless Chromium tab.
type chromeTab struct {
	t   *testing.T
	ctx context.Context
}

func newChromeTab(t *testing.T, extra ...chromedp.ExecAllocatorOption) *chromeTab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", "new"),
		// The sandbox cannot start as root or in most containers; the tab
		// loads only the hub started by this test.
		chromedp.NoSandbox,
		chromedp.WindowSize(1360, 900),
	)
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// The first action starts the browser; it must not run under a timeout
	// (that would end the browser with it).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("unable to start chromium: %v", err)
	}
	ctx, cancelAll := context.WithTimeout(ctx, browserTimeout)
	t.Cleanup(cancelAll)
	return &chromeTab{t: t, ctx: ctx}
}

// do runs browser actions, failing the test on error.
func (b *chromeTab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// waitDOM polls a JavaScript condition in the page until it holds, and
// fails the test if it does not within domTimeout.
func (b *chromeTab) waitDOM(what, cond string) time.Duration {
	b.t.Helper()
	start := time.Now()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(domPollInterval), chromedp.WithPollingTimeout(domTimeout)))
	if err != nil {
		b.t.Fatalf("page: timed out after %s waiting for %s: %v", domTimeout, what, err)
	}
	return time.Since(start)
}

// eval evaluates a JavaScript expression in the page into out.
func evalJS[T any](b *chromeTab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("page: evaluate %s: %v", expr, err)
	}
	return v
}

// jsQuote quotes s for a JavaScript expression.
func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDashboard_ShowsTheClusterLive(t *testing.T) {
	b := newChromeTab(t) // skips before starting a cluster when there is no browser
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	news := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	sport := c.rssCrawler(u.ID, []string{c.FeedURL("sport")}, []string{"final"}, 40)
	publish(c, "news", "n1", "the hub dashboard is live")
	c.Feeds.Publish("news", feedserver.Item{GUID: "n2", Title: "hostile", Description: strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(hostileText)})
	publish(c, "sport", "s1", "cup final tonight")
	testkit.WaitFor(t, clustertest.WaitTimeout, "comments stored", func() bool {
		return len(c.storedComments(news.ID)) == 2 && len(c.storedComments(sport.ID)) == 1
	})
	var hostile api.Comment
	for _, cm := range c.storedComments(news.ID) {
		if cm.ID == "n2" {
			hostile = cm
		}
	}
	if !strings.Contains(hostile.Text, "<img") {
		t.Fatalf("the hostile comment was stored as %q; the test needs markup in it", hostile.Text)
	}

	// The page asks for the token, and says so when it is wrong.
	b.do("open the dashboard", chromedp.Navigate(c.Hub.URL()+"/"))
	b.waitDOM("the token prompt", `!document.getElementById('login').hidden`)
	b.do("enter a wrong token",
		chromedp.SendKeys(chromedp.CSS(`#token`), "not-the-token"),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.waitDOM("the refusal", `!document.getElementById('login-error').hidden &&
		document.getElementById('login-error').textContent.includes('refused')`)
	b.do("enter the admin token",
		chromedp.SendKeys(chromedp.CSS(`#token`), clustertest.AdminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.waitDOM("the dashboard", `!document.getElementById('main').hidden`)
	b.operate()

	// Both nodes and both crawlers show.
	var nodeIDs []string
	for _, s := range c.Spawns {
		nodeIDs = append(nodeIDs, s.ID())
	}
	slices.Sort(nodeIDs)
	took := b.waitDOM("both nodes listed", fmt.Sprintf(`(() => {
		const ids = Array.from(document.querySelectorAll('#nodes tbody tr'), (tr) => tr.dataset.nodeId).sort();
		return JSON.stringify(ids) === %s;
	})()`, jsQuote(jsonText(t, nodeIDs))))
	t.Logf("nodes shown %s after signing in", took)
	b.waitDOM("both crawlers listed", fmt.Sprintf(`[%d, %d].every((id) => document.querySelector('#crawlers tr[data-crawler-id="' + id + '"]'))`, news.ID, sport.ID))
	b.waitDOM("crawlers running, with usage", fmt.Sprintf(`(() => {
		const row = document.querySelector('#crawlers tr[data-crawler-id="%d"]');
		return row && row.textContent.includes('running') && row.querySelector('.usage-text').textContent.startsWith('1 / 40');
	})()`, sport.ID))
	b.waitDOM("data sources listed", `document.querySelectorAll('#sources tbody tr').length === 2`)
	b.waitDOM("node events listed", `document.querySelector('#events').textContent.includes('node joined')`)
	b.waitDOM("the scaling signal", `document.getElementById('card-desired').textContent === '1'`)

	// The token is kept for the tab, never shown.
	if evalJS[bool](b, `document.body.innerText.includes(`+jsQuote(clustertest.AdminToken)+`) || document.getElementById('token').value !== ''`) {
		t.Fatal("the page shows the admin token")
	}

	// A crawler added through the admin API appears.
	added := time.Now()
	tech := c.rssCrawler(u.ID, []string{c.FeedURL("tech")}, nil, 0)
	b.waitDOM("the new crawler listed", fmt.Sprintf(`!!document.querySelector('#crawlers tr[data-crawler-id="%d"]')`, tech.ID))
	t.Logf("crawler added through the API shown after %s", time.Since(added).Round(time.Millisecond))

	// A crawler chosen in Operate opens in Listen, with its latest
	// comments, as text.
	b.do("select a crawler", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#crawlers button[data-select-crawler="%d"]`, news.ID))))
	b.waitDOM("its comments", fmt.Sprintf(`(() => {
		const texts = Array.from(document.querySelectorAll('#comments .comment-text'), (p) => p.textContent);
		return texts.length === 2 && texts.includes('the hub dashboard is live') && texts.includes(%s);
	})()`, jsQuote(hostile.Text)))
	if got := evalJS[bool](b, fmt.Sprintf(`document.querySelector('#searches li.picked').dataset.crawlerId === '%d' && location.hash.includes('crawler=%d')`, news.ID, news.ID)); !got {
		t.Fatal("the selected crawler's row is not highlighted, or the address does not name it")
	}
	if evalJS[bool](b, `document.querySelectorAll('#comments img, #comments script').length > 0 || window.__pwned !== undefined`) {
		t.Fatal("comment text was inserted as markup")
	}

	// The rate sparklines are drawn from the hub's history.
	b.waitDOM("sparklines", `document.querySelectorAll('#crawlers tr[data-crawler-id] svg.spark polyline').length === 3`)

	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := artifactFile(t, "dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshot: %s", path)
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
