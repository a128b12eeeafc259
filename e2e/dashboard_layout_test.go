package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// layoutWidths are the window widths the crawler table must fit at.
var layoutWidths = []int64{1024, 1280, 1440, 1920}

// TestDashboard_CrawlerTableFitsALongErrorAndQuery shows a crawler whose
// error is over 300 characters and whose query is one long URL next to a
// healthy crawler, and checks at every width from 1024 px that the table
// fits its panel, every action button is whole and visible, and neither
// the state nor the query column crowds out the other.
func TestDashboard_CrawlerTableFitsALongErrorAndQuery(t *testing.T) {
	b := newChromeTab(t)
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(0)
	ok := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	// Nothing listens on port 1: fetching fails, and the error names the
	// long URL.
	long := "http://127.0.0.1:1/feeds/" + strings.Repeat("a-very-long-feed-path-segment/", 3) + "feed.xml"
	bad := c.rssCrawler(u.ID, []string{long}, nil, 0)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler's error over 300 characters", func() bool {
		return len(c.crawler(bad.ID).Error) >= 300
	})
	t.Logf("error (%d characters): %s", len(c.crawler(bad.ID).Error), c.crawler(bad.ID).Error)

	b.signIn(c.Hub.URL())
	b.operate()
	for _, width := range layoutWidths {
		t.Run(fmt.Sprintf("%d px", width), func(t *testing.T) {
			b.do("resize", chromedp.EmulateViewport(width, 900))
			b.waitDOM("both crawlers, the unreachable one degraded, its error shown", fmt.Sprintf(`(() => {
				const row = document.querySelector('#crawlers tr[data-crawler-id="%d"]');
				return !!row && !!document.querySelector('#crawlers tr[data-crawler-id="%d"]') && row.querySelector('.badge').textContent === 'degraded' && Array.from(row.querySelectorAll('[title]')).some((e) => e.title.includes('connection refused'));
			})()`, bad.ID, ok.ID))
			got := evalJS[string](b, fmt.Sprintf(`(() => {
				const table = document.getElementById('crawlers');
				const wrap = table.closest('.table-wrap');
				const box = wrap.getBoundingClientRect();
				const problems = [];
				if (table.scrollWidth > wrap.clientWidth + 1) problems.push('table ' + table.scrollWidth + ' px wide in a panel of ' + wrap.clientWidth);
				if (document.documentElement.scrollWidth > window.innerWidth + 1) problems.push('page scrolls sideways: ' + document.documentElement.scrollWidth);
				for (const btn of table.querySelectorAll('tbody button.btn')) {
					const r = btn.getBoundingClientRect();
					if (r.left < box.left - 1 || r.right > box.right + 1 || r.width < 20) problems.push('button ' + btn.textContent + ' cut off: ' + Math.round(r.left) + '..' + Math.round(r.right) + ' in ' + Math.round(box.left) + '..' + Math.round(box.right));
				}
				const row = table.querySelector('tr[data-crawler-id="%d"]');
				const head = Array.from(table.tHead.rows[0].cells).map((c) => c.textContent.trim().toLowerCase());
				const col = (name) => row.cells[head.indexOf(name)].getBoundingClientRect().width;
				const state = col('state'), query = col('query');
				if (state > 320) problems.push('state column ' + Math.round(state) + ' px');
				if (query < 120) problems.push('query column ' + Math.round(query) + ' px');
				for (const cell of row.cells) {
					if (cell.scrollWidth > cell.clientWidth + 1) problems.push('cell ' + cell.cellIndex + ' overflows: ' + cell.scrollWidth + ' > ' + cell.clientWidth);
				}
				return problems.join('; ');
			})()`, bad.ID))
			if got != "" {
				t.Fatalf("at %d px: %s", width, got)
			}
		})
	}
	if png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(90)); err == nil {
		_ = os.WriteFile(artifactFile(t, "dashboard-layout.png"), png, 0o644)
	}
}
