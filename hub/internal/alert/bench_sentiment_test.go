package alert

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// BenchmarkEvaluateSentiment10k evaluates one minute of 10,000 sentiment
// rules, one per crawler, each crawler with comments (some negative) in
// every minute: the SQL reads of the rules, owners and the minute's
// counts, and every detector's step. It reports the processor time per
// evaluated minute and its ratio to the 1 s budget (below 1 meets it),
// beside BenchmarkEvaluateSpikes10k's.
func BenchmarkEvaluateSentiment10k(b *testing.B) {
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
		if _, err := store.CreateAlertRule(ctx, sqlstore.AlertRule{CrawlerID: &id, Kind: api.AlertSentiment, Sensitivity: spike.Medium, Channel: api.ChannelWebhook, Target: "https://example.com/h"}); err != nil {
			b.Fatal(err)
		}
	}
	first := time.Now().UTC().Truncate(time.Minute).Add(3 * time.Hour)
	seq := uint64(0)
	fill := func(m time.Time) {
		incs := make([]api.Increment, 0, len(crawlers))
		for i, c := range crawlers {
			seq++
			n := int64(3 + i%5)
			incs = append(incs, api.Increment{NodeID: "bench", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: n,
				Analytics: &api.IncrementAnalytics{Minutes: []api.MinuteActivity{{At: m, Comments: n, Negative: int64(i % 2)}}}})
		}
		for chunk := range slices.Chunk(incs, 2000) {
			if _, err := store.ApplyIncrements(ctx, chunk); err != nil {
				b.Fatal(err)
			}
		}
	}
	st := newSentimentState()
	fill(first)
	if err := svc.EvaluateSentiment(ctx, lead.Term, st, first); err != nil { // rebuilds every detector
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
		if err := svc.EvaluateSentiment(ctx, lead.Term, st, m); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - before
	}
	per := cpu / time.Duration(b.N)
	b.ReportMetric(per.Seconds(), "cpu-s/minute")
	b.ReportMetric(float64(per)/float64(evaluationBudget), "cpu/budget")
}
