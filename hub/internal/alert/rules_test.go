package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

func TestService_MatchRuleSendsOneAlertPerBatchWithCountAndSample(t *testing.T) {
	clk := &clock{now: time.Now().UTC()}
	var mu sync.Mutex
	var stored []api.Comment
	reads := 0
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f := newFixture(t, func(c *Config) {
		c.Now = clk.Now
		c.ReadComments = func(_ context.Context, crawlerID int64, q api.ExportQuery) (api.CommentPage, error) {
			mu.Lock()
			defer mu.Unlock()
			reads++
			var out []api.Comment
			for _, c := range stored {
				if c.CrawlerID == crawlerID && !c.PublishedAt.Before(q.Since) {
					out = append(out, c)
				}
			}
			return api.CommentPage{Comments: out}, nil
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: f.crawler.ID, Kind: api.AlertMatch, Query: "golang -rust", Webhook: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = f.store.CreateAlertRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	// The first pass sets the cursor: comments stored before the rule do
	// not alert.
	add := func(n int, text string, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for range n {
			stored = append(stored, api.Comment{ID: fmt.Sprintf("c%d", len(stored)), CrawlerID: f.crawler.ID, Text: text,
				Author: "ann", URL: "https://example.com/" + fmt.Sprint(len(stored)), PublishedAt: at, FetchedAt: at})
		}
	}
	add(4, "golang before the rule", clk.Now().Add(-time.Minute))
	if err := f.svc.EvaluateMatches(ctx, f.term); err != nil {
		t.Fatal(err)
	}
	// A burst: 40 matching comments and 10 that do not match.
	clk.set(clk.Now().Add(time.Minute))
	add(40, "golang 1.26 is out", clk.Now())
	add(10, "golang and rust", clk.Now())
	add(5, "nothing to see", clk.Now())
	clk.set(clk.Now().Add(matchSettle + time.Second))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.svc.sendLoop(ctx, f.term) }()
	defer wg.Wait()
	defer cancel()
	for range 2 { // the second pass finds nothing new
		if err := f.svc.EvaluateMatches(ctx, f.term); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "one delivery", func() bool { return rc.count() == 1 })
	rc.mu.Lock()
	var w api.AlertWebhook
	_ = json.Unmarshal(rc.bodies[0], &w)
	rc.mu.Unlock()
	if w.Kind != api.AlertMatch || w.Observed != 40 || len(w.Sample) != sampleSize || w.Sample[0].Text != "golang 1.26 is out" {
		t.Fatalf("match alert = %+v", w)
	}
	// A new leader (another service on the same database) starts from the
	// cursor in SQL: nothing again.
	lead, _ := f.store.ForceLeadership(ctx, "hub-b", "http://b")
	other, _ := New(Config{Store: f.store, Now: clk.Now, ReadComments: f.svc.cfg.ReadComments})
	if err := other.EvaluateMatches(ctx, lead.Term); err != nil {
		t.Fatal(err)
	}
	if ev, _ := f.svc.Events(ctx, r.ID, 0); len(ev) != 1 {
		t.Fatalf("%d match alerts, want 1", len(ev))
	}
}

func TestService_TermRuleFiresForATermRisingIntoTheTopTerms(t *testing.T) {
	clk := &clock{}
	f := newFixture(t, func(c *Config) { c.Now = clk.Now })
	ctx := context.Background()
	r, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: f.crawler.ID, Kind: api.AlertTerm, Webhook: "http://127.0.0.1:9/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = f.store.CreateAlertRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Three days after the crawler's creation: every past hour had #usual
	// 20 times and "weather" 3 times; this hour #breaking 70 times.
	now := time.Now().UTC().Truncate(time.Hour).Add(4*24*time.Hour + 30*time.Minute)
	clk.set(now)
	var hours []api.HourTerms
	for h := now.Truncate(time.Hour).Add(-72 * time.Hour); h.Before(now.Truncate(time.Hour)); h = h.Add(time.Hour) {
		hours = append(hours, api.HourTerms{At: h, Terms: []api.TermCount{{Term: "#usual", Count: 20}, {Term: "weather", Count: 3}}})
	}
	hours = append(hours, api.HourTerms{At: now.Truncate(time.Hour), Terms: []api.TermCount{{Term: "#breaking", Count: 70}, {Term: "#usual", Count: 25}, {Term: "weather", Count: 9}}})
	f.seq++
	if _, err := f.store.ApplyIncrements(ctx, []api.Increment{{NodeID: "n1", Seq: f.seq, CrawlerID: f.crawler.ID, UserID: f.user.ID, Count: 1,
		Analytics: &api.IncrementAnalytics{Terms: hours}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the same term the same day is one alert
		if err := f.svc.EvaluateTerms(ctx, f.term); err != nil {
			t.Fatal(err)
		}
	}
	ev, _ := f.svc.Events(ctx, r.ID, 0)
	if len(ev) != 1 || ev[0].Observed != 70 || ev[0].Expected != 0 || len(ev[0].TopTerms) == 0 || ev[0].TopTerms[0].Term != "#breaking" {
		t.Fatalf("term alerts = %+v, want one for #breaking", ev)
	}
	var d details
	rows, _ := f.store.AlertEvents(ctx, r.ID, 1)
	_ = json.Unmarshal([]byte(rows[0].Details), &d)
	if d.Term != "#breaking" {
		t.Fatalf("the alert is about %q, want #breaking", d.Term)
	}
}
