package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
)

// signIn opens the dashboard and signs in with the admin token.
func (b *chromeTab) signIn(hubURL string) {
	b.t.Helper()
	b.do("open the dashboard", chromedp.Navigate(hubURL+"/"))
	b.waitDOM("the token prompt", `!document.getElementById('login').hidden`)
	b.do("enter the admin token",
		chromedp.SendKeys(chromedp.CSS(`#token`), clustertest.AdminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.waitDOM("the dashboard", `!document.getElementById('main').hidden && document.getElementById('status').textContent.startsWith('live')`)
}

// click clicks the first element matching a CSS selector once it is
// shown and enabled. The page redraws its lists on every refresh, so a
// node found by one call to the browser can be gone by the next: the
// lookup and the click are one step inside the page.
func (b *chromeTab) click(sel string) {
	b.t.Helper()
	cond := fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		if (!e || e.disabled || e.getClientRects().length === 0) return false;
		e.scrollIntoView({ block: 'center' });
		e.click();
		return true;
	})()`, jsQuote(sel))
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(domPollInterval), chromedp.WithPollingTimeout(domTimeout)))
	if err != nil {
		b.t.Fatalf("page: timed out after %s waiting to click %s (absent, hidden or disabled): %v", domTimeout, sel, err)
	}
}

// fill replaces a form field's value as a paste would, firing its input
// and change events.
func (b *chromeTab) fill(id, value string) {
	b.t.Helper()
	evalJS[bool](b, fmt.Sprintf(`(() => {
		const f = document.getElementById(%s);
		f.value = %s;
		f.dispatchEvent(new Event('input', { bubbles: true }));
		f.dispatchEvent(new Event('change', { bubbles: true }));
		return true;
	})()`, jsQuote(id), jsQuote(value)))
}

// typeInto clears a field and types text into it key by key.
func (b *chromeTab) typeInto(id, text string) {
	b.t.Helper()
	b.fill(id, "")
	b.do("type into #"+id, chromedp.SendKeys(chromedp.CSS("#"+id), text))
}

// waitText waits until an element's text contains want.
func (b *chromeTab) waitText(what, id, want string) {
	b.t.Helper()
	cond := fmt.Sprintf(`(() => { const e = document.getElementById(%s); return !!e && !e.hidden && e.textContent.includes(%s); })()`,
		jsQuote(id), jsQuote(want))
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(domPollInterval), chromedp.WithPollingTimeout(domTimeout)))
	if err != nil {
		got := evalJS[string](b, fmt.Sprintf(`(document.getElementById(%s) || {}).textContent || ''`, jsQuote(id)))
		b.t.Fatalf("page: timed out after %s waiting for %s: #%s shows %q, want %q", domTimeout, what, id, got, want)
	}
}

func (c *cluster) listCrawlers() []api.Crawler {
	c.t.Helper()
	list, err := c.Client.ListCrawlers(c.Ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return list
}

func (c *cluster) listUsers() []api.User {
	c.t.Helper()
	list, err := c.Client.ListUsers(c.Ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return list
}

func TestDashboard_ManagesUsersAndCrawlers(t *testing.T) {
	b := newChromeTab(t) // skips before starting a cluster when there is no browser
	c := newCluster(t, clusterOpts{spawns: 1})
	b.signIn(c.Hub.URL())
	b.operate()

	// Users: one added, a negative limit refused with the hub's reason.
	b.click(`#add-user`)
	b.waitDOM("the user form", `document.getElementById('user-dialog').open`)
	b.fill("uf-name", "acme")
	b.fill("uf-limit", "-5")
	b.click(`#uf-submit`)
	b.waitText("the refused limit", "uf-error", "comment limit must be 0 (no limit) or more, got -5")
	if n := len(c.listUsers()); n != 0 {
		t.Fatalf("a refused user was stored: %d users", n)
	}
	b.fill("uf-limit", "1000")
	b.click(`#uf-submit`)
	b.waitDOM("the user listed", `!document.getElementById('user-dialog').open &&
		!!document.querySelector('#users tr[data-user-id="1"]') && document.querySelector('#users tr[data-user-id="1"]').textContent.includes('acme')`)
	if us := c.listUsers(); len(us) != 1 || us[0].Name != "acme" || us[0].CommentLimit != 1000 {
		t.Fatalf("users after adding one: %+v", us)
	}

	// Its limit changed.
	b.click(`#users button[data-action="limit-user"][data-id="1"]`)
	b.waitDOM("the limit form", `document.getElementById('user-dialog').open && document.getElementById('uf-limit').value === '1000'`)
	b.fill("uf-limit", "250")
	b.click(`#uf-submit`)
	b.waitDOM("the new limit shown", `document.querySelector('#users tr[data-user-id="1"] .usage-text').textContent.startsWith('0 / 250')`)
	if u := c.listUsers()[0]; u.CommentLimit != 250 {
		t.Fatalf("user limit is %d after the change, want 250", u.CommentLimit)
	}

	// A crawler form: the query is checked as it is typed, with the parser's
	// message, and a refused query is not stored.
	b.click(`#add-crawler`)
	b.waitDOM("the crawler form", `document.getElementById('crawler-dialog').open`)
	b.fill("cf-user", "1")
	b.fill("cf-source", "twitter")
	b.typeInto("cf-query", "golang (Rust")
	b.waitText("the parser's message as typed", "cf-query-status", `query: unclosed "(" at column 8`)
	if cls := evalJS[string](b, `document.getElementById('cf-query-status').className`); cls != "check check-bad" {
		t.Fatalf("a bad query's status has class %q", cls)
	}
	b.click(`#cf-submit`)
	b.waitText("the refusal in the form", "cf-error", `query: unclosed "(" at column 8`)
	if n := len(c.listCrawlers()); n != 0 {
		t.Fatalf("a refused crawler was stored: %d crawlers", n)
	}
	b.do("finish the query", chromedp.SendKeys(chromedp.CSS("#cf-query"), ` OR Zig)`))
	want, err := c.Client.ValidateQuery(c.Ctx, api.QueryValidate{Source: "twitter", Query: "golang (Rust OR Zig)"})
	if err != nil {
		t.Fatal(err)
	}
	b.waitText("the canonical form", "cf-query-status", "✓ "+want.Canonical+" · query uuid "+want.QueryUUID[:8])

	// An unknown user and a negative limit are refused with their reasons.
	b.fill("cf-user", "99")
	b.click(`#cf-submit`)
	b.waitText("the unknown user refused", "cf-error", "user 99 does not exist")
	b.fill("cf-user", "1")
	b.fill("cf-limit", "-1")
	b.click(`#cf-submit`)
	b.waitText("the negative limit refused", "cf-error", "comment_limit must be 0 (no limit) or more, got -1")
	if n := len(c.listCrawlers()); n != 0 {
		t.Fatalf("refused crawlers were stored: %d crawlers", n)
	}
	b.click(`#crawler-dialog [data-close]`)

	// An rss crawler added from the user's row, with a filter checked as typed.
	b.click(`#users button[data-action="add-crawler-for"][data-id="1"]`)
	b.waitDOM("the crawler form for user 1", `document.getElementById('crawler-dialog').open && document.getElementById('cf-user').value === '1'`)
	b.fill("cf-source", "rss")
	b.fill("cf-query", c.FeedURL("news"))
	b.typeInto("cf-keywords", "golang OR (cassandra")
	b.waitText("the filter's message", "cf-keywords-status", `keywords: query: unclosed "("`)
	b.do("close the filter", chromedp.SendKeys(chromedp.CSS("#cf-keywords"), ")"))
	b.waitText("the canonical filter", "cf-keywords-status", "✓ cassandra OR golang")
	b.fill("cf-limit", "50")
	b.click(`#cf-submit`)
	b.waitDOM("the crawler listed", `!document.getElementById('crawler-dialog').open && !!document.querySelector('#crawlers tr[data-crawler-id="1"]')`)
	b.waitText("the confirmation", "flash", "Crawler 1 added")
	crs := c.listCrawlers()
	if len(crs) != 1 || crs[0].UserID != 1 || crs[0].Source != "rss" || crs[0].CommentLimit != 50 || !crs[0].Enabled ||
		len(crs[0].Keywords) != 1 || crs[0].Keywords[0] != "cassandra OR golang" {
		t.Fatalf("crawlers after adding one: %+v", crs)
	}

	// Edited: a new limit, and the filter cleared.
	b.click(`#crawlers button[data-action="edit-crawler"][data-id="1"]`)
	b.waitDOM("the edit form", `document.getElementById('crawler-dialog').open && document.getElementById('cf-limit').value === '50' &&
		document.getElementById('cf-source').disabled`)
	b.fill("cf-limit", "-3")
	b.click(`#cf-submit`)
	b.waitText("the negative limit refused on edit", "cf-error", "comment_limit must be 0 (no limit) or more, got -3")
	if cr := c.crawler(1); cr.CommentLimit != 50 {
		t.Fatalf("a refused edit changed the limit to %d", cr.CommentLimit)
	}
	b.fill("cf-limit", "40")
	b.fill("cf-keywords", "")
	b.fill("cf-retention", "30 days")
	b.click(`#cf-submit`)
	b.waitText("the retention refused", "cf-error", `retention "30 days"`)
	b.fill("cf-retention", "30d")
	b.click(`#cf-submit`)
	b.waitDOM("the edited crawler", `!document.getElementById('crawler-dialog').open &&
		document.querySelector('#crawlers tr[data-crawler-id="1"] .usage-text').textContent.includes('/ 40')`)
	if cr := c.crawler(1); cr.CommentLimit != 40 || len(cr.Keywords) != 0 || cr.Retention != "30d" || cr.RetentionFrom != "crawler" {
		t.Fatalf("crawler after the edit: %+v", cr)
	}

	// Disabled and enabled again.
	b.click(`#crawlers button[data-action="disable-crawler"][data-id="1"]`)
	b.waitDOM("the crawler disabled", `document.querySelector('#crawlers tr[data-crawler-id="1"]').textContent.includes('disabled') &&
		!!document.querySelector('#crawlers button[data-action="enable-crawler"][data-id="1"]')`)
	if cr := c.crawler(1); cr.Enabled || cr.State != api.StateDisabled {
		t.Fatalf("crawler after disabling: %+v", cr)
	}
	b.click(`#crawlers button[data-action="enable-crawler"][data-id="1"]`)
	b.waitDOM("the crawler running again", `document.querySelector('#crawlers tr[data-crawler-id="1"] .badge').textContent === 'running'`)

	// A user who still has a crawler cannot be deleted: the page shows the
	// hub's reason and the user stays.
	b.click(`#users button[data-action="delete-user"][data-id="1"]`)
	b.waitText("the user question", "confirm-title", "Delete user 1?")
	b.click(`#confirm-ok`)
	b.waitText("the refusal", "confirm-error", "user 1 still has 1 crawlers: delete them first")
	b.click(`#confirm-dialog [data-close]`)
	b.waitDOM("the question closed", `!document.getElementById('confirm-dialog').open`)
	if users, err := c.Client.ListUsers(c.Ctx); err != nil || len(users) == 0 {
		t.Fatalf("the refused delete removed the user: %v, %v", users, err)
	}

	// Deleting asks first; cancelling keeps it.
	b.click(`#crawlers button[data-action="delete-crawler"][data-id="1"]`)
	b.waitText("the confirmation question", "confirm-title", "Delete crawler 1?")
	b.click(`#confirm-dialog [data-close]`)
	b.waitDOM("the question closed", `!document.getElementById('confirm-dialog').open`)
	if n := len(c.listCrawlers()); n != 1 {
		t.Fatalf("cancelling the delete left %d crawlers", n)
	}
	b.click(`#crawlers button[data-action="delete-crawler"][data-id="1"]`)
	b.waitDOM("the question again", `document.getElementById('confirm-dialog').open`)
	b.click(`#confirm-ok`)
	b.waitDOM("the crawler gone", `!document.getElementById('confirm-dialog').open && !document.querySelector('#crawlers tr[data-crawler-id="1"]')`)
	if n := len(c.listCrawlers()); n != 0 {
		t.Fatalf("after the delete %d crawlers remain", n)
	}

	// Without crawlers, the user can go.
	before, err := c.Client.ListUsers(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.click(`#users button[data-action="delete-user"][data-id="1"]`)
	b.waitText("the user question", "confirm-title", "Delete user 1?")
	b.click(`#confirm-ok`)
	b.waitDOM("the user gone", `!document.getElementById('confirm-dialog').open && !document.querySelector('#users tr[data-user-id="1"]')`)
	if after, err := c.Client.ListUsers(c.Ctx); err != nil || len(after) != len(before)-1 {
		t.Fatalf("after deleting user 1: %d users (had %d), %v", len(after), len(before), err)
	}

	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(artifactFile(t, "dashboard-manage.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
