package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// axeScript finds axe-core for the accessibility checks: BW_AXE, else
// scripts/axe.sh installs it (from the npm registry, once, into a cache)
// and prints its path. Without it the test is skipped, or fails with
// BW_REQUIRE_SERVICES=1.
func axeScript(t *testing.T) string {
	t.Helper()
	path := os.Getenv("BW_AXE")
	if path == "" {
		out, err := exec.Command("../scripts/axe.sh", "path").Output()
		if err != nil {
			if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
				t.Fatalf("axe-core is missing and scripts/axe.sh failed: %v", err)
			}
			t.Skipf("axe-core is missing (scripts/axe.sh: %v)", err)
		}
		path = strings.TrimSpace(string(out))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read axe-core: %v", err)
	}
	return string(b)
}

// axeViolations runs axe-core in the page (WCAG 2 A and AA rules and the
// best practices) and returns its violations, one line each.
func (b *chromeTab) axeViolations(axe, what string) []string {
	b.t.Helper()
	if !evalJS[bool](b, `typeof window.axe === 'object'`) {
		// The page's Content-Security-Policy holds for its own scripts; the
		// test injects axe through the DevTools protocol.
		evalJS[bool](b, axe+"\n;true")
	}
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`axe.run(document, {
		runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
		resultTypes: ['violations'],
	}).then((r) => r.violations.map((v) => v.impact + ' ' + v.id + ': ' + v.help + ' — ' +
		v.nodes.slice(0, 5).map((n) => n.target.join(' ')).join(', ')))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe on %s: %v", what, err)
	}
	return v
}

// TestDashboard_PassesAccessibilityChecks runs axe-core on the sign-in
// form and on the page with everything an analyst opens (a crawler's
// comments, its cloud and a term's curve, a comparison), and works the
// search with the keyboard alone. It saves the picture of the page that
// docs/dashboard.png shows (written there with BW_UPDATE_DOCS=1).
func TestDashboard_PassesAccessibilityChecks(t *testing.T) {
	b := newChromeTab(t)
	axe := axeScript(t)
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	brand := c.user(5000)
	news := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	rival := c.rssCrawler(u.ID, []string{c.FeedURL("rival")}, nil, 200)
	third := c.rssCrawler(brand.ID, []string{c.FeedURL("third")}, []string{"golang OR rust"}, 0)
	publishStories(c, "news", append(slices.Clone(searchStories), [3]string{"w1", "ann", "#weather warning for the coast"}, [3]string{"w2", "bo", "#weather is fine again"}))
	publishStories(c, "rival", [][3]string{{"r1", "cy", "rival golang release"}, {"r2", "di", "rust meetup tonight"}})
	publishStories(c, "third", [][3]string{{"t1", "ed", "golang tips"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "comments counted", func() bool {
		return c.crawler(news.ID).Usage == int64(len(searchStories)+2) && c.crawler(rival.ID).Usage == 2 && c.crawler(third.ID).Usage == 1
	})

	b.do("open the dashboard", chromedp.Navigate(c.Hub.URL()+"/"))
	b.waitDOM("the token prompt", `!document.getElementById('login').hidden`)
	if v := b.axeViolations(axe, "the sign-in form"); len(v) > 0 {
		t.Errorf("the sign-in form has %d accessibility violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	b.signIn(c.Hub.URL())
	b.pick(news.ID)
	b.waitShown("the crawler's comments", []string{"w2", "w1", "s6", "s5", "s4", "s3", "s2", "s1"})

	// The search, by keyboard alone: focus the box, type, press Enter.
	b.do("search by keyboard", chromedp.Focus(chromedp.CSS("#search-q")), chromedp.SendKeys(chromedp.CSS("#search-q"), "golang -rust"+kb.Enter))
	b.waitShown("the keyboard search's matches", []string{"s5", "s1"})
	if got := evalJS[string](b, `document.activeElement.id`); got != "search-q" {
		t.Errorf("focus moved to %q after the search", got)
	}

	b.waitDOM("#weather in the cloud", `!!document.querySelector('#term-cloud button[data-term="#weather"]')`)
	b.click(`#term-cloud button[data-term="#weather"]`)
	b.waitDOM("the term's curve", `!document.getElementById('term-curve').hidden && document.getElementById('term-curve').dataset.total === '2'`)
	for _, id := range []int64{news.ID, rival.ID, third.ID} {
		b.click(fmt.Sprintf(`#searches input[data-compare="crawler"][data-id="%d"]`, id))
	}
	b.waitDOM("the comparison", `document.querySelectorAll('#cmp-table tbody tr').length === 3`)
	b.click(`#term-cloud button[data-term="#weather"]`)
	b.waitShown("the term's comments", []string{"w2", "w1"})
	if v := b.axeViolations(axe, "the Listen view"); len(v) > 0 {
		t.Errorf("the Listen view has %d accessibility violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	// The conversation of a mention, by keyboard: Enter on its button,
	// Escape closes it.
	b.do("open a thread by keyboard", chromedp.Focus(chromedp.CSS(`#comments li[data-comment-id="w2"] button[data-thread]`)), chromedp.KeyEvent(kb.Enter))
	b.waitDOM("the conversation", `document.getElementById('thread-dialog').open && document.querySelectorAll('#th-comments li').length === 1`)
	if v := b.axeViolations(axe, "the conversation"); len(v) > 0 {
		t.Errorf("the conversation has %d accessibility violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	b.do("close it by keyboard", chromedp.KeyEvent(kb.Escape))
	b.waitDOM("the conversation closed", `!document.getElementById('thread-dialog').open`)
	// Renaming a search, by keyboard: Enter on Rename puts the focus in
	// the name; Escape closes the dialog.
	b.do("open the rename dialog by keyboard", chromedp.Focus(chromedp.CSS(`#ws-rename`)), chromedp.KeyEvent(kb.Enter))
	b.waitDOM("the rename dialog, focus in its field", `document.getElementById('rename-dialog').open && document.activeElement.id === 'rn-name'`)
	if v := b.axeViolations(axe, "the rename dialog"); len(v) > 0 {
		t.Errorf("the rename dialog has %d accessibility violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	b.do("close it by keyboard", chromedp.KeyEvent(kb.Escape))
	b.waitDOM("the rename dialog closed", `!document.getElementById('rename-dialog').open`)
	b.operate()
	b.waitDOM("the crawlers listed", `document.querySelectorAll('#crawlers tbody tr').length === 3 && document.querySelectorAll('#nodes tbody tr').length === 2`)
	if v := b.axeViolations(axe, "the Operate view"); len(v) > 0 {
		t.Errorf("the Operate view has %d accessibility violations:\n%s", len(v), strings.Join(v, "\n"))
	}
	b.click("#tab-listen")
	b.waitDOM("back on Listen", `!document.getElementById('view-listen').hidden`)

	// The top bar sticks to the top of the window; in a picture of the
	// whole page it belongs at the top of the page.
	evalJS[bool](b, `(() => { document.querySelector('.topbar').style.position = 'static'; window.scrollTo(0, 0); return true; })()`)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := artifactFile(t, "dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("BW_UPDATE_DOCS") == "1" {
		if err := os.WriteFile("../docs/dashboard.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("dashboard screenshot: %s", path)
}
