package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// sentimentHistory writes the last hours of a crawler's activity into the
// hub's database, comments a minute with negative ones among them, as the
// hub's analytics would have counted them: a crawler with a past, without
// waiting hours for one.
func sentimentHistory(t *testing.T, dsn string, crawlerID int64, hours int, comments, negative int64) {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: gormlogger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-time.Duration(hours) * time.Hour)
	err = db.Transaction(func(tx *gorm.DB) error {
		perHour := map[time.Time]int64{}
		for m := start; m.Before(end); m = m.Add(time.Minute) {
			if err := tx.Exec("INSERT INTO activity_minutes (crawler_id, bucket, comments, positive, negative) VALUES (?, ?, ?, 0, ?)",
				crawlerID, m, comments, negative).Error; err != nil {
				return err
			}
			perHour[m.Truncate(time.Hour)]++
		}
		for h, n := range perHour {
			if err := tx.Exec("INSERT INTO activity_hours (crawler_id, bucket, comments, positive, negative) VALUES (?, ?, ?, 0, ?)",
				crawlerID, h, n*comments, n*negative).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sentimentPasses reads how many sentiment evaluation passes the hub has
// made, from its metrics.
func sentimentPasses(t *testing.T, hubURL string) int {
	t.Helper()
	resp, err := http.Get(hubURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	const prefix = `bw_hub_alert_evaluation_seconds_count{kind="sentiment"} `
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s%s: %v", prefix, v, err)
			}
			return n
		}
	}
	t.Fatalf("the hub's metrics have no %s", strings.TrimSpace(prefix))
	return 0
}

// TestAlerts_Sentiment runs the built hub, spawn and bwctl on PostgreSQL
// with two crawlers of a local feed server, each with hours of history:
// one calm (10% of its comments negative), one gloomy (60%, always). A
// burst of angry posts on the calm one is a crisis: one alert, with the
// shares and negative samples, and no second one while the anger goes on;
// the gloomy one's usual gloom never fires.
func TestAlerts_Sentiment(t *testing.T) {
	s := newAlertSetup(t, 1)
	ctx := context.Background()
	gloom, err := s.client.CreateCrawler(ctx, api.CrawlerCreate{UserID: s.crawler.UserID, Source: api.SourceRSS, Query: []string{s.feedBase + "/feeds/gloom.xml"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, failoverWait, "the second crawler running", func() bool {
		c, err := s.client.GetCrawler(ctx, gloom.ID)
		return err == nil && c.State == api.StateRunning
	})
	backdate(t, s.dsn, gloom.ID)
	sentimentHistory(t, s.dsn, s.crawler.ID, 6, 30, 3)
	sentimentHistory(t, s.dsn, gloom.ID, 6, 30, 18)

	crisisHook := newHookReceiver(t, func(int, http.ResponseWriter) {})
	gloomHook := newHookReceiver(t, func(int, http.ResponseWriter) {})
	const secret = "crisis-secret"
	crisisRule := s.addRule(t, "--kind", "sentiment", "--webhook", crisisHook.srv.URL+"/bw", "--secret", secret)
	var gloomOut struct {
		ID int64 `json:"id"`
	}
	bwctl(t, s.bin, s.bwctlEnv(), &gloomOut, "alert", "add", "--crawler", strconv.FormatInt(gloom.ID, 10), "--kind", "sentiment",
		"--webhook", gloomHook.srv.URL+"/bw")
	var rules []api.AlertRule
	bwctl(t, s.bin, s.bwctlEnv(), &rules, "alert", "list")
	if len(rules) != 2 || rules[0].Kind != api.AlertSentiment || rules[1].Kind != api.AlertSentiment || rules[0].Sensitivity != "medium" {
		t.Fatalf("alert list = %+v, want the two sentiment rules at medium", rules)
	}

	n := 0
	burst := func(feed string, angry, calm int) {
		for range angry {
			n++
			s.feeds.Publish(feed, feedserver.Item{Title: fmt.Sprintf("Outage %d", n), Description: "This is terrible, the service is broken again and I hate it"})
		}
		for range calm {
			n++
			s.feeds.Publish(feed, feedserver.Item{Title: fmt.Sprintf("Release %d", n), Description: "The team published the notes for version " + strconv.Itoa(n)})
		}
	}
	// The anger starts on the calm crawler; the gloomy one says what it
	// always says.
	burst("alerts", 40, 0)
	burst("gloom", 24, 16)
	start := time.Now()
	testkit.WaitFor(t, alertWait, "the crisis alert", func() bool { return len(crisisHook.requests()) >= 1 })
	t.Logf("burst to delivered crisis alert: %s", time.Since(start).Round(time.Second))
	r := crisisHook.requests()[0]
	if got, want := r.header.Get(api.HeaderSignature), api.Sign(secret, r.body); got != want {
		t.Errorf("X-BW-Signature %q, want %q", got, want)
	}
	var w api.AlertWebhook
	if err := json.Unmarshal(r.body, &w); err != nil {
		t.Fatalf("webhook body: %v: %s", err, r.body)
	}
	if w.Kind != api.AlertSentiment || w.RuleID != crisisRule || w.CrawlerID == nil || *w.CrawlerID != s.crawler.ID ||
		w.Observed < 0.5 || w.Expected < 0.05 || w.Expected > 0.15 {
		t.Fatalf("crisis webhook body = %s, want the minute's negative share above 0.5 and the baseline about 0.1", r.body)
	}
	t.Logf("crisis alert at %s: negative share %v, usually %v", w.At.Format("15:04"), w.Observed, w.Expected)
	if len(w.Sample) == 0 || !strings.Contains(w.Sample[0].Text, "terrible") {
		t.Errorf("crisis samples %+v, want the angry posts", w.Sample)
	}

	// The anger goes on, the gloom too: after passes that evaluated
	// these minutes, still one alert, and none for the gloom.
	burst("alerts", 30, 0)
	burst("gloom", 18, 12)
	passes := sentimentPasses(t, s.urls[0])
	testkit.WaitFor(t, alertWait, "three more sentiment passes", func() bool { return sentimentPasses(t, s.urls[0]) >= passes+3 })
	if got := len(crisisHook.requests()); got != 1 {
		t.Fatalf("%d crisis deliveries, want 1", got)
	}
	if got := len(gloomHook.requests()); got != 0 {
		t.Fatalf("the steady gloomy crawler fired %d times: %s", got, gloomHook.requests()[0].body)
	}
	var shown struct {
		Events []api.AlertEvent `json:"events"`
	}
	bwctl(t, s.bin, s.bwctlEnv(), &shown, "alert", "show", strconv.FormatInt(crisisRule, 10))
	if len(shown.Events) != 1 || shown.Events[0].Kind != api.AlertSentiment {
		t.Fatalf("alert show: %+v, want one sentiment alert", shown.Events)
	}
	// The gloomy crawler's comments were counted negative, so its quiet is
	// the detector's, not a lack of data.
	act, err := s.client.CrawlerActivity(ctx, gloom.ID, "1h", "1m")
	if err != nil {
		t.Fatal(err)
	}
	var neg, all int64
	for _, st := range act.Steps {
		if st.At.Before(start.Add(-time.Minute)) {
			continue // the history written into SQL
		}
		neg += st.Negative
		all += st.Comments
	}
	if all < 70 || neg < 35 {
		t.Fatalf("the gloomy crawler's live minutes: %d comments, %d negative; want its bursts counted", all, neg)
	}
}
