package e2e

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/commentexport"
)

// spoofAuthor is an author name whose right-to-left override makes it read
// "invoiceexe.txt" when shown as it comes.
const spoofAuthor = "invoice\u202etxt.exe"

// shownIDs is the ids of the comments the page shows, in order.
func (b *chromeTab) shownIDs() []string {
	b.t.Helper()
	return evalJS[[]string](b, `Array.from(document.querySelectorAll('#comments li'), (li) => li.dataset.commentId)`)
}

// waitShown waits until the page shows exactly these comments, in order.
func (b *chromeTab) waitShown(what string, ids []string) {
	b.t.Helper()
	want := jsQuote(jsonText(b.t, ids))
	cond := `JSON.stringify(Array.from(document.querySelectorAll('#comments li'), (li) => li.dataset.commentId)) === ` + want
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(domPollInterval), chromedp.WithPollingTimeout(domTimeout)))
	if err != nil {
		b.t.Fatalf("page: %s: shows %v, want %v (error box: %q)", what, b.shownIDs(), ids,
			evalJS[string](b, `document.getElementById('search-error').textContent`))
	}
}

// search types a query into the search box and submits it.
func (b *chromeTab) search(q string) {
	b.t.Helper()
	b.fill("search-q", q)
	b.click("#search-go")
}

// TestDashboard_AnalystSearchesDrillsDownComparesAndExports works the page
// as an analyst: a search with OR, NOT, a phrase and from:, paging through
// every comment, an invalid query's message, a term of the cloud opening
// its comments and its curve, three crawlers compared, a search exported
// as CSV, and a disguised author shown as it really is.
func TestDashboard_AnalystSearchesDrillsDownComparesAndExports(t *testing.T) {
	b := newChromeTab(t)
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	news := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	second := c.rssCrawler(u.ID, []string{c.FeedURL("second")}, nil, 0)
	third := c.rssCrawler(u.ID, []string{c.FeedURL("third")}, nil, 0)
	stories := slices.Clone(searchStories)
	for i := range 16 {
		stories = append([][3]string{{fmt.Sprintf("f%02d", i), "filler", fmt.Sprintf("#weather update %d", i)}}, stories...)
	}
	stories = append(stories, [3]string{"spoof", spoofAuthor, "see the attached file"})
	publishStories(c, "news", stories) // 23 comments, the newest last
	publishStories(c, "second", [][3]string{{"b1", "x", "golang"}, {"b2", "y", "rust"}})
	publishStories(c, "third", [][3]string{{"c1", "z", "golang"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage counted", func() bool {
		return c.crawler(news.ID).Usage == int64(len(stories)) && c.crawler(second.ID).Usage == 2 && c.crawler(third.ID).Usage == 1
	})
	newestFirst := make([]string, 0, len(stories))
	for i := len(stories) - 1; i >= 0; i-- {
		newestFirst = append(newestFirst, stories[i][0])
	}

	b.signIn(c.Hub.URL())
	b.pick(news.ID)

	// Every comment, newest first, twenty a page.
	b.waitShown("the first page of every comment", newestFirst[:20])
	b.click("#search-older")
	b.waitShown("the second page", newestFirst[20:])
	if !evalJS[bool](b, `document.getElementById('search-older').disabled && document.getElementById('search-status').textContent.includes('complete')`) {
		t.Fatal("the last page offers older comments")
	}
	b.click("#search-newer")
	b.waitShown("back on the first page", newestFirst[:20])

	// The disguised author is isolated and shows its hidden character.
	b.waitDOM("the disguised author as it is", `(() => {
		const li = document.querySelector('#comments li[data-comment-id="spoof"]');
		const a = li && li.querySelector('.comment-author bdi');
		return !!a && a.textContent === 'invoice[U+202E]txt.exe' && li.querySelector('.comment-text').getAttribute('dir') === 'auto';
	})()`)

	// The query language: OR, NOT, a phrase and from:.
	b.search(`from:alice OR ("new release" -rust)`)
	b.waitShown("the query's matches", []string{"s5", "s4", "s1"})

	// An invalid query: the parser's message, in the page.
	b.search("golang (")
	b.waitText("the parser's message", "search-error", `query: unclosed "(" at column 8`)

	// A term of the cloud: its comments and its hourly curve.
	b.waitDOM("#weather in the cloud", `!!document.querySelector('#term-cloud button[data-term="#weather"]')`)
	b.click(`#term-cloud button[data-term="#weather"]`)
	var weather []string
	for _, s := range slices.Backward(stories) {
		if strings.Contains(s[2], "#weather") {
			weather = append(weather, s[0])
		}
	}
	b.waitShown("the term's comments, the first page", weather[:min(20, len(weather))])
	if q := evalJS[string](b, `document.getElementById('search-q').value`); q != "#weather" {
		t.Fatalf("the search box holds %q", q)
	}
	b.waitDOM("the term's curve", fmt.Sprintf(`!document.getElementById('term-curve').hidden &&
		document.getElementById('term-curve').dataset.total === '%d' && document.querySelectorAll('#term-curve-chart rect').length >= 24`, len(weather)))

	// Three crawlers compared: their totals and shares.
	for _, id := range []int64{news.ID, second.ID, third.ID} {
		b.click(fmt.Sprintf(`#searches input[data-compare="crawler"][data-id="%d"]`, id))
	}
	total := float64(len(stories) + 3)
	want := [][3]string{
		{fmt.Sprintf("crawler %d", news.ID), fmt.Sprint(len(stories)), fmt.Sprintf("%.4f", float64(len(stories))/total)},
		{fmt.Sprintf("crawler %d", second.ID), "2", fmt.Sprintf("%.4f", 2/total)},
		{fmt.Sprintf("crawler %d", third.ID), "1", fmt.Sprintf("%.4f", 1/total)},
	}
	b.waitDOM("three crawlers compared", `JSON.stringify(Array.from(document.querySelectorAll('#cmp-table tbody tr'), (tr) => [tr.dataset.series, tr.dataset.total, tr.dataset.share])) === `+
		jsQuote(jsonText(t, want))+` && document.querySelectorAll('#cmp-chart polyline.cmp-line').length === 3`)
	b.click(`button[data-cmp-mode="shares"]`)
	b.waitDOM("shares drawn", `document.querySelector('#cmp-chart svg').getAttribute('aria-label').startsWith('share')`)

	// The search exported as CSV: the rows the search finds, in the
	// columns of bwctl's export.
	dir := t.TempDir()
	b.do("allow downloads", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
		return err
	}))
	var wantIDs []string
	for _, s := range slices.Backward(stories) {
		if strings.Contains(s[2], "golang") || strings.Contains(s[2], "#weather") {
			wantIDs = append(wantIDs, s[0])
		}
	}
	b.search("golang OR #weather")
	b.waitShown("the search's first page", wantIDs[:min(20, len(wantIDs))])
	b.click("#export-csv")
	file := filepath.Join(dir, fmt.Sprintf("crawler-%d-comments.csv", news.ID))
	var records [][]string
	testkit.WaitFor(t, 10*time.Second, "the exported file", func() bool {
		f, err := os.Open(file)
		if err != nil {
			return false
		}
		defer f.Close()
		records, err = csv.NewReader(f).ReadAll()
		return err == nil && len(records) > 1
	})
	var got []string
	for _, r := range records[1:] {
		got = append(got, r[0])
	}
	if !slices.Equal(records[0], commentexport.Header) || !slices.Equal(got, wantIDs) {
		t.Fatalf("exported header %v, ids %v; want %v", records[0], got, wantIDs)
	}
}
