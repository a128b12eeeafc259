package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// TestDashboard_AlertRulesAddedCheckedAndTested adds an alert rule through
// the dashboard's form in headless Chromium: a bad query is refused as it
// is typed (the button stays disabled), a good one shows its canonical
// form, a spike rule shows its preview; the rule appears in the table, its
// test button delivers a test alert to a webhook on this machine, and the
// recent alerts list shows it delivered and the crawler's activity chart
// marks it.
func TestDashboard_AlertRulesAddedCheckedAndTested(t *testing.T) {
	var hits atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.HeaderDelivery) != "" {
			hits.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	c := newCluster(t, clusterOpts{spawns: 1, allowTargets: []string{"127.0.0.0/8"}})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("dash-alerts")}, nil, 0)
	b := newChromeTab(t)
	b.signIn(c.Hub.URL())
	b.operate()

	b.click("#al-add")
	b.waitDOM("the alert form", `document.getElementById('al-dialog').open`)
	b.fill("al-on-id", strconv.FormatInt(cr.ID, 10))
	b.fill("al-kind", "spike")
	b.fill("al-target", hook.URL+"/alerts")
	b.waitText("the spike rule's preview", "al-preview", "would have fired 0 times in the last 24 hours")
	b.fill("al-kind", "match")
	b.fill("al-query", "(golang")
	b.waitText("the bad query refused as typed", "al-query-status", `unclosed "("`)
	b.waitDOM("the submit button disabled", `document.getElementById('al-submit').disabled`)
	b.fill("al-query", "golang OR #go")
	b.waitText("the good query's canonical form", "al-query-status", "canonical: #go OR golang")
	b.waitDOM("the submit button enabled", `!document.getElementById('al-submit').disabled`)
	b.click("#al-submit")
	b.waitDOM("the rule in the table", `document.querySelectorAll('#al-rules tbody tr[data-rule-id]').length === 1`)
	rules, err := c.Client.ListAlertRules(c.Ctx)
	if err != nil || len(rules) != 1 || rules[0].Kind != api.AlertMatch || rules[0].Query != "#go OR golang" || *rules[0].CrawlerID != cr.ID {
		t.Fatalf("rules after the form: %+v, %v", rules, err)
	}
	b.click(`#al-rules button[data-action=test]`)
	b.waitText("the test delivered", "al-flash", "delivered")
	b.waitDOM("the test alert in the recent list, delivered", `!!document.querySelector('#al-recent li .badge-ok')`)
	if n := hits.Load(); n != 1 {
		t.Fatalf("the webhook got %d deliveries, want 1", n)
	}
	// The alert is marked on the crawler's activity chart.
	b.click(fmt.Sprintf(`#crawlers button[data-select-crawler="%d"]`, cr.ID))
	b.click(`button[data-window="1h"]`)
	b.waitDOM("the alert marked on the activity chart", `!!document.querySelector('#volume-chart svg .alert-mark')`)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(artifactFile(t, "dashboard-alerts.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	b.operate()
	b.click(`#al-rules button[data-action=delete]`)
	b.waitDOM("the rule gone", `document.querySelectorAll('#al-rules tbody tr[data-rule-id]').length === 0`)
}
