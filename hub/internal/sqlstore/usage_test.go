package sqlstore

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// usageOf reads a crawler's and a user's usage.
func usageOf(t *testing.T, s *Store, crawlerID, userID int64) (int64, int64) {
	t.Helper()
	var cu int64
	if crawlerID != 0 {
		c, err := s.GetCrawler(context.Background(), crawlerID)
		if err != nil {
			t.Fatal(err)
		}
		cu = c.Usage
	}
	u, err := s.GetUser(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	return cu, u.Usage
}

func seqsOf(incs []api.Increment) []uint64 {
	out := make([]uint64, 0, len(incs))
	for _, inc := range incs {
		out = append(out, inc.Seq)
	}
	return out
}

func TestStore_ApplyIncrementsExactlyOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		inc := func(seq uint64, n int64) api.Increment {
			return api.Increment{NodeID: "node-a", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: n}
		}
		apply := func(batch ...api.Increment) []uint64 {
			t.Helper()
			applied, err := s.ApplyIncrements(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			return seqsOf(applied)
		}
		want := func(crawler, user int64) {
			t.Helper()
			if cu, uu := usageOf(t, s, c.ID, u.ID); cu != crawler || uu != user {
				t.Fatalf("usage crawler %d, user %d; want %d, %d", cu, uu, crawler, user)
			}
		}

		if got := apply(inc(1, 5), inc(2, 7)); !slices.Equal(got, []uint64{1, 2}) {
			t.Fatalf("first batch applied %v", got)
		}
		want(12, 12)
		if got := apply(inc(1, 5), inc(2, 7)); len(got) != 0 {
			t.Fatalf("same batch again applied %v", got)
		}
		want(12, 12)
		// Overlapping, shuffled, with a duplicate inside the batch.
		if got := apply(inc(4, 1), inc(2, 7), inc(3, 10), inc(4, 1)); !slices.Equal(got, []uint64{4, 3}) {
			t.Fatalf("overlapping batch applied %v, want [4 3] (input order)", got)
		}
		want(23, 23)
		// The same sequence number from another node is another increment.
		other := inc(1, 100)
		other.NodeID = "node-b"
		if got := apply(other); !slices.Equal(got, []uint64{1}) {
			t.Fatalf("other node applied %v", got)
		}
		want(123, 123)
		if got := apply(inc(0, 1)); !slices.Equal(got, []uint64{0}) {
			t.Fatalf("sequence number 0 applied %v", got)
		}
		want(124, 124)
		if got := apply(); len(got) != 0 {
			t.Fatalf("empty batch applied %v", got)
		}

		ids, err := s.AppliedIDs(ctx, "node-a", []uint64{9, 3, 1, 3, 5, 2, 4})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, []uint64{3, 1, 2, 4}) {
			t.Fatalf("AppliedIDs = %v, want [3 1 2 4]", ids)
		}
		if ids, _ := s.AppliedIDs(ctx, "node-c", []uint64{1}); len(ids) != 0 {
			t.Fatalf("AppliedIDs of an unknown node = %v", ids)
		}

		// A negative count is recorded (so it is acked) but adds nothing.
		if got := apply(inc(5, -50)); !slices.Equal(got, []uint64{5}) {
			t.Fatalf("negative increment applied %v", got)
		}
		want(124, 124)
		if _, err := s.ApplyIncrements(ctx, []api.Increment{{Seq: 1, CrawlerID: c.ID, Count: 1}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("increment without node id = %v, want ErrInvalid", err)
		}
	})
}

// TestStore_RecoveredIncrementCompletedByItsNode: a recovery counts an
// increment from the store before all of its comments landed; when the node
// (only cut off) reports it later with the full count, the difference is
// added once. A normal duplicate never adds, and a recovery never adds to
// what the node reported.
func TestStore_RecoveredIncrementCompletedByItsNode(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		inc := func(seq uint64, n int64) api.Increment {
			return api.Increment{NodeID: "node-a", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: n}
		}
		type step struct {
			name      string
			recovered bool
			inc       api.Increment
			applied   []int64 // counts applied now
			usage     int64
		}
		for _, st := range []step{
			{"recovery counts 3 of seq 1", true, inc(1, 3), []int64{3}, 3},
			{"the node reports seq 1 with 5: 2 more", false, inc(1, 5), []int64{2}, 5},
			{"the same report again adds nothing", false, inc(1, 5), nil, 5},
			{"a lower report adds nothing", false, inc(1, 4), nil, 5},
			{"a recovery of seq 1 again adds nothing", true, inc(1, 9), nil, 5},
			{"the node reports seq 2 with 4", false, inc(2, 4), []int64{4}, 9},
			{"a normal duplicate with more adds nothing", false, inc(2, 6), nil, 9},
			{"a recovery of a reported increment adds nothing", true, inc(2, 8), nil, 9},
		} {
			apply := s.ApplyIncrements
			if st.recovered {
				apply = s.ApplyRecovered
			}
			applied, err := apply(ctx, []api.Increment{st.inc})
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			var counts []int64
			for _, a := range applied {
				counts = append(counts, a.Count)
			}
			if !slices.Equal(counts, st.applied) {
				t.Fatalf("%s: applied counts %v, want %v", st.name, counts, st.applied)
			}
			if cu, uu := usageOf(t, s, c.ID, u.ID); cu != st.usage || uu != st.usage {
				t.Fatalf("%s: usage crawler %d, user %d; want %d", st.name, cu, uu, st.usage)
			}
		}
	})
}

func TestStore_ApplyIncrementsCursorAndDeletedCrawler(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		other := mustUser(t, s, "other", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		gone := mustCrawler(t, s, newCrawler(u.ID, "gone"))
		base := time.Date(2024, 3, 10, 8, 0, 0, 123456000, time.UTC)
		tokyo := time.FixedZone("JST", 9*3600)
		steps := []struct {
			newest time.Time
			want   time.Time
		}{
			{time.Time{}, time.Time{}},             // zero: no cursor yet
			{base, base},                           // first
			{base.Add(-time.Hour).In(tokyo), base}, // older, other zone: kept
			{base.Add(500 * time.Microsecond).In(tokyo), base.Add(500 * time.Microsecond)}, // newer in another zone
			{time.Time{}, base.Add(500 * time.Microsecond)},                                // zero: kept
			{base.Add(2 * time.Second), base.Add(2 * time.Second)},                         // newer
		}
		for i, st := range steps {
			inc := api.Increment{NodeID: "n", Seq: uint64(i + 1), CrawlerID: c.ID, UserID: u.ID, Count: 1, Newest: st.newest}
			if _, err := s.ApplyIncrements(ctx, []api.Increment{inc}); err != nil {
				t.Fatal(err)
			}
			got, _ := s.GetCrawler(ctx, c.ID)
			switch {
			case st.want.IsZero() && got.CursorAt != nil:
				t.Fatalf("step %d: cursor %v, want none", i, got.CursorAt)
			case !st.want.IsZero() && (got.CursorAt == nil || !got.CursorAt.Equal(st.want)):
				t.Fatalf("step %d: cursor %v, want %v", i, got.CursorAt, st.want)
			}
		}
		if got, _ := s.GetCrawler(ctx, c.ID); got.Version != 1 {
			t.Fatalf("usage changed the crawler's version to %d", got.Version)
		}
		// A log position moves forward only, in the same transaction.
		for i, pos := range []int64{1_700_000_000_000_005, 1_700_000_000_000_003, 0, 1_700_000_000_000_009} {
			inc := api.Increment{NodeID: "p", Seq: uint64(i + 1), CrawlerID: c.ID, UserID: u.ID, Position: pos}
			if _, err := s.ApplyIncrements(ctx, []api.Increment{inc}); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.GetCrawler(ctx, c.ID); got.CursorPos != 1_700_000_000_000_009 {
			t.Fatalf("cursor position %d, want the highest applied", got.CursorPos)
		}

		// Usage for a deleted crawler still counts to the user it names.
		if err := s.DeleteCrawler(ctx, gone.ID); err != nil {
			t.Fatal(err)
		}
		batch := []api.Increment{
			{NodeID: "n", Seq: 100, CrawlerID: gone.ID, UserID: other.ID, Count: 4},
			{NodeID: "n", Seq: 101, CrawlerID: c.ID, UserID: other.ID, Count: 3}, // SQL's owner wins over the spawn's
		}
		applied, err := s.ApplyIncrements(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqsOf(applied), []uint64{100, 101}) {
			t.Fatalf("applied %v", seqsOf(applied))
		}
		if cu, uu := usageOf(t, s, c.ID, u.ID); cu != 9 || uu != 9 {
			t.Fatalf("crawler %d / user %d usage, want 9 / 9", cu, uu)
		}
		if _, ou := usageOf(t, s, 0, other.ID); ou != 4 {
			t.Fatalf("usage of the deleted crawler's user = %d, want 4", ou)
		}
		if ids, _ := s.AppliedIDs(ctx, "n", []uint64{100}); !slices.Equal(ids, []uint64{100}) {
			t.Fatalf("increment of a deleted crawler not recorded: %v", ids)
		}
	})
}

// TestStore_ApplyIncrementsConcurrent has 8 goroutines apply random,
// overlapping, shuffled batches of one pool of increments at once. Usage must
// equal the sum of the distinct increments, and each increment must be
// reported applied by exactly one call.
func TestStore_ApplyIncrementsConcurrent(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		users := []User{mustUser(t, s, "a", 0), mustUser(t, s, "b", 0)}
		var crawlers []Crawler
		for i := range 4 {
			crawlers = append(crawlers, mustCrawler(t, s, newCrawler(users[i%2].ID, strings.Repeat("q", i+1))))
		}
		rng := mrand.New(mrand.NewPCG(1, 2))
		var pool []api.Increment
		for _, node := range []string{"n1", "n2", "n3"} {
			for seq := uint64(1); seq <= 60; seq++ {
				c := crawlers[rng.IntN(len(crawlers))]
				pool = append(pool, api.Increment{NodeID: node, Seq: seq, CrawlerID: c.ID, UserID: c.UserID, Count: int64(rng.IntN(20) + 1)})
			}
		}
		const workers, batches = 8, 12
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			reports = map[string]int{}
			errs    = make(chan error, workers)
		)
		for w := range workers {
			r := mrand.New(mrand.NewPCG(uint64(w), 99))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range batches {
					batch := make([]api.Increment, 1+r.IntN(40))
					for i := range batch {
						batch[i] = pool[r.IntN(len(pool))]
					}
					applied, err := s.ApplyIncrements(ctx, batch)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for _, inc := range applied {
						reports[fmt.Sprintf("%s/%d", inc.NodeID, inc.Seq)]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Finally everything once more, shuffled: what was missed is applied now.
		all := slices.Clone(pool)
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		applied, err := s.ApplyIncrements(ctx, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, inc := range applied {
			reports[fmt.Sprintf("%s/%d", inc.NodeID, inc.Seq)]++
		}
		if len(reports) != len(pool) {
			t.Fatalf("%d distinct increments reported applied, want %d", len(reports), len(pool))
		}
		for id, n := range reports {
			if n != 1 {
				t.Fatalf("increment %s reported applied %d times", id, n)
			}
		}
		wantCrawler, wantUser := map[int64]int64{}, map[int64]int64{}
		for _, inc := range pool {
			wantCrawler[inc.CrawlerID] += inc.Count
			wantUser[inc.UserID] += inc.Count
		}
		for _, c := range crawlers {
			got, _ := s.GetCrawler(ctx, c.ID)
			if got.Usage != wantCrawler[c.ID] {
				t.Errorf("crawler %d usage %d, want %d", c.ID, got.Usage, wantCrawler[c.ID])
			}
		}
		for _, u := range users {
			got, _ := s.GetUser(ctx, u.ID)
			if got.Usage != wantUser[u.ID] {
				t.Errorf("user %d usage %d, want %d", u.ID, got.Usage, wantUser[u.ID])
			}
		}
	})
}

func TestStore_PruneApplied(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		batch := []api.Increment{{NodeID: "n", Seq: 1, CrawlerID: c.ID, Count: 1}, {NodeID: "n", Seq: 2, CrawlerID: c.ID, Count: 1}}
		if _, err := s.ApplyIncrements(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if n, err := s.PruneApplied(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("PruneApplied(an hour ago) = %d, %v; want 0", n, err)
		}
		if n, err := s.PruneApplied(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
			t.Fatalf("PruneApplied(now) = %d, %v; want 2", n, err)
		}
		if ids, _ := s.AppliedIDs(ctx, "n", []uint64{1, 2}); len(ids) != 0 {
			t.Fatalf("AppliedIDs after prune = %v", ids)
		}
	})
}

func TestStore_MaxAppliedSeq(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "m", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "max"))
		if got, err := s.MaxAppliedSeq(ctx, "n1"); err != nil || got != 0 {
			t.Fatalf("no increments: %d, %v", got, err)
		}
		incs := []api.Increment{{NodeID: "n1", Seq: 7, CrawlerID: c.ID, UserID: u.ID, Count: 1}, {NodeID: "n1", Seq: 3, CrawlerID: c.ID, UserID: u.ID, Count: 1}, {NodeID: "n2", Seq: 9, CrawlerID: c.ID, UserID: u.ID, Count: 1}}
		if _, err := s.ApplyIncrements(ctx, incs); err != nil {
			t.Fatal(err)
		}
		if got, err := s.MaxAppliedSeq(ctx, "n1"); err != nil || got != 7 {
			t.Fatalf("MaxAppliedSeq(n1) = %d, %v; want 7", got, err)
		}
	})
}
