package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// countingApplier forwards to a store, counting calls, and refuses any
// call that carries an increment of a poisoned node.
type countingApplier struct {
	st       *sqlstore.Store
	calls    atomic.Int64
	poisoned string
	// gate holds the first call until closed, so the answers behind it
	// are all waiting when it ends.
	gate chan struct{}
}

var errPoisoned = errors.New("refused")

func (a *countingApplier) ApplyIncrements(ctx context.Context, incs []api.Increment) ([]api.Increment, error) {
	if a.calls.Add(1) == 1 {
		<-a.gate
	}
	if a.poisoned != "" && slices.ContainsFunc(incs, func(i api.Increment) bool { return i.NodeID == a.poisoned }) {
		return nil, errPoisoned
	}
	return a.st.ApplyIncrements(ctx, incs)
}

// TestCollector_MergesAnswersExactlyOnce: answers applied at once, with
// increments repeated across them, share transactions; every increment
// counts once in SQL, and each answer is told exactly the increments that
// were new, as if it had applied them alone.
func TestCollector_MergesAnswersExactlyOnce(t *testing.T) {
	for _, poisoned := range []string{"", "node-07"} {
		t.Run(fmt.Sprintf("poisoned=%q", poisoned), func(t *testing.T) {
			ctx := context.Background()
			st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			u, err := st.CreateUser(ctx, "u", 0)
			if err != nil {
				t.Fatal(err)
			}
			c, err := st.CreateCrawler(ctx, sqlstore.Crawler{UserID: u.ID, Source: api.SourceRSS, Query: []string{"https://feeds.example/a.xml"},
				QueryUUID: "00000000-0000-4000-8000-000000000001", Enabled: true})
			if err != nil {
				t.Fatal(err)
			}
			a := &countingApplier{st: st, poisoned: poisoned, gate: make(chan struct{})}
			col := &collector{store: a}
			const answers, perAnswer = 40, 25
			var wg sync.WaitGroup
			got := make([][]api.Increment, answers)
			errs := make([]error, answers)
			for i := range answers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Answers i and i+1 (mod 10) come from the same node and
					// overlap: an increment repeated in two answers.
					node := fmt.Sprintf("node-%02d", i%10)
					var incs []api.Increment
					for s := range perAnswer {
						incs = append(incs, api.Increment{NodeID: node, Seq: uint64(i/10*10 + s), CrawlerID: c.ID, UserID: u.ID, Count: 1})
					}
					got[i], errs[i] = col.apply(ctx, incs)
				}()
			}
			testkit.WaitFor(t, 10*time.Second, "every answer waiting behind the first", func() bool {
				col.mu.Lock()
				defer col.mu.Unlock()
				return len(col.waiting) == answers-1
			})
			close(a.gate)
			wg.Wait()
			distinct := map[string]bool{}
			for i := range answers {
				node := fmt.Sprintf("node-%02d", i%10)
				if node == poisoned {
					if !errors.Is(errs[i], errPoisoned) {
						t.Fatalf("answer %d of the refused node: err %v", i, errs[i])
					}
					continue
				}
				if errs[i] != nil {
					t.Fatalf("answer %d: %v", i, errs[i])
				}
				for _, inc := range got[i] {
					k := fmt.Sprintf("%s/%d", inc.NodeID, inc.Seq)
					if distinct[k] {
						t.Fatalf("increment %s told new to two answers", k)
					}
					distinct[k] = true
				}
			}
			want := 0
			for n := range 10 {
				if fmt.Sprintf("node-%02d", n) != poisoned {
					want += 3*10 + perAnswer // four answers of seqs 0..24, 10..34, 20..44, 30..54
				}
			}
			if len(distinct) != want {
				t.Fatalf("%d increments told new, want %d", len(distinct), want)
			}
			row, err := st.GetCrawler(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if row.Usage != int64(want) {
				t.Fatalf("usage %d in SQL, want %d", row.Usage, want)
			}
			// The first answer alone, then the other 39 at once (in one
			// merge, or, with the refused node's four, in one that fails
			// and is applied answer by answer).
			wantCalls := int64(2)
			if poisoned != "" {
				wantCalls = 2 + answers - 1
			}
			if calls := a.calls.Load(); calls != wantCalls {
				t.Fatalf("%d transactions for %d answers, want %d", calls, answers, wantCalls)
			}
		})
	}
}
