package alert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// share is a minute's comments and, of them, the negative ones.
type share struct{ comments, negative int64 }

// shares records comments per minute of a crawler with their negative
// ones, as usage increments with their analytics.
func (f *fixture) shares(t *testing.T, crawler int64, counts map[time.Time]share) {
	t.Helper()
	var incs []api.Increment
	for at, c := range counts {
		f.seq++
		incs = append(incs, api.Increment{NodeID: "n1", Seq: f.seq, CrawlerID: crawler, UserID: f.user.ID, Count: c.comments,
			Analytics: &api.IncrementAnalytics{Minutes: []api.MinuteActivity{{At: at, Comments: c.comments, Negative: c.negative}}}})
	}
	if _, err := f.store.ApplyIncrements(context.Background(), incs); err != nil {
		t.Fatal(err)
	}
}

// steady is c every minute of [from, to).
func steady(from, to time.Time, c share) map[time.Time]share {
	out := map[time.Time]share{}
	for m := from; m.Before(to); m = m.Add(time.Minute) {
		out[m] = c
	}
	return out
}

// crisisAfter is how long after the crawlers' creation the tests' crises
// come: more than the baseline's weight needs (a detector is rebuilt
// from the minutes since the creation).
const crisisAfter = 6 * time.Hour

var (
	calm       = share{comments: 30, negative: 3}  // 10% negative
	crisis     = share{comments: 30, negative: 20} // 67% negative
	gloomy     = share{comments: 30, negative: 18} // 60% negative, always
	crisisLong = 10                                // minutes
)

// crisisFixture is a fixture whose crawler is calm from its creation to
// crisisAt, then in crisis for crisisLong minutes, with a sentiment rule
// on it delivering to hook.
func crisisFixture(t *testing.T, dsn, hook string, edit func(*Config)) (*fixture, sqlstore.AlertRule, time.Time) {
	t.Helper()
	f := newFixtureOn(t, dsn, edit)
	crisisAt := time.Now().UTC().Truncate(time.Minute).Add(crisisAfter)
	f.shares(t, f.crawler.ID, steady(crisisAt.Add(-crisisAfter).Truncate(time.Hour), crisisAt, calm))
	f.shares(t, f.crawler.ID, steady(crisisAt, crisisAt.Add(time.Duration(crisisLong)*time.Minute), crisis))
	return f, f.sentimentRule(t, f.crawler.ID, hook), crisisAt
}

func (f *fixture) sentimentRule(t *testing.T, crawler int64, hook string) sqlstore.AlertRule {
	t.Helper()
	ctx := context.Background()
	r, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: crawler, Kind: api.AlertSentiment, Webhook: hook})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = f.store.CreateAlertRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// evaluate runs the sentiment pass of term for each minute of [from, to].
func (f *fixture) evaluate(t *testing.T, term uint64, st *sentimentState, from, to time.Time) {
	t.Helper()
	for m := from; !m.After(to); m = m.Add(time.Minute) {
		if err := f.svc.EvaluateSentiment(context.Background(), term, st, m); err != nil {
			t.Fatalf("evaluation of %s: %v", m.Format("15:04"), err)
		}
	}
}

func (f *fixture) alerts(t *testing.T, rule int64) []api.AlertEvent {
	t.Helper()
	ev, err := f.svc.Events(context.Background(), rule, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func minutes(ev []api.AlertEvent) string {
	var out []string
	for _, e := range ev {
		out = append(out, e.At.Format("15:04"))
	}
	return strings.Join(out, ",")
}

func TestSentiment_CrisisFiresOnceASteadyNegativeStreamDoesNot(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		rc := &receiver{}
		srv := httptest.NewServer(rc)
		defer srv.Close()
		var crisisAt time.Time
		// The crawler's stored comments: the negative ones show, newest
		// first.
		read := func(_ context.Context, crawler int64, q api.ExportQuery) (api.CommentPage, error) {
			var p api.CommentPage
			for i, label := range []string{"negative", "positive", "negative", "neutral", "negative", "negative"} {
				p.Comments = append(p.Comments, api.Comment{ID: fmt.Sprintf("c%d", i), CrawlerID: crawler, Text: label + " words",
					PublishedAt: crisisAt.Add(time.Duration(i-6) * time.Minute), Sentiment: &api.Sentiment{Label: label}})
			}
			return p, nil
		}
		f, rule, at := crisisFixture(t, dsn, srv.URL+"/hook", func(c *Config) { c.ReadComments = read })
		crisisAt = at
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// A second crawler, 60% negative all along.
		gloom, err := f.store.CreateCrawler(ctx, sqlstore.Crawler{UserID: f.user.ID, Source: "bluesky", Query: sqlstore.List{"rust"},
			QueryUUID: "00000000-0000-0000-0000-000000000002", Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		f.shares(t, gloom.ID, steady(crisisAt.Add(-crisisAfter).Truncate(time.Hour), crisisAt.Add(time.Hour), gloomy))
		gloomRule := f.sentimentRule(t, gloom.ID, srv.URL+"/gloom")

		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); f.svc.sendLoop(ctx, f.term) }()
		defer wg.Wait()
		defer cancel()

		f.evaluate(t, f.term, newSentimentState(), crisisAt.Add(-10*time.Minute), crisisAt.Add(time.Duration(crisisLong+20)*time.Minute))
		ev := f.alerts(t, rule.ID)
		if len(ev) != 1 {
			t.Fatalf("%d crisis alerts (at %s), want 1", len(ev), minutes(ev))
		}
		e := ev[0]
		if e.At.Before(crisisAt) || e.At.After(crisisAt.Add(2*time.Minute)) || e.Observed < 0.4 || e.Expected < 0.08 || e.Expected > 0.12 {
			t.Fatalf("crisis alert at %s (the crisis began %s): observed %v, expected %v", e.At.Format("15:04"), crisisAt.Format("15:04"), e.Observed, e.Expected)
		}
		if len(e.Sample) != 3 || e.Sample[0].ID != "c5" || e.Sample[1].ID != "c4" || e.Sample[2].ID != "c2" {
			t.Fatalf("sample %+v, want the three newest negative comments", e.Sample)
		}
		if g := f.alerts(t, gloomRule.ID); len(g) != 0 {
			t.Fatalf("a steady 60%% negative stream fired at %s", minutes(g))
		}
		testkit.WaitFor(t, 10*time.Second, "the crisis alert delivered", func() bool { return rc.count() == 1 })
		rc.mu.Lock()
		body, path := rc.bodies[0], rc.requests[0].URL.Path
		rc.mu.Unlock()
		var w api.AlertWebhook
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatal(err)
		}
		if path != "/hook" || w.Kind != api.AlertSentiment || w.RuleID != rule.ID || w.Observed != e.Observed || w.Expected != e.Expected ||
			w.CrawlerID == nil || *w.CrawlerID != f.crawler.ID || w.UserID == nil || *w.UserID != f.user.ID {
			t.Fatalf("webhook %s got %s", path, body)
		}
	})
}

func TestSentiment_FailoverNeitherLosesNorRepeats(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		end := time.Duration(crisisLong+10) * time.Minute

		t.Run("told before the failover, not again after", func(t *testing.T) {
			f, rule, crisisAt := crisisFixture(t, postgresOr(t, dsn), "http://127.0.0.1:9/hook", nil)
			f.evaluate(t, f.term, newSentimentState(), crisisAt.Add(-10*time.Minute), crisisAt.Add(2*time.Minute))
			if n := len(f.alerts(t, rule.ID)); n != 1 {
				t.Fatalf("%d alerts before the failover, want 1", n)
			}
			next, err := f.store.ForceLeadership(ctx, "hub-b", "http://b")
			if err != nil {
				t.Fatal(err)
			}
			// The deposed leader goes on a minute: fenced, nothing recorded.
			if err := f.svc.EvaluateSentiment(ctx, f.term, newSentimentState(), crisisAt.Add(3*time.Minute)); err != nil && !errors.Is(err, sqlstore.ErrFenced) {
				t.Fatalf("the deposed term's evaluation = %v", err)
			}
			f.evaluate(t, next.Term, newSentimentState(), crisisAt.Add(3*time.Minute), crisisAt.Add(end))
			if ev := f.alerts(t, rule.ID); len(ev) != 1 {
				t.Fatalf("alerts at %s after the failover, want the one told before", minutes(ev))
			}
		})

		t.Run("not yet told before the failover, told after", func(t *testing.T) {
			for _, keepState := range []bool{true, false} {
				f, rule, crisisAt := crisisFixture(t, postgresOr(t, dsn), "http://127.0.0.1:9/hook", nil)
				// The leader evaluates up to the minute before the crisis
				// and stops; the next takes over three minutes in.
				f.evaluate(t, f.term, newSentimentState(), crisisAt.Add(-30*time.Minute), crisisAt.Add(-time.Minute))
				if !keepState {
					// Without the saved state the new leader rebuilds the
					// detector from the counts, crisis included, and stays
					// quiet: the state is what keeps the alert.
					if err := f.store.SaveRuleStates(ctx, f.term, map[int64][]byte{rule.ID: nil}); err != nil {
						t.Fatal(err)
					}
				}
				next, err := f.store.ForceLeadership(ctx, "hub-b", "http://b")
				if err != nil {
					t.Fatal(err)
				}
				f.evaluate(t, next.Term, newSentimentState(), crisisAt.Add(3*time.Minute), crisisAt.Add(end))
				ev := f.alerts(t, rule.ID)
				switch {
				case keepState && (len(ev) != 1 || ev[0].At.After(crisisAt.Add(2*time.Minute))):
					t.Fatalf("with the saved state: alerts at %s, want one at the crisis's start %s", minutes(ev), crisisAt.Format("15:04"))
				case !keepState && len(ev) != 0:
					t.Fatalf("rebuilt from the counts: alerts at %s, want none (the crisis was under way)", minutes(ev))
				}
			}
		})

		t.Run("told after the last save, its minute grown since", func(t *testing.T) {
			for _, guard := range []bool{true, false} {
				f, rule, crisisAt := crisisFixture(t, postgresOr(t, dsn), "http://127.0.0.1:9/hook", nil)
				st := newSentimentState()
				f.evaluate(t, f.term, st, crisisAt.Add(-30*time.Minute), crisisAt.Add(-time.Minute))
				saved, err := f.store.RuleStates(ctx, []int64{rule.ID})
				if err != nil || len(saved[rule.ID]) == 0 {
					t.Fatalf("no state saved before the crisis: %v", err)
				}
				f.evaluate(t, f.term, st, crisisAt, crisisAt.Add(2*time.Minute))
				ev := f.alerts(t, rule.ID)
				if len(ev) != 1 {
					t.Fatalf("%d alerts, want 1", len(ev))
				}
				// The leader stops after recording the alert and before
				// saving the state; the alert's minute then gains neutral
				// comments (reported late), so a replay fires a little
				// later, under another key.
				if err := f.store.SaveRuleStates(ctx, f.term, saved); err != nil {
					t.Fatal(err)
				}
				f.shares(t, f.crawler.ID, map[time.Time]share{ev[0].At: {comments: 40}})
				if !guard {
					// The rule's record of its last alert moved before the
					// state: the new leader cannot know the crisis was told.
					if err := f.store.AdvanceRuleCursor(ctx, f.term, rule.ID, crisisAt.Add(-time.Hour)); err != nil {
						t.Fatal(err)
					}
				}
				next, err := f.store.ForceLeadership(ctx, "hub-b", "http://b")
				if err != nil {
					t.Fatal(err)
				}
				f.evaluate(t, next.Term, newSentimentState(), crisisAt.Add(3*time.Minute), crisisAt.Add(end))
				ev = f.alerts(t, rule.ID)
				switch {
				case guard && len(ev) != 1:
					t.Fatalf("alerts at %s, want the one told before the failover", minutes(ev))
				case !guard && len(ev) != 2:
					t.Fatalf("without the record of the last alert: alerts at %s, want the replay to tell it again a minute later", minutes(ev))
				}
			}
		})

		t.Run("a leader without a saved state stays quiet three minutes into a crisis", func(t *testing.T) {
			f, rule, crisisAt := crisisFixture(t, postgresOr(t, dsn), "http://127.0.0.1:9/hook", nil)
			f.evaluate(t, f.term, newSentimentState(), crisisAt.Add(3*time.Minute), crisisAt.Add(end))
			if ev := f.alerts(t, rule.ID); len(ev) != 0 {
				t.Fatalf("a leader's first pass, three minutes into a crisis, fired at %s", minutes(ev))
			}
		})
	})
}

// postgresOr is a fresh database of the kind dsn is: each subtest its own.
func postgresOr(t *testing.T, dsn string) string {
	if strings.HasPrefix(dsn, "sqlite://") {
		return "sqlite://" + t.TempDir() + "/hub.db"
	}
	return postgresDSN(t)
}

func TestSentiment_RulesAndMessages(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	id := f.crawler.ID
	if _, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: id, Kind: api.AlertSentiment, Query: "golang", Webhook: "http://127.0.0.1:9/x"}); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "only a match rule takes a query") {
		t.Fatalf("a sentiment rule with a query: %v", err)
	}
	if _, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: id, Kind: "crisis", Webhook: "http://127.0.0.1:9/x"}); err == nil ||
		!strings.Contains(err.Error(), "kind must be spike, term, match or sentiment") {
		t.Fatalf("an unknown kind: %v", err)
	}
	r, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: id, Kind: api.AlertSentiment, Sensitivity: "high", Slack: "http://127.0.0.1:9/x"})
	if err != nil || r.Sensitivity != "high" {
		t.Fatalf("a sentiment rule: %+v, %v", r, err)
	}
	c := content{RuleID: 1, AlertID: 2, Kind: api.AlertSentiment, CrawlerID: &id, At: time.Date(2026, 3, 1, 14, 5, 0, 0, time.UTC), Observed: 0.62, Expected: 0.18}
	want := fmt.Sprintf("Crisis on crawler %d: negative share 62%% at 14:05 UTC (usually 18%%)", id)
	if got := c.subject(); got != want {
		t.Fatalf("subject %q, want %q", got, want)
	}
	if texts := slackTexts(t, string(slackBody(c))); texts[0] != want {
		t.Fatalf("Slack text %q", texts[0])
	}
	mail := string(emailMessage("d1", "alerts@example.com", "ops@example.com", c))
	if !strings.Contains(mail, "Negative share of recent comments: 62%") || !strings.Contains(mail, "Usually: 18%") {
		t.Fatalf("e-mail lacks the shares: %s", mail)
	}
}
