package alert

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// evaluationBudget is the processor time one minute's evaluation of
// benchRules rules may cost.
const (
	benchRules       = 10_000
	evaluationBudget = time.Second
)

// BenchmarkEvaluateSpikes10k evaluates one minute of 10,000 spike rules,
// one per crawler, each crawler with comments in every minute: the SQL
// reads of the rules, owners and the minute's counts, and every detector's
// step. It reports the processor time per evaluated minute and its ratio
// to the 1 s budget (cpu/budget below 1 meets the goal).
func BenchmarkEvaluateSpikes10k(b *testing.B) {
	st := &spikeState{rules: map[int64]*spikeRule{}}
	benchEvaluate(b, api.AlertSpike, false, func(svc *Service, term uint64, m time.Time) error {
		return svc.EvaluateSpikes(context.Background(), term, st, m)
	})
}

// benchEvaluate runs an evaluation benchmark of benchRules rules of kind,
// one per crawler, each crawler with a few comments in every minute (one
// crawler in two with a negative one when negatives): the first minute
// seeds or rebuilds every detector outside the timing, then each minute
// is filled outside the timing and evaluated inside it. It reports the
// processor time per evaluated minute and its ratio to evaluationBudget.
func benchEvaluate(b *testing.B, kind string, negatives bool, evaluate func(svc *Service, term uint64, m time.Time) error) {
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "hub.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	u, _ := store.CreateUser(ctx, "bench", 0)
	in := make([]sqlstore.Crawler, benchRules)
	for i := range in {
		in[i] = sqlstore.Crawler{UserID: u.ID, Source: "bluesky", Query: sqlstore.List{fmt.Sprintf("term%d", i)}, QueryUUID: fmt.Sprintf("00000000-0000-0000-0000-%012d", i), Enabled: true}
	}
	crawlers, err := store.CreateCrawlers(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	lead, _ := store.ForceLeadership(ctx, "bench", "http://bench")
	svc, err := New(Config{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range crawlers {
		id := c.ID
		if _, err := store.CreateAlertRule(ctx, sqlstore.AlertRule{CrawlerID: &id, Kind: kind, Sensitivity: spike.Medium, Channel: api.ChannelWebhook, Target: "https://example.com/h"}); err != nil {
			b.Fatal(err)
		}
	}
	// Minutes after the crawlers' creation, each with a few comments.
	first := time.Now().UTC().Truncate(time.Minute).Add(3 * time.Hour)
	seq := uint64(0)
	fill := func(m time.Time) {
		incs := make([]api.Increment, 0, len(crawlers))
		for i, c := range crawlers {
			seq++
			n := int64(3 + i%5)
			act := api.MinuteActivity{At: m, Comments: n}
			if negatives {
				act.Negative = int64(i % 2)
			}
			incs = append(incs, api.Increment{NodeID: "bench", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: n,
				Analytics: &api.IncrementAnalytics{Minutes: []api.MinuteActivity{act}}})
		}
		for chunk := range slices.Chunk(incs, 2000) {
			if _, err := store.ApplyIncrements(ctx, chunk); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill(first)
	if err := evaluate(svc, lead.Term, first); err != nil { // seeds or rebuilds every detector
		b.Fatal(err)
	}
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		m := first.Add(time.Duration(i+1) * time.Minute)
		b.StopTimer()
		fill(m)
		b.StartTimer()
		before := cpuTime()
		if err := evaluate(svc, lead.Term, m); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - before
	}
	per := cpu / time.Duration(b.N)
	b.ReportMetric(per.Seconds(), "cpu-s/minute")
	b.ReportMetric(float64(per)/float64(evaluationBudget), "cpu/budget")
}

// BenchmarkDetectionToDelivery fires spike alerts one after another to a
// webhook on loopback through the running sender and reports the time
// from detection (the alert's creation, before its top terms are read) to
// the receiver's request: p50 and p99, and p99 against the 5 s goal.
func BenchmarkDetectionToDelivery(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- time.Now()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "hub.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	u, _ := store.CreateUser(ctx, "bench", 0)
	c, _ := store.CreateCrawler(ctx, sqlstore.Crawler{UserID: u.ID, Source: "bluesky", Query: sqlstore.List{"x"}, QueryUUID: "00000000-0000-0000-0000-000000000001", Enabled: true})
	lead, _ := store.ForceLeadership(ctx, "bench", "http://bench")
	svc, err := New(Config{Store: store, Allow: loopback})
	if err != nil {
		b.Fatal(err)
	}
	rule, err := svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: c.ID, Kind: api.AlertSpike, Webhook: srv.URL, Secret: "s"})
	if err != nil {
		b.Fatal(err)
	}
	if rule, err = store.CreateAlertRule(ctx, rule); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); svc.sendLoop(ctx, lead.Term) }()
	defer wg.Wait()
	defer cancel()
	owners, _ := svc.readOwners(ctx)
	lat := make([]time.Duration, 0, b.N)
	at := time.Now().UTC().Truncate(time.Minute)
	b.ResetTimer()
	for i := range b.N {
		detected := time.Now()
		a := spike.Alert{At: at.Add(time.Duration(i) * time.Minute), Observed: 90, Expected: 8}
		if err := svc.fireSpike(ctx, lead.Term, rule, []int64{c.ID}, owners, a, a.At.Add(time.Minute), nil); err != nil {
			b.Fatal(err)
		}
		select {
		case t := <-got:
			lat = append(lat, t.Sub(detected))
		case <-time.After(30 * time.Second):
			b.Fatal("no delivery within 30 s")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(p(0.5).Seconds()*1000, "p50-ms")
	b.ReportMetric(p(0.99).Seconds()*1000, "p99-ms")
	b.ReportMetric(p(0.99).Seconds()/5, "p99/goal")
}
