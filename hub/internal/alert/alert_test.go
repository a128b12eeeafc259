package alert

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

type fixture struct {
	store   *sqlstore.Store
	svc     *Service
	term    uint64
	user    sqlstore.User
	crawler sqlstore.Crawler
	seq     uint64
}

func newFixture(t *testing.T, edit func(*Config)) *fixture {
	t.Helper()
	return newFixtureOn(t, "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), edit)
}

// newFixtureOn is newFixture on the database dsn names.
func newFixtureOn(t *testing.T, dsn string, edit func(*Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	u, err := store.CreateUser(ctx, "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.CreateCrawler(ctx, sqlstore.Crawler{UserID: u.ID, Source: "bluesky", Query: sqlstore.List{"golang"}, QueryUUID: "00000000-0000-0000-0000-000000000001", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	lead, err := store.ForceLeadership(ctx, "hub-a", "http://a")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: store, Logger: testkit.Logger(t, "hub"), Allow: loopback, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{store: store, svc: svc, term: lead.Term, user: u, crawler: c}
}

// activity records comments per minute of the fixture's crawler, as usage
// increments with their analytics.
func (f *fixture) activity(t *testing.T, counts map[time.Time]int64) {
	t.Helper()
	var incs []api.Increment
	for at, n := range counts {
		f.seq++
		incs = append(incs, api.Increment{NodeID: "n1", Seq: f.seq, CrawlerID: f.crawler.ID, UserID: f.user.ID, Count: n,
			Analytics: &api.IncrementAnalytics{Minutes: []api.MinuteActivity{{At: at, Comments: n}}}})
	}
	if _, err := f.store.ApplyIncrements(context.Background(), incs); err != nil {
		t.Fatal(err)
	}
}

// receiver is a webhook endpoint that answers its first failures with 500.
type receiver struct {
	mu       sync.Mutex
	fail     int
	requests []*http.Request
	bodies   [][]byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests = append(rc.requests, r)
	rc.bodies = append(rc.bodies, b)
	if rc.fail > 0 {
		rc.fail--
		http.Error(w, "try later", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.requests)
}

// spikeAfter is how long after the crawler's creation the tests' spikes
// come: a day and more of history, the detector's warm-up.
const spikeAfter = 26 * time.Hour

// flatThenSpike is base comments a minute from the whole hour a day and
// an hour before spikeAt, and peak at spikeAt.
func flatThenSpike(spikeAt time.Time, base, peak int64) map[time.Time]int64 {
	out := map[time.Time]int64{spikeAt: peak}
	for m := spikeAt.Add(-25 * time.Hour).Truncate(time.Hour); m.Before(spikeAt); m = m.Add(time.Minute) {
		out[m] = base
	}
	return out
}

func TestService_SpikeIsOneAlertDeliveredOnceUnderOneIDAcrossRetriesAndLeaders(t *testing.T) {
	rc := &receiver{fail: 1}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rule, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: f.crawler.ID, Kind: api.AlertSpike, Webhook: srv.URL + "/hook", Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if rule, err = f.store.CreateAlertRule(ctx, rule); err != nil {
		t.Fatal(err)
	}
	// Minutes after the crawler's creation: a detector replays none before.
	spikeAt := time.Now().UTC().Truncate(time.Minute).Add(spikeAfter)
	f.activity(t, flatThenSpike(spikeAt, 4, 80))
	f.activity(t, map[time.Time]int64{spikeAt.Add(time.Minute): 85})

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.svc.sendLoop(ctx, f.term) }()
	defer wg.Wait()
	defer cancel()

	if err := f.svc.EvaluateSpikes(ctx, f.term, &spikeState{rules: map[int64]*spikeRule{}}, spikeAt); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the failed first attempt and its retry", func() bool { return rc.count() == 2 })
	// The detector's state is in SQL for the next leader.
	if states, err := f.store.RuleStates(ctx, []int64{rule.ID}); err != nil || len(states[rule.ID]) == 0 {
		t.Fatalf("the rule's detector state in SQL: %d bytes, %v", len(states[rule.ID]), err)
	}

	rc.mu.Lock()
	first, second := rc.requests[0], rc.requests[1]
	body := rc.bodies[1]
	sameBody := string(rc.bodies[0]) == string(rc.bodies[1])
	rc.mu.Unlock()
	id := first.Header.Get(api.HeaderDelivery)
	if id == "" || second.Header.Get(api.HeaderDelivery) != id {
		t.Fatalf("delivery ids %q then %q, want one id on every attempt", id, second.Header.Get(api.HeaderDelivery))
	}
	if !sameBody {
		t.Fatal("the retry sent another body")
	}
	if got, want := second.Header.Get(api.HeaderSignature), api.Sign("s3cret", body); got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
	var w api.AlertWebhook
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	if w.RuleID != rule.ID || w.Kind != api.AlertSpike || w.CrawlerID == nil || *w.CrawlerID != f.crawler.ID ||
		w.UserID == nil || *w.UserID != f.user.ID || !w.At.Equal(spikeAt) || w.Observed != 80 || w.Expected < 3.5 || w.Expected > 4.5 || w.AlertID == 0 {
		t.Fatalf("webhook body = %s", body)
	}
	for _, field := range []string{`"alert_id"`, `"rule_id"`, `"kind"`, `"crawler_id"`, `"user_id"`, `"at"`, `"observed"`, `"expected"`, `"top_terms"`, `"sample"`} {
		if !strings.Contains(string(body), field) {
			t.Errorf("webhook body lacks %s: %s", field, body)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the delivery recorded as delivered", func() bool {
		ev, _ := f.svc.Events(ctx, rule.ID, 0)
		return len(ev) == 1 && ev[0].Deliveries[0].State == api.DeliveryDelivered && ev[0].Deliveries[0].Attempts == 2
	})

	// A new leader of a later term replays the same minutes: the minute is
	// told already, and the next one is inside the cooldown kept in SQL.
	next, err := f.store.ForceLeadership(ctx, "hub-b", "http://b")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.EvaluateSpikes(ctx, f.term, &spikeState{rules: map[int64]*spikeRule{}}, spikeAt); err != nil && !errors.Is(err, sqlstore.ErrFenced) {
		t.Fatalf("evaluation by the deposed term = %v, want nothing done or ErrFenced", err)
	}
	st := &spikeState{rules: map[int64]*spikeRule{}}
	for _, m := range []time.Time{spikeAt, spikeAt.Add(time.Minute)} {
		if err := f.svc.EvaluateSpikes(ctx, next.Term, st, m); err != nil {
			t.Fatal(err)
		}
	}
	ev, _ := f.svc.Events(ctx, rule.ID, 0)
	if len(ev) != 1 {
		t.Fatalf("%d alerts after a new leader replayed the event, want 1", len(ev))
	}
	if n := rc.count(); n != 2 {
		t.Fatalf("the receiver got %d requests, want 2", n)
	}
}

func TestService_DeliveryFailsForGoodAfterItsRetries(t *testing.T) {
	rc := &receiver{fail: 1 << 30}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f := newFixture(t, func(c *Config) { c.RetryFor = 300 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rule, _ := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: f.crawler.ID, Kind: api.AlertSpike, Webhook: srv.URL})
	rule, err := f.store.CreateAlertRule(ctx, rule)
	if err != nil {
		t.Fatal(err)
	}
	spikeAt := time.Now().UTC().Truncate(time.Minute).Add(spikeAfter)
	f.activity(t, flatThenSpike(spikeAt, 2, 60))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.svc.sendLoop(ctx, f.term) }()
	defer wg.Wait()
	defer cancel()
	if err := f.svc.EvaluateSpikes(ctx, f.term, &spikeState{rules: map[int64]*spikeRule{}}, spikeAt); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the delivery marked failed", func() bool {
		ev, _ := f.svc.Events(ctx, rule.ID, 0)
		return len(ev) == 1 && ev[0].Deliveries[0].State == api.DeliveryFailed
	})
	ev, _ := f.svc.Events(ctx, rule.ID, 0)
	d := ev[0].Deliveries[0]
	if d.Attempts < 2 || d.LastStatus != http.StatusInternalServerError || !strings.Contains(d.LastError, "500") {
		t.Fatalf("failed delivery = %+v", d)
	}
}

func TestService_NewRuleRefusesBadRulesBeforeAnythingIsStored(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Allow = nil
		c.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "hooks.example.com":
				return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
			case "internal.example.com":
				return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")}, nil
			}
			return nil, errors.New("no such host")
		}
	})
	id := f.crawler.ID
	for _, tt := range []struct {
		name string
		in   api.AlertRuleCreate
		want string
	}{
		{"no crawler or user", api.AlertRuleCreate{Kind: "spike", Webhook: "https://hooks.example.com/x"}, "needs a crawler"},
		{"both", api.AlertRuleCreate{CrawlerID: id, UserID: 1, Kind: "spike", Webhook: "https://hooks.example.com/x"}, "not both"},
		{"unknown kind", api.AlertRuleCreate{CrawlerID: id, Kind: "surge", Webhook: "https://hooks.example.com/x"}, "kind must be"},
		{"bad sensitivity", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Sensitivity: "extreme", Webhook: "https://hooks.example.com/x"}, "sensitivity must be"},
		{"match without a query", api.AlertRuleCreate{CrawlerID: id, Kind: "match", Webhook: "https://hooks.example.com/x"}, "needs a query"},
		{"a bad query", api.AlertRuleCreate{CrawlerID: id, Kind: "match", Query: "(golang", Webhook: "https://hooks.example.com/x"}, `unclosed "("`},
		{"a query on a spike", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Query: "golang", Webhook: "https://hooks.example.com/x"}, "only a match rule"},
		{"no channel", api.AlertRuleCreate{CrawlerID: id, Kind: "spike"}, "exactly one of"},
		{"two channels", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Webhook: "https://hooks.example.com/x", Slack: "https://hooks.example.com/y"}, "exactly one of"},
		{"a private webhook", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Webhook: "http://10.0.0.5/hook"}, "10.0.0.5 is private"},
		{"the metadata service", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Webhook: "http://169.254.169.254/latest"}, "link-local"},
		{"loopback", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Slack: "http://127.0.0.1:9/x"}, "loopback"},
		{"a name with a private address", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Webhook: "https://internal.example.com/x"}, "10.1.2.3 is private"},
		{"a name that does not resolve", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Webhook: "https://nowhere.example.com/x"}, "does not resolve"},
		{"credentials in the URL", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Webhook: "https://u:p@hooks.example.com/x"}, "credentials"},
		{"not http", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Webhook: "ftp://hooks.example.com/x"}, "must look like"},
		{"a secret on Slack", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Slack: "https://hooks.example.com/x", Secret: "s"}, "signs webhook"},
		{"a bad address", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Email: "not an address"}, "is not an address"},
		{"e-mail without an SMTP server", api.AlertRuleCreate{CrawlerID: id, Kind: "spike", Email: "ops@example.com"}, "--smtp-server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.svc.NewRule(context.Background(), tt.in)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewRule = %v, want ErrInvalid saying %q", err, tt.want)
			}
		})
	}
	if _, err := f.svc.NewRule(context.Background(), api.AlertRuleCreate{CrawlerID: id, Kind: "match", Query: "golang OR #go", Webhook: "https://hooks.example.com/x"}); err != nil {
		t.Fatalf("a good rule: %v", err)
	}
}

func TestService_EmailRuleNeedsAnSMTPServerThatAnswers(t *testing.T) {
	// A port nothing listens on.
	addr := testkit.FreeAddr(t)
	f := newFixture(t, func(c *Config) { c.SMTP = SMTP{Addr: addr, From: "alerts@example.com"} })
	_, err := f.svc.NewRule(context.Background(), api.AlertRuleCreate{CrawlerID: f.crawler.ID, Kind: "spike", Email: "ops@example.com"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "unable to reach the SMTP server "+addr) {
		t.Fatalf("NewRule with an unreachable SMTP server = %v", err)
	}
}

func TestRuleView_HidesSecrets(t *testing.T) {
	id := int64(3)
	for _, tt := range []struct{ channel, target, want string }{
		{api.ChannelSlack, "https://hooks.slack.com/services/T000/B000/XXXX", "https://hooks.slack.com/…"},
		{api.ChannelWebhook, "https://example.com/hook?token=abc", "https://example.com/hook?…"},
		{api.ChannelWebhook, "https://example.com/hook", "https://example.com/hook"},
		{api.ChannelEmail, "ops@example.com", "ops@example.com"},
	} {
		v := RuleView(sqlstore.AlertRule{ID: 1, CrawlerID: &id, Channel: tt.channel, Target: tt.target, Secret: "s3cret"})
		if v.Target != tt.want || !v.Signed {
			t.Errorf("RuleView(%s) target %q signed %v, want %q and signed", tt.target, v.Target, v.Signed, tt.want)
		}
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("the secret is in %s", b)
		}
	}
}

func TestService_UserRuleSumsTheUsersCrawlers(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	second, err := f.store.CreateCrawler(ctx, sqlstore.Crawler{UserID: f.user.ID, Source: "bluesky", Query: sqlstore.List{"rust"}, QueryUUID: "00000000-0000-0000-0000-000000000002", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.svc.NewRule(ctx, api.AlertRuleCreate{UserID: f.user.ID, Kind: api.AlertSpike, Webhook: "http://127.0.0.1:9/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = f.store.CreateAlertRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Each crawler alone stays under the minimum volume (10) at the
	// minute; together they are 18 where 2 a minute was usual.
	spikeAt := time.Now().UTC().Truncate(time.Minute).Add(spikeAfter)
	f.activity(t, flatThenSpike(spikeAt, 1, 9))
	f.crawler = second
	f.activity(t, flatThenSpike(spikeAt, 1, 9))
	if err := f.svc.EvaluateSpikes(ctx, f.term, &spikeState{rules: map[int64]*spikeRule{}}, spikeAt); err != nil {
		t.Fatal(err)
	}
	ev, _ := f.svc.Events(ctx, r.ID, 0)
	if len(ev) != 1 || ev[0].Observed != 18 || ev[0].CrawlerID != nil || ev[0].UserID == nil || *ev[0].UserID != f.user.ID {
		t.Fatalf("user rule alerts = %+v, want one for 18 comments of the user", ev)
	}
}
