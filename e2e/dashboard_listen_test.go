package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// screenshot saves the whole page as artifacts/NAME, and as docs/NAME with
// BW_UPDATE_DOCS=1 (docs/dashboard.md shows these).
func (b *chromeTab) screenshot(name string) {
	b.t.Helper()
	evalJS[bool](b, `(window.scrollTo(0, 0), true)`)              // the sticky bar at the top
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // 100: a PNG
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	b.savePicture(name, png)
}

// screenshotWindow saves what the window shows (a dialog over the page).
func (b *chromeTab) screenshotWindow(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	b.savePicture(name, png)
}

// savePicture writes a picture to artifacts/NAME, and to docs/NAME with
// BW_UPDATE_DOCS=1.
func (b *chromeTab) savePicture(name string, png []byte) {
	b.t.Helper()
	path := artifactFile(b.t, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	if os.Getenv("BW_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "docs", name), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.t.Logf("screenshot: %s", path)
}

// pick opens a crawler in Listen from its list.
func (b *chromeTab) pick(id int64) {
	b.t.Helper()
	b.click(fmt.Sprintf(`#searches button[data-listen-crawler="%d"]`, id))
}

// operate shows the Operate view.
func (b *chromeTab) operate() {
	b.t.Helper()
	b.click("#tab-operate")
	b.waitDOM("the Operate view", `!document.getElementById('view-operate').hidden && document.getElementById('view-listen').hidden`)
}

// rename names a crawler through the admin API.
func (c *cluster) rename(id int64, name string) {
	c.t.Helper()
	if _, err := c.Client.UpdateCrawler(c.Ctx, id, api.CrawlerUpdate{Name: &name}); err != nil {
		c.t.Fatal(err)
	}
}

// closedPort is a loopback address nothing listens on: a connection to it
// is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestDashboard_ListenWorkspace works the Listen view as an analyst: it
// opens by default, lists the searches by name, picks one and reads its
// cards, exact top authors, sources and languages; changes the window (the
// volume chart and a term's curve go to minutes); searches with the query
// language and sees the matched words highlighted and the total; opens a
// thread; compares three searches (counts, shares, sentiment); exports;
// renames a search from the page; narrows the search to a time range; and
// a shared link opens the same view, as a link to Operate opens Operate.
func TestDashboard_ListenWorkspace(t *testing.T) {
	b := newChromeTab(t)
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(0)
	acme := c.rssCrawler(u.ID, []string{c.FeedURL("acme")}, nil, 0)
	globex := c.rssCrawler(u.ID, []string{c.FeedURL("globex")}, nil, 0)
	initech := c.rssCrawler(u.ID, []string{c.FeedURL("initech")}, nil, 0)
	c.rename(acme.ID, "Acme launch")
	c.rename(globex.ID, "Globex")
	c.rename(initech.ID, "Initech")
	c.Feeds.SetLanguage("acme", "en")
	c.Feeds.SetLanguage("globex", "de")
	stories := [][3]string{
		{"a1", "alice", "The Golang release is out"},
		{"a2", "bob", "golang and rust side by side"},
		{"a3", "alice", "#weather today: rain"},
		{"a4", "carol", "Release notes for golang 1.30"},
		{"a5", "alice", "nothing to see"},
		{"a6", "bob", "golangs are not a word"},
	}
	publishStories(c, "acme", stories)
	publishStories(c, "globex", [][3]string{{"g1", "dieter", "golang heute"}, {"g2", "dieter", "rust morgen"}})
	publishStories(c, "initech", [][3]string{{"i1", "peter", "tps reports"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage counted", func() bool {
		return c.crawler(acme.ID).Usage == 6 && c.crawler(globex.ID).Usage == 2 && c.crawler(initech.ID).Usage == 1
	})

	b.signIn(c.Hub.URL())
	// Listen is the view a signed-in analyst lands on; it lists the
	// searches by name.
	if !evalJS[bool](b, `!document.getElementById('view-listen').hidden && document.getElementById('view-operate').hidden &&
		document.getElementById('tab-listen').getAttribute('aria-current') === 'page'`) {
		t.Fatal("the page did not open on the Listen view")
	}
	b.waitDOM("the searches by name", `JSON.stringify(Array.from(document.querySelectorAll('#searches .pick-name'), (e) => e.textContent)) === `+
		jsQuote(jsonText(t, []string{"Acme launch", "Globex", "Initech"})))

	// A search picked: its name, cards, exact top authors, sources and
	// languages.
	b.pick(acme.ID)
	b.waitText("its name", "ws-title", "Acme launch")
	b.waitDOM("its top authors, exact", `JSON.stringify(Array.from(document.querySelectorAll('#authors-table tbody tr'), (tr) => [tr.dataset.author, tr.dataset.comments])) === `+
		jsQuote(jsonText(t, [][2]string{{"alice", "3"}, {"bob", "2"}, {"carol", "1"}})))
	b.waitDOM("its sources and languages", `JSON.stringify(Array.from(document.querySelectorAll('#bd-sources li, #bd-languages li'), (li) => [li.dataset.key, li.dataset.comments])) === `+
		jsQuote(jsonText(t, [][2]string{{"rss", "6"}, {"en", "6"}})))
	b.waitDOM("its cards", `document.getElementById('ws-mentions').textContent === '6' && document.getElementById('ws-lang').textContent === 'en' &&
		document.getElementById('ws-authors').textContent === 'alice'`)
	b.waitDOM("sentiment said to be missing, not guessed", `!document.getElementById('sentiment-empty').hidden || document.querySelectorAll('#sentiment-chart rect').length > 0`)

	// The window: 1 h draws a bar a minute, and a term's curve follows it.
	b.click(`button[data-window="1h"]`)
	b.waitDOM("a bar a minute", `(() => {
		const bars = Array.from(document.querySelectorAll('#volume-chart rect'), (r) => Date.parse(r.dataset.at));
		return bars.length >= 60 && bars[1] - bars[0] === 60000 && location.hash.includes('window=1h');
	})()`)
	b.waitDOM("#weather in the cloud", `!!document.querySelector('#term-cloud button[data-term="#weather"]')`)
	b.click(`#term-cloud button[data-term="#weather"]`)
	b.waitDOM("the term's curve in minutes", `!document.getElementById('term-curve').hidden && document.getElementById('term-curve').dataset.step === 'minute' &&
		document.getElementById('term-curve').dataset.total === '1' && document.querySelectorAll('#term-curve-chart rect').length >= 60`)
	// Over 7 days, the curve steps as the volume chart does: 6 hours, on
	// the same starts, the mention still counted once.
	b.click(`button[data-window="7d"]`)
	b.waitDOM("the term's curve in the chart's 6-hour steps", `(() => {
		const fig = document.getElementById('term-curve');
		const at = (sel) => Array.from(document.querySelectorAll(sel), (r) => Date.parse(r.dataset.at));
		const curve = at('#term-curve-chart rect'), volume = at('#volume-chart rect[data-at]');
		return fig.dataset.step === '6 hours' && fig.dataset.total === '1' && curve.length >= 28 && curve.length <= 29 &&
			curve[1] - curve[0] === 6 * 3600000 && volume.length > 0 && curve[curve.length - 1] === volume[volume.length - 1];
	})()`)
	b.click(`button[data-window="24h"]`)
	b.waitDOM("the term's curve in hours", `document.getElementById('term-curve').dataset.step === 'hour' &&
		document.querySelectorAll('#term-curve-chart rect').length >= 24 && document.getElementById('term-curve').dataset.total === '1'`)

	// A search in the query language: newest first, the matched words
	// highlighted (whole words: "golangs" is no match), the total said.
	b.search(`golang -rust`)
	b.waitShown("the search's matches", []string{"a4", "a1"})
	b.waitDOM("the matched words highlighted", `JSON.stringify(Array.from(document.querySelectorAll('#comments mark'), (m) => m.textContent)) === '["golang","Golang"]'`)
	b.waitText("the total", "search-total", "2 mentions match")
	if !strings.Contains(evalJS[string](b, `location.hash`), "q=golang+-rust") {
		t.Fatalf("the address does not hold the search: %s", evalJS[string](b, `location.hash`))
	}

	// A click opens the thread (an rss item starts its own).
	b.click(`#comments li[data-comment-id="a4"] button[data-thread]`)
	b.waitDOM("the conversation", `document.getElementById('thread-dialog').open &&
		document.querySelectorAll('#th-comments li.current[data-comment-id="a4"]').length === 1`)
	b.screenshotWindow("dashboard-thread.png")
	b.click("#th-close")
	b.waitDOM("the conversation closed", `!document.getElementById('thread-dialog').open`)

	// Three searches compared: counts, shares, sentiment per search.
	for _, id := range []int64{acme.ID, globex.ID, initech.ID} {
		b.click(fmt.Sprintf(`#searches input[data-compare="crawler"][data-id="%d"]`, id))
	}
	want := [][3]string{
		{"Acme launch", "6", fmt.Sprintf("%.4f", 6.0/9)},
		{"Globex", "2", fmt.Sprintf("%.4f", 2.0/9)},
		{"Initech", "1", fmt.Sprintf("%.4f", 1.0/9)},
	}
	b.waitDOM("three searches compared", `JSON.stringify(Array.from(document.querySelectorAll('#cmp-table tbody tr'), (tr) => [tr.dataset.series, tr.dataset.total, tr.dataset.share])) === `+
		jsQuote(jsonText(t, want))+` && document.querySelectorAll('#cmp-chart polyline.cmp-line').length === 3 &&
		document.querySelectorAll('#cmp-table tbody tr .sent-cell, #cmp-table tbody tr td:last-child .dim').length === 3`)
	b.click(`button[data-cmp-mode="shares"]`)
	b.waitDOM("shares drawn", `document.querySelector('#cmp-chart svg').getAttribute('aria-label').startsWith('share')`)
	b.screenshot("dashboard-listen.png")

	// What is shown, exported: the search's matches as CSV.
	dir := t.TempDir()
	b.do("allow downloads", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
		return err
	}))
	b.click("#export-csv")
	file := filepath.Join(dir, fmt.Sprintf("crawler-%d-comments.csv", acme.ID))
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
	var ids []string
	for _, r := range records[1:] {
		ids = append(ids, r[0])
	}
	if !slices.Equal(ids, []string{"a4", "a1"}) {
		t.Fatalf("exported %v, want the two matches shown", ids)
	}

	// Renamed from the page: the list, the head and the API agree.
	b.click("#ws-rename")
	b.fill("rn-name", "Acme relaunch")
	b.click("#rn-submit")
	b.waitText("the new name in the head", "ws-title", "Acme relaunch")
	b.waitDOM("the new name in the list", fmt.Sprintf(`document.querySelector('#searches button[data-listen-crawler="%d"] .pick-name').textContent === 'Acme relaunch'`, acme.ID))
	if got := c.crawler(acme.ID).Name; got != "Acme relaunch" {
		t.Fatalf("the hub holds the name %q", got)
	}

	// A time range: from a minute and a half after the older match, only
	// the newer one is left, and the address holds the range.
	b.fill("search-since", evalJS[string](b, `(() => {
		const d = new Date(Date.parse(document.querySelector('#comments li[data-comment-id="a1"] time').getAttribute('datetime')) + 90000);
		const p = (n) => String(n).padStart(2, '0');
		return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
	})()`))
	b.click("#search-go")
	b.waitShown("the match in the range", []string{"a4"})
	b.waitText("the total in the range", "search-total", "1 mention matches")
	if !strings.Contains(evalJS[string](b, `location.hash`), "since=") {
		t.Fatalf("the address does not hold the range: %s", evalJS[string](b, `location.hash`))
	}

	// A shared link opens the same view: the search, its range, the
	// window, the query and the comparison.
	b.click(`button[data-window="7d"]`)
	link := evalJS[string](b, `location.href`)
	b2 := newChromeTab(t) // a colleague's browser: the link, then the token
	b2.do("open the shared link", chromedp.Navigate(link))
	b2.waitDOM("the token prompt", `!document.getElementById('login').hidden`)
	b2.do("enter the admin token",
		chromedp.SendKeys(chromedp.CSS(`#token`), clustertest.AdminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b2.waitDOM("the shared view", fmt.Sprintf(`document.getElementById('ws-title').textContent === 'Acme relaunch' &&
		document.querySelector('button[data-window="7d"]').getAttribute('aria-pressed') === 'true' &&
		document.getElementById('search-q').value === 'golang -rust' &&
		document.querySelectorAll('#cmp-table tbody tr').length === 3 &&
		document.querySelector('#searches li.picked button').dataset.listenCrawler === '%d'`, acme.ID))
	b2.waitShown("the shared search's matches", []string{"a4"})
	if got, want := evalJS[string](b2, `document.getElementById('search-since').value`), evalJS[string](b, `document.getElementById('search-since').value`); got != want {
		t.Fatalf("the shared range starts at %q, want %q", got, want)
	}

	// A link to the Operate view opens it.
	b3 := newChromeTab(t)
	b3.do("open a link to Operate", chromedp.Navigate(c.Hub.URL()+"/#view=operate"))
	b3.waitDOM("the token prompt", `!document.getElementById('login').hidden`)
	b3.do("enter the admin token",
		chromedp.SendKeys(chromedp.CSS(`#token`), clustertest.AdminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b3.waitDOM("the Operate view from its link", `!document.getElementById('view-operate').hidden && document.getElementById('view-listen').hidden &&
		document.getElementById('tab-operate').getAttribute('aria-current') === 'page'`)
}

// TestDashboard_OperateShowsClearStates opens the Operate view: crawlers
// by name (isolated, a bidi override shown), a crawler whose source cannot
// be reached (a name that does not resolve, a refused connection, 404,
// 503) says so in the list with its whole error, and a crawler without a
// limit of its own shows its user's.
func TestDashboard_OperateShowsClearStates(t *testing.T) {
	b := newChromeTab(t)
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(5000)
	good := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	c.rename(good.ID, "Newsroom")
	dead := c.rssCrawler(u.ID, []string{"http://" + closedPort(t) + "/feed.xml"}, nil, 0)
	// A name that cannot resolve (.invalid never does, RFC 6761), and a
	// server that answers 404 for one feed and 503 for another.
	unnamed := c.rssCrawler(u.ID, []string{"http://feed.invalid/feed.xml"}, nil, 0)
	answers := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "gone") {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(answers.Close)
	gone := c.rssCrawler(u.ID, []string{answers.URL + "/gone.xml"}, nil, 0)
	down := c.rssCrawler(u.ID, []string{answers.URL + "/down.xml"}, nil, 0)
	publishStories(c, "news", [][3]string{{"n1", "alice", "hello"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the sources' errors reported", func() bool {
		return strings.Contains(c.crawler(dead.ID).Error, "refused") && strings.Contains(c.crawler(unnamed.ID).Error, "no such host") &&
			strings.Contains(c.crawler(gone.ID).Error, "404") && strings.Contains(c.crawler(down.ID).Error, "503")
	})
	b.signIn(c.Hub.URL())
	b.operate()
	for id, want := range map[int64]string{dead.ID: "source unreachable: refused", unnamed.ID: "source unreachable: DNS",
		gone.ID: "source answered 404", down.ID: "source answered 503"} {
		b.waitDOM("the source's trouble said in the list: "+want, fmt.Sprintf(`(() => {
		const row = document.querySelector('#crawlers tr[data-crawler-id="%d"]');
		return !!row && row.querySelector('.state-cell .trouble').textContent === %s;
	})()`, id, jsQuote(want)))
	}
	b.waitDOM("the refused source's crawler degraded", fmt.Sprintf(`document.querySelector('#crawlers tr[data-crawler-id="%d"] .state-cell .badge').textContent === 'degraded'`, dead.ID))
	if c.crawler(good.ID).Error != "" || evalJS[bool](b, fmt.Sprintf(`!!document.querySelector('#crawlers tr[data-crawler-id="%d"] .trouble')`, good.ID)) {
		t.Fatal("a crawler whose source answers is said to be in trouble")
	}
	errText := c.crawler(dead.ID).Error
	if shown := evalJS[string](b, fmt.Sprintf(`document.querySelector('#crawlers tr[data-crawler-id="%d"] .cell-error').textContent`, dead.ID)); !strings.Contains(shown, "refused") {
		t.Fatalf("the error shown, %q, lost its cause (the hub's: %q)", shown, errText)
	}
	b.waitDOM("the user's limit on a crawler without one", fmt.Sprintf(`document.querySelector('#crawlers tr[data-crawler-id="%d"] .usage-text').textContent.includes("user's limit 5,000")`, good.ID))
	b.waitDOM("the name column", fmt.Sprintf(`document.querySelector('#crawlers tr[data-crawler-id="%d"] .name-cell').textContent === 'Newsroom'`, good.ID))
	// A name in a right-to-left script keeps to itself, and a bidi
	// override in it is shown, not obeyed.
	c.rename(dead.ID, "حملة‮gnp.exe")
	b.waitDOM("the name isolated, its override shown", fmt.Sprintf(`(() => {
		const cell = document.querySelector('#crawlers tr[data-crawler-id="%d"] .name-cell bdi');
		const pick = document.querySelector('#searches button[data-listen-crawler="%d"] .pick-name bdi');
		return !!cell && !!pick && cell.textContent === 'حملة[U+202E]gnp.exe' && pick.textContent === cell.textContent;
	})()`, dead.ID, dead.ID))
	b.screenshot("dashboard-operate.png")

	// A crawler opened from Operate shows in Listen.
	b.click(fmt.Sprintf(`#crawlers button[data-select-crawler="%d"]`, good.ID))
	b.waitDOM("Listen on the crawler", `!document.getElementById('view-listen').hidden && document.getElementById('ws-title').textContent === 'Newsroom'`)
}

// sentimentSplit is a count of comments by sentiment label.
type sentimentSplit struct{ Positive, Neutral, Negative int64 }

// TestDashboard_SentimentFromTheHub shows the Listen view of comments the
// spawn scores: the stacked chart's counts are the hub's activity steps',
// the net sentiment card follows them, each mention's badge is its stored
// sentiment, each compared search's sentiment sums its steps, and a
// customer's chart sums its searches'.
func TestDashboard_SentimentFromTheHub(t *testing.T) {
	b := newChromeTab(t)
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(0)
	c.Feeds.SetLanguage("one", "en")
	c.Feeds.SetLanguage("two", "en")
	one := c.rssCrawler(u.ID, []string{c.FeedURL("one")}, nil, 0)
	two := c.rssCrawler(u.ID, []string{c.FeedURL("two")}, nil, 0)
	publishStories(c, "one", [][3]string{
		{"p1", "ann", "golang 1.30 is wonderful, I love the new release and the great tooling"},
		{"p2", "bo", "golang builds broke again today, the errors are awful and I hate this mess"},
		{"p3", "cy", "The meeting about the release is on Tuesday in room 4"},
		{"p4", "di", "What a fantastic, delightful conference, thank you all, I loved every talk"},
		{"p5", "ed", "This update is terrible, slow and buggy; a horrible, disappointing waste of time"},
		{"p6", "fi", "Release notes for version 2 are published on the website"}})
	publishStories(c, "two", [][3]string{
		{"q1", "gu", "Best support team ever, amazing and kind, I am so happy"},
		{"q2", "ha", "The office opens at nine"},
		{"q3", "io", "Worst service ever, rude and useless, I am furious"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage counted", func() bool {
		return c.crawler(one.ID).Usage == 6 && c.crawler(two.ID).Usage == 3
	})

	// What the hub says: each step's split, which sums to its comments.
	hub := func(id int64) (sentimentSplit, [][2]any) {
		a, err := c.Client.CrawlerActivity(c.Ctx, id, api.Window24h, "1h")
		if err != nil {
			t.Fatal(err)
		}
		var total sentimentSplit
		var steps [][2]any
		for _, st := range a.Steps {
			if st.Positive+st.Neutral+st.Negative != st.Comments {
				t.Fatalf("crawler %d, step %s: %d positive, %d neutral, %d negative of %d comments", id, st.At, st.Positive, st.Neutral, st.Negative, st.Comments)
			}
			total.Positive += st.Positive
			total.Neutral += st.Neutral
			total.Negative += st.Negative
			if st.Comments > 0 {
				steps = append(steps, [2]any{st.At.UTC().Format(time.RFC3339), []int64{st.Positive, st.Neutral, st.Negative}})
			}
		}
		return total, steps
	}
	oneTotal, oneSteps := hub(one.ID)
	twoTotal, _ := hub(two.ID)
	if oneTotal.Positive == 0 || oneTotal.Negative == 0 || twoTotal.Positive+twoTotal.Neutral+twoTotal.Negative != 3 {
		t.Fatalf("the hub's split: %+v and %+v; want positive and negative comments among the first six", oneTotal, twoTotal)
	}

	b.signIn(c.Hub.URL())
	b.pick(one.ID)
	chartSteps := `(() => {
		const out = {};
		for (const r of document.querySelectorAll('#sentiment-chart rect[data-sentiment]')) {
			const at = new Date(Date.parse(r.dataset.at)).toISOString().replace('.000Z', 'Z');
			out[at] = out[at] || [0, 0, 0];
			out[at][['positive', 'neutral', 'negative'].indexOf(r.dataset.sentiment)] += Number(r.dataset.count);
		}
		return JSON.stringify(Object.keys(out).sort().map((k) => [k, out[k]]));
	})()`
	b.waitDOM("the stacked chart, the hub's steps", chartSteps+` === `+jsQuote(jsonText(t, oneSteps)))
	all := oneTotal.Positive + oneTotal.Neutral + oneTotal.Negative
	net := int(math.Round(float64(oneTotal.Positive-oneTotal.Negative) / float64(all) * 100))
	want := strconv.Itoa(net)
	if net > 0 {
		want = "+" + want
	}
	b.waitDOM("the net sentiment card", `document.getElementById('ws-sentiment').textContent === `+jsQuote(want))

	// Each mention's badge is its stored sentiment.
	stored := map[string]string{}
	for _, cm := range c.storedComments(one.ID) {
		stored[cm.ID] = api.SentimentLabel(cm.Sentiment)
	}
	b.waitShown("the mentions", []string{"p6", "p5", "p4", "p3", "p2", "p1"})
	var badges [][2]string
	if err := json.Unmarshal([]byte(evalJS[string](b, `JSON.stringify(Array.from(document.querySelectorAll('#comments li'), (li) => {
		const b = li.querySelector('.sent-badge');
		return [li.dataset.commentId, b ? b.textContent.split(' ')[0] : ''];
	}))`)), &badges); err != nil {
		t.Fatal(err)
	}
	for _, bd := range badges {
		if want, ok := stored[bd[0]]; !ok || bd[1] != want {
			t.Errorf("mention %s shows sentiment %q; stored: %q", bd[0], bd[1], want)
		}
	}

	// Two searches compared: each one's sentiment is its steps'.
	for _, id := range []int64{one.ID, two.ID} {
		b.click(fmt.Sprintf(`#searches input[data-compare="crawler"][data-id="%d"]`, id))
	}
	cells := `JSON.stringify(Array.from(document.querySelectorAll('#cmp-table tbody tr .sent-cell'), (c) => [Number(c.dataset.positive), Number(c.dataset.neutral), Number(c.dataset.negative)]))`
	b.waitDOM("each compared search's sentiment", cells+` === `+jsQuote(jsonText(t, [][3]int64{
		{oneTotal.Positive, oneTotal.Neutral, oneTotal.Negative}, {twoTotal.Positive, twoTotal.Neutral, twoTotal.Negative}})))

	// A customer: its searches' sentiment summed.
	b.click(fmt.Sprintf(`#listen-users button[data-listen-user="%d"]`, u.ID))
	b.waitDOM("the customer's sentiment", fmt.Sprintf(`(() => {
		const sum = (k) => Array.from(document.querySelectorAll('#sentiment-chart rect.sent-' + k), (r) => Number(r.dataset.count)).reduce((a, b) => a + b, 0);
		return sum('positive') === %d && sum('neutral') === %d && sum('negative') === %d;
	})()`, oneTotal.Positive+twoTotal.Positive, oneTotal.Neutral+twoTotal.Neutral, oneTotal.Negative+twoTotal.Negative))
}
