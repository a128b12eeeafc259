package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// hostileTerm is a term no tokenizer makes but a spawn could report: the
// page must show it as text.
const hostileTerm = `<img src=x onerror="window.__pwned=1">`

// Older analytics the injector adds, so that the windows differ: terms and
// comments of 5 hours ago (in 24h and 7d, not in 1h) and terms of 3 days
// ago (in 7d only).
const (
	earlierTerm  = "#earlier"
	earlierCount = 4
	earlierSteps = 9 // comments of the injected minute
	lastWeekTerm = "#lastweek"
)

// analyticsInjector stands between the hub and a spawn and adds to the
// first usage increment the spawn reports (and to its every resend, so the
// hub applies one consistent increment once) the hostile term and older
// terms and activity: what a spawn that was broken into, or that reported
// a delayed increment, could send.
type analyticsInjector struct {
	srv    *httptest.Server
	target atomic.Pointer[url.URL]
	now    time.Time

	mu    sync.Mutex
	first string // node id and seq of the increment rewritten
}

func startAnalyticsInjector(t *testing.T) *analyticsInjector {
	t.Helper()
	in := &analyticsInjector{now: time.Now().UTC()}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if u := in.target.Load(); u != nil {
				r.SetURL(u)
			}
		},
		ModifyResponse: in.rewrite,
	}
	in.srv = httptest.NewServer(rp)
	t.Cleanup(in.srv.Close)
	return in
}

func (in *analyticsInjector) URL() string { return in.srv.URL }

func (in *analyticsInjector) setTarget(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	in.target.Store(u)
}

func (in *analyticsInjector) rewrite(resp *http.Response) error {
	if resp.Request.URL.Path != api.PathPoll || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var poll api.PollResponse
	if err := json.Unmarshal(body, &poll); err == nil {
		for i := range poll.Increments {
			inc := &poll.Increments[i]
			if inc.Analytics == nil || len(inc.Analytics.Terms) == 0 || !in.isFirst(inc) {
				continue
			}
			a := inc.Analytics
			a.Terms[0].Terms = append(a.Terms[0].Terms, api.TermCount{Term: hostileTerm, Count: inc.Count})
			a.Terms = append(a.Terms,
				api.HourTerms{At: in.now.Add(-5 * time.Hour).Truncate(time.Hour), Terms: []api.TermCount{{Term: earlierTerm, Count: earlierCount}}},
				api.HourTerms{At: in.now.Add(-72 * time.Hour).Truncate(time.Hour), Terms: []api.TermCount{{Term: lastWeekTerm, Count: 2}}})
			a.Minutes = append(a.Minutes, api.MinuteActivity{At: in.now.Add(-5 * time.Hour).Truncate(time.Minute), Comments: earlierSteps})
		}
		if body, err = json.Marshal(poll); err != nil {
			return err
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// isFirst reports whether inc is the increment the injector rewrites: the
// first one it saw, each time it is sent.
func (in *analyticsInjector) isFirst(inc *api.Increment) bool {
	id := fmt.Sprintf("%s/%d", inc.NodeID, inc.Seq)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.first == "" {
		in.first = id
	}
	return in.first == id
}

// cloudTerm is a term of the page's cloud as the test reads it.
type cloudTerm struct {
	Term  string  `json:"term"`
	Count int64   `json:"count"`
	Kind  string  `json:"kind"`
	Text  string  `json:"text"`
	Size  float64 `json:"size"`
}

// cloudJS reads the cloud: every term's data, its text and font size.
const cloudJS = `JSON.stringify(Array.from(document.querySelectorAll('#term-cloud li'), (li) => ({
	term: li.dataset.term, count: Number(li.dataset.count), kind: li.dataset.kind,
	text: li.querySelector('.tc-term').textContent, size: parseFloat(li.style.fontSize)})))`

func (b *chromeTab) cloud() []cloudTerm {
	b.t.Helper()
	var out []cloudTerm
	if err := json.Unmarshal([]byte(evalJS[string](b, cloudJS)), &out); err != nil {
		b.t.Fatal(err)
	}
	return out
}

// cloudCondition holds when the page's cloud shows exactly terms, in order.
// The expected list goes through JSON.parse, so both sides are JavaScript's
// own JSON text (Go's escapes < and > where JavaScript's does not).
func cloudCondition(t *testing.T, terms []api.TermCount) string {
	pairs := make([][2]any, len(terms))
	for i, tc := range terms {
		pairs[i] = [2]any{tc.Term, tc.Count}
	}
	return fmt.Sprintf(`!document.getElementById('trends').hidden && JSON.stringify(Array.from(document.querySelectorAll('#term-cloud li'),
		(li) => [li.dataset.term, Number(li.dataset.count)])) === JSON.stringify(JSON.parse(%s))`, jsQuote(jsonText(t, pairs)))
}

// volumeCondition holds when the page's volume chart has as many bars as
// act has steps, and a bar with the comments of each busy step of act (by
// its time, so a step boundary passing between the two reads does not
// matter).
func volumeCondition(t *testing.T, act api.Activity) string {
	type step struct {
		At       int64 `json:"at"`
		Comments int64 `json:"comments"`
	}
	var busy []step
	for _, s := range act.Steps {
		if s.Comments > 0 {
			busy = append(busy, step{s.At.UnixMilli(), s.Comments})
		}
	}
	return fmt.Sprintf(`(() => {
		if (document.getElementById('volume').hidden) return false;
		const bars = Array.from(document.querySelectorAll('#volume-chart rect'), (r) => [Date.parse(r.dataset.at), Number(r.dataset.comments)]);
		return bars.length === %d && %s.every((s) => bars.some(([at, n]) => at === s.at && n === s.comments));
	})()`, len(act.Steps), jsonText(t, busy))
}

// TestDashboard_TrendsCloudAndVolume runs comments from a local feed
// through a spawn, signs in, and checks the trends of the selected crawler
// in Chromium: the term cloud shows the hub's top terms with their counts,
// sized by count and coloured by kind, a hostile term as text; the volume
// chart has a bar per step of the hub's activity; switching the window
// reads that window; new comments show without a click; a crawler with
// nothing yet says so; a selected user shows the terms of all its crawlers.
func TestDashboard_TrendsCloudAndVolume(t *testing.T) {
	b := newChromeTab(t) // skips before starting a cluster when there is no browser
	inj := startAnalyticsInjector(t)
	c := newCluster(t, clusterOpts{})
	s := c.addSpawnWith(func(cfg *spawnapp.Settings) { cfg.Advertise = inj.URL() })
	inj.setTarget(s.URL())
	c.WaitNodes(1)
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("trend")}, nil, 0)
	quiet := c.rssCrawler(u.ID, []string{c.FeedURL("quiet")}, nil, 0)
	item := func(guid, text string) {
		// The author is the guid without its number: go0…go5 are "go"'s.
		c.Feeds.Publish("trend", feedserver.Item{GUID: guid, Title: text, Author: strings.TrimRight(guid, "0123456789"), Published: time.Now()})
	}
	for i := range 6 {
		item(fmt.Sprintf("go%d", i), "#golang 1.24 release notes")
	}
	for i := range 3 {
		item(fmt.Sprintf("gopher%d", i), "@gopher likes #golang generics")
	}
	item("rust", "#rustlang borrow checker")
	testkit.WaitFor(t, clustertest.WaitTimeout, "ten comments counted", func() bool { return c.crawler(cr.ID).Usage == 10 })

	terms := func(window string) []api.TermCount {
		ts, err := c.Client.CrawlerTerms(c.Ctx, cr.ID, window, 40)
		if err != nil {
			t.Fatal(err)
		}
		return ts.Terms
	}
	activity := func(id int64, window, step string) api.Activity {
		act, err := c.Client.CrawlerActivity(c.Ctx, id, window, step)
		if err != nil {
			t.Fatal(err)
		}
		return act
	}
	var day []api.TermCount
	testkit.WaitFor(t, clustertest.WaitTimeout, "the hub's terms of the ten comments", func() bool {
		day = terms(api.Window24h)
		m := termMap(day)
		return m["#golang"] == 9 && m["@gopher"] == 3 && m[hostileTerm] > 0 && m[earlierTerm] == earlierCount
	})

	b.signIn(c.Hub.URL())
	b.pick(cr.ID)

	// The cloud: the hub's 24h terms and counts, most frequent first.
	b.waitDOM("the cloud of the last 24 hours", cloudCondition(t, day))
	cloud := b.cloud()
	kinds := map[string]string{}
	for i, ct := range cloud {
		kinds[ct.Term] = ct.Kind
		if ct.Text != ct.Term {
			t.Errorf("term %q shows %q", ct.Term, ct.Text)
		}
		// Most frequent first, and a term seen less is drawn smaller.
		if prev := cloud[max(i-1, 0)]; ct.Count > prev.Count || (ct.Count < prev.Count) != (ct.Size < prev.Size) {
			t.Errorf("%q (%d) is drawn at %.1fpx after %q (%d) at %.1fpx", ct.Term, ct.Count, ct.Size, prev.Term, prev.Count, prev.Size)
		}
	}
	if first, last := cloud[0], cloud[len(cloud)-1]; first.Size != 34 || last.Size != 12 {
		t.Errorf("sizes run from %q at %.1fpx to %q at %.1fpx; want 34px down to 12px", first.Term, first.Size, last.Term, last.Size)
	}
	for term, kind := range map[string]string{"#golang": "hashtag", "@gopher": "mention", "release notes": "phrase", "generics": "word"} {
		if kinds[term] != kind {
			t.Errorf("%q is drawn as a %q, want a %s", term, kinds[term], kind)
		}
	}
	// The hostile term is text: no element made of it, no script run.
	if got := evalJS[string](b, `(() => {
		const li = Array.from(document.querySelectorAll('#term-cloud li')).find((li) => li.dataset.term === `+jsQuote(hostileTerm)+`);
		if (!li) return 'missing';
		if (li.querySelector('.tc-term').textContent !== `+jsQuote(hostileTerm)+`) return 'altered';
		if (document.querySelectorAll('#trends img, #trends script').length > 0 || window.__pwned !== undefined) return 'ran';
		return 'text';
	})()`); got != "text" {
		t.Fatalf("the hostile term is %s, want shown as text", got)
	}

	// The volume chart: a bar an hour, the hub's activity.
	b.waitDOM("the volume chart of the last 24 hours", volumeCondition(t, activity(cr.ID, api.Window24h, "1h")))
	if got := evalJS[string](b, `document.getElementById('volume-summary').textContent`); !strings.Contains(got, fmt.Sprintf("%d comments in the last 24 hours", 10+earlierSteps)) {
		t.Errorf("volume summary %q", got)
	}

	// Switching the window reads that window.
	b.click(`button[data-window="1h"]`)
	hour := terms(api.Window1h)
	if m := termMap(hour); m[earlierTerm] != 0 || m["#golang"] != 9 {
		t.Fatalf("the hub's 1h terms %v: the test needs #golang and not %s", hour, earlierTerm)
	}
	b.waitDOM("the cloud of the last hour", cloudCondition(t, hour))
	b.waitDOM("the volume chart of the last hour", volumeCondition(t, activity(cr.ID, api.Window1h, "1m")))
	if !evalJS[bool](b, `document.querySelector('button[data-window="1h"]').getAttribute('aria-pressed') === 'true' &&
		document.querySelector('button[data-window="24h"]').getAttribute('aria-pressed') === 'false'`) {
		t.Error("the 1h button is not shown pressed")
	}
	b.click(`button[data-window="7d"]`)
	week := terms(api.Window7d)
	if termMap(week)[lastWeekTerm] != 2 {
		t.Fatalf("the hub's 7d terms %v lack %s", week, lastWeekTerm)
	}
	b.waitDOM("the cloud of the last 7 days", cloudCondition(t, week))
	b.waitDOM("the volume chart of the last 7 days", volumeCondition(t, activity(cr.ID, api.Window7d, "6h")))

	// New comments show with the page's refresh, without a click.
	item("breaking1", "#breaking news")
	item("breaking2", "#breaking news")
	testkit.WaitFor(t, clustertest.WaitTimeout, "the new comments counted", func() bool { return termMap(terms(api.Window7d))["#breaking"] == 2 })
	b.waitDOM("the cloud with the new comments", cloudCondition(t, terms(api.Window7d)))

	// A crawler without comments yet says so.
	b.pick(quiet.ID)
	b.waitText("an empty cloud", "cloud-empty", "No terms in the last 7 days yet")
	b.waitText("an empty volume chart", "volume-empty", "No comments in the last 7 days")
	if n := evalJS[int](b, `document.querySelectorAll('#term-cloud li').length`); n != 0 {
		t.Fatalf("the empty crawler's cloud shows %d terms", n)
	}

	// A user: the terms, the volume and the comments of all its crawlers.
	b.click(fmt.Sprintf(`#listen-users button[data-listen-user="%d"]`, u.ID))
	ut, err := c.Client.UserTerms(c.Ctx, u.ID, api.Window7d, 40)
	if err != nil {
		t.Fatal(err)
	}
	b.waitDOM("the user's cloud and chart", cloudCondition(t, ut.Terms)+` && !document.getElementById('volume').hidden &&
		document.querySelectorAll('#volume-chart rect').length > 0 && document.getElementById('trends-for').textContent.includes('(user ')`)
	if got := evalJS[string](b, `location.hash`); !strings.Contains(got, fmt.Sprintf("user=%d", u.ID)) {
		t.Errorf("address %q, want it to name the user", got)
	}
	if evalJS[bool](b, `document.querySelectorAll('#crawlers tr.selected, #searches li.picked').length > 0`) {
		t.Error("a crawler still shows as selected beside the user")
	}
	b.waitDOM("the user's comments", fmt.Sprintf(`document.getElementById('comments-for').textContent.endsWith('(user %d)') &&
		document.querySelectorAll('#comments li').length > 0`, u.ID))
	// Its top authors, exact, as the hub counts them over all its crawlers.
	ua, err := c.Client.UserAuthors(c.Ctx, u.ID, api.Window7d, 15)
	if err != nil {
		t.Fatal(err)
	}
	var wantAuthors [][2]string
	for _, a := range ua.Authors {
		wantAuthors = append(wantAuthors, [2]string{a.Author, strconv.FormatInt(a.Comments, 10)})
	}
	if len(wantAuthors) == 0 {
		t.Fatal("the hub counts no author of the user")
	}
	b.waitDOM("the user's top authors", `JSON.stringify(Array.from(document.querySelectorAll('#authors-table tbody tr'), (tr) => [tr.dataset.author, tr.dataset.comments])) === `+
		jsQuote(jsonText(t, wantAuthors)))

	// Back on the crawler, over a day, for the picture.
	b.pick(cr.ID)
	// While a new selection loads, its trends are hidden and the page is
	// shorter: wait until they show, as a person would, before clicking
	// a window button that the shrinking page may have moved.
	b.waitDOM("the crawler's trends of the last 7 days", fmt.Sprintf(`!document.getElementById('trends').hidden &&
		document.getElementById('trends-for').textContent.startsWith('crawler %d ')`, cr.ID))
	b.click(`button[data-window="24h"]`)
	b.waitDOM("the crawler's trends again", cloudCondition(t, terms(api.Window24h)))
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := artifactFile(t, "dashboard-trends.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshot: %s", path)
	if slices.ContainsFunc(b.cloud(), func(ct cloudTerm) bool { return ct.Term == lastWeekTerm }) {
		t.Error("the 24h cloud shows a term of 3 days ago")
	}
}
