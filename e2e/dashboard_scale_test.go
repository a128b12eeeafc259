package e2e

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
)

// scaleWindow is how long the scale measurement watches the page.
const scaleWindow = 25 * time.Second

// TestDashboard_RefreshCostAtScale measures what one refresh of the page
// costs with many crawlers (BW_DASHBOARD_CRAWLERS, default 10,000): the
// bytes the page reads per refresh, how long a refresh takes, and the
// history requests a round of sparklines makes. It is a measurement for
// docs/benchmarks.md, run on demand (BW_DASHBOARD_SCALE=1), not a check.
func TestDashboard_RefreshCostAtScale(t *testing.T) {
	if os.Getenv("BW_DASHBOARD_SCALE") != "1" {
		t.Skip("a measurement: BW_DASHBOARD_SCALE=1 runs it")
	}
	n := 10000
	if v := os.Getenv("BW_DASHBOARD_CRAWLERS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	chromiumPath(t)
	c := newCluster(t, clusterOpts{spawns: 0})
	u := c.user(0)
	off := false
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				_, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS,
					Query: []string{fmt.Sprintf("http://127.0.0.1:9/feeds/f%d.xml", i)}, Enabled: &off})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	start := time.Now()
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d crawlers created in %s", n, time.Since(start).Round(time.Second))
	b := newChromeTab(t) // its timeout starts now

	b.do("open the dashboard", chromedp.Navigate(c.Hub.URL()+"/"))
	b.waitDOM("the token prompt", `!document.getElementById('login').hidden`)
	b.do("sign in", chromedp.SendKeys(chromedp.CSS(`#token`), clustertest.AdminToken), chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.do("wait", chromedp.Sleep(3*time.Second))
	t.Logf("status: %s", evalJS[string](b, `document.getElementById('status').textContent`))
	b.waitDOM("the crawler table", `document.querySelectorAll('#crawlers tbody tr').length > 0`)
	evalJS[bool](b, `(() => { performance.setResourceTimingBufferSize(1000000); performance.clearResourceTimings(); return true; })()`)
	b.do("watch the page", chromedp.Sleep(scaleWindow))
	m := evalJS[map[string]float64](b, `(() => {
		const rs = performance.getEntriesByType('resource').filter((r) => r.name.includes('/v1/'));
		const lists = rs.filter((r) => /\/v1\/crawlers(\?|$)/.test(r.name)).map((r) => r.startTime).sort((a, b) => a - b);
		const gaps = lists.slice(1).map((t, i) => t - lists[i] - 2000);
		const hist = rs.filter((r) => r.name.includes('/history'));
		const bytes = rs.reduce((n, r) => n + r.encodedBodySize, 0);
		return {
			refreshes: lists.length,
			bytes_per_refresh: lists.length ? bytes / lists.length : 0,
			refresh_ms: gaps.length ? gaps.reduce((a, b) => a + b, 0) / gaps.length : 0,
			history_requests: hist.length,
			history_requests_per_refresh: lists.length ? hist.length / lists.length : 0,
			requests: rs.length,
		};
	})()`)
	t.Logf("%d crawlers, over %s: %.0f refreshes, %.0f bytes a refresh, a refresh takes %.0f ms (after its 2 s wait), %.0f history requests (%.1f a refresh), %.0f requests in all",
		n, scaleWindow, m["refreshes"], m["bytes_per_refresh"], m["refresh_ms"], m["history_requests"], m["history_requests_per_refresh"], m["requests"])
}

// TestDashboard_PagesTheCrawlerTable shows 120 crawlers 50 a page, in
// Listen's list of searches (where one is found by name) and in Operate's
// table, and reads the sparklines of the shown rows in one request, never
// one request per crawler.
func TestDashboard_PagesTheCrawlerTable(t *testing.T) {
	b := newChromeTab(t)
	c := newCluster(t, clusterOpts{spawns: 0})
	u := c.user(0)
	off := false
	for i := range 120 {
		if _, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS,
			Query: []string{fmt.Sprintf("http://127.0.0.1:9/feeds/f%d.xml", i)}, Enabled: &off}); err != nil {
			t.Fatal(err)
		}
	}
	needle := int64(117)
	c.rename(needle, "Needle in the hay")
	b.signIn(c.Hub.URL())
	// Listen's list of searches pages the same way, and finds one by name.
	picks := func(from, to int) string {
		return fmt.Sprintf(`(() => {
			const ids = Array.from(document.querySelectorAll('#searches button[data-listen-crawler]'), (b) => Number(b.dataset.listenCrawler));
			return ids.length === %d && ids[0] === %d && ids[ids.length - 1] === %d;
		})()`, to-from+1, from, to)
	}
	b.waitDOM("Listen's first page", picks(1, 50)+` && document.getElementById('searches-page').textContent === '1–50 of 120'`)
	b.click("#searches-next")
	b.waitDOM("Listen's second page", picks(51, 100)+` && document.getElementById('searches-page').textContent === '51–100 of 120'`)
	b.fill("picker-filter", "needle")
	b.waitDOM("the search found by name", picks(int(needle), int(needle))+` && document.getElementById('searches-page').textContent === '1–1 matching'`)
	b.fill("picker-filter", "")
	b.waitDOM("the whole list again", picks(1, 50))
	b.operate()
	rows := func(from, to int) string {
		return fmt.Sprintf(`(() => {
			const ids = Array.from(document.querySelectorAll('#crawlers tbody tr'), (tr) => Number(tr.dataset.crawlerId));
			return ids.length === %d && ids[0] === %d && ids[ids.length - 1] === %d;
		})()`, to-from+1, from, to)
	}
	b.waitDOM("the first page", rows(1, 50)+` && document.getElementById('crawlers-page').textContent === 'crawlers 1–50 of 120'`)
	b.click("#crawlers-next")
	b.waitDOM("the second page", rows(51, 100)+` && document.getElementById('crawlers-page').textContent === 'crawlers 51–100 of 120'`)
	b.click("#crawlers-next")
	b.waitDOM("the last page", rows(101, 120)+` && document.getElementById('crawlers-next').disabled`)
	b.click("#crawlers-prev")
	b.waitDOM("back on the second page", rows(51, 100))
	b.waitDOM("sparklines of the shown rows", `document.querySelectorAll('#crawlers tbody svg.spark').length === 50`)
	if n := evalJS[int](b, `performance.getEntriesByType('resource').filter((r) => /\/v1\/crawlers\/[0-9]+\/history/.test(r.name)).length`); n != 0 {
		t.Fatalf("the page read %d histories one crawler at a time", n)
	}
	if !evalJS[bool](b, `performance.getEntriesByType('resource').some((r) => r.name.includes('/v1/crawlers/history?ids=51,52,'))`) {
		t.Fatal("the page did not read the shown rows' histories in one request")
	}
}
