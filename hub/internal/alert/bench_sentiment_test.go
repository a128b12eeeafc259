package alert

import (
	"context"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// BenchmarkEvaluateSentiment10k evaluates one minute of 10,000 sentiment
// rules, one per crawler, each crawler with comments (some negative) in
// every minute: the SQL reads of the rules, owners and the minute's
// counts, and every detector's step. It reports the processor time per
// evaluated minute and its ratio to the 1 s budget (below 1 meets it),
// beside BenchmarkEvaluateSpikes10k's.
func BenchmarkEvaluateSentiment10k(b *testing.B) {
	st := newSentimentState()
	benchEvaluate(b, api.AlertSentiment, true, func(svc *Service, term uint64, m time.Time) error {
		return svc.EvaluateSentiment(context.Background(), term, st, m)
	})
}
