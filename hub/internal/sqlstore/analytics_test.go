package sqlstore

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func sketchOf(t *testing.T, authors ...string) []byte {
	t.Helper()
	sk, _ := hyperloglog.NewSketch(sketchPrecision, true)
	for _, a := range authors {
		sk.Insert([]byte(a))
	}
	b, err := sk.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// analyticsInc is an increment of n comments at minute at by author
// "a<seq>", each with the terms given; n/2 of them positive, n/4
// negative.
func analyticsInc(t *testing.T, crawler, user int64, seq uint64, at time.Time, n int64, terms ...string) api.Increment {
	a := &api.IncrementAnalytics{
		Minutes: []api.MinuteActivity{{At: at.Truncate(time.Minute), Comments: n, Authors: sketchOf(t, fmt.Sprint("a", seq)),
			Positive: n / 2, Negative: n / 4}},
		Terms:      []api.HourTerms{{At: at.Truncate(time.Hour), Other: 1}},
		Candidates: []api.Suggestion{{Term: "#cand", Score: 0.5 * float64(n), Count: n}},
	}
	for _, term := range terms {
		a.Terms[0].Terms = append(a.Terms[0].Terms, api.TermCount{Term: term, Count: n})
	}
	return api.Increment{NodeID: "node-a", Seq: seq, CrawlerID: crawler, UserID: user, Count: n, Analytics: a}
}

func TestStore_AnalyticsAppliedOnceWithUsage(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c1 := mustCrawler(t, s, newCrawler(u.ID, "q1"))
		c2 := mustCrawler(t, s, newCrawler(u.ID, "q22"))
		at := time.Now().UTC().Add(-2 * time.Minute)
		var incs []api.Increment
		for seq := uint64(1); seq <= 20; seq++ {
			crawler, terms := c1.ID, []string{"#golang", "release"}
			if seq%4 == 0 {
				crawler, terms = c2.ID, []string{"#golang"}
			}
			incs = append(incs, analyticsInc(t, crawler, u.ID, seq, at.Add(time.Duration(seq%2)*time.Minute), int64(seq), terms...))
		}
		// Polls lost, repeated, replayed and reordered: every increment
		// reaches the hub one to four times, in random batches.
		r := mrand.New(mrand.NewPCG(1, 2))
		var deliveries []api.Increment
		for _, inc := range incs {
			for range 1 + r.IntN(4) {
				deliveries = append(deliveries, inc)
			}
		}
		r.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
		for len(deliveries) > 0 {
			k := min(len(deliveries), 1+r.IntN(7))
			if _, err := s.ApplyIncrements(ctx, deliveries[:k]); err != nil {
				t.Fatal(err)
			}
			deliveries = deliveries[k:]
		}
		var want1, want2 int64
		for _, inc := range incs {
			if inc.CrawlerID == c1.ID {
				want1 += inc.Count
			} else {
				want2 += inc.Count
			}
		}
		got, err := s.TermsSince(ctx, c1.ID, at.Add(-time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := []api.TermCount{{Term: "#golang", Count: want1}, {Term: "release", Count: want1}}; !slices.Equal(got, want) {
			t.Fatalf("crawler terms = %v, want %v", got, want)
		}
		got, err = s.UserTermsSince(ctx, u.ID, at.Add(-time.Hour), 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := []api.TermCount{{Term: "#golang", Count: want1 + want2}}; !slices.Equal(got, want) {
			t.Fatalf("user terms = %v, want %v", got, want)
		}
		steps, err := s.Activity(ctx, c1.ID, at.Add(-time.Hour), time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var comments, authors, pos, neu, neg, wantPos, wantNeg int64
		for _, st := range steps {
			comments += st.Comments
			authors += st.Authors
			pos, neu, neg = pos+st.Positive, neu+st.Neutral, neg+st.Negative
			if st.Positive+st.Neutral+st.Negative != st.Comments || st.Neutral < 0 {
				t.Fatalf("step %+v: labels do not sum to comments", st)
			}
		}
		for _, inc := range incs {
			if inc.CrawlerID == c1.ID {
				wantPos, wantNeg = wantPos+inc.Count/2, wantNeg+inc.Count/4
			}
		}
		if pos != wantPos || neg != wantNeg || neu != want1-wantPos-wantNeg {
			t.Fatalf("activity %d positive, %d neutral, %d negative; want %d, %d, %d", pos, neu, neg, wantPos, want1-wantPos-wantNeg, wantNeg)
		}
		cu, _ := usageOf(t, s, c1.ID, u.ID)
		if comments != want1 || cu != want1 {
			t.Fatalf("activity %d comments, usage %d; want %d", comments, cu, want1)
		}
		if authors != 15 { // one author per increment of c1
			t.Fatalf("authors %d, want 15", authors)
		}
		hourly, err := s.Activity(ctx, c1.ID, at.Add(-24*time.Hour), time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var hc int64
		for _, st := range hourly {
			hc += st.Comments
		}
		if hc != want1 {
			t.Fatalf("hourly activity %d comments, want %d", hc, want1)
		}
		sugg, err := s.Suggestions(ctx, c1.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(sugg) != 1 || sugg[0].Count != want1 || sugg[0].Score != 0.5*float64(want1) {
			t.Fatalf("suggestions %+v, want #cand counted %d", sugg, want1)
		}
	})
}

func TestStore_AnalyticsOfRecoveredIncrementComeWithItsNode(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		at := time.Now().UTC()
		full := analyticsInc(t, c.ID, u.ID, 1, at, 5, "#golang")
		recovered := full
		recovered.Count, recovered.Analytics = 5, nil // a recovery counts from the store, without analytics
		if _, err := s.ApplyRecovered(ctx, []api.Increment{recovered}); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the node's own report, twice: no usage, analytics once
			if _, err := s.ApplyIncrements(ctx, []api.Increment{full}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.TermsSince(ctx, c.ID, at.Add(-time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := []api.TermCount{{Term: "#golang", Count: 5}}; !slices.Equal(got, want) {
			t.Fatalf("terms = %v, want %v", got, want)
		}
		if cu, _ := usageOf(t, s, c.ID, u.ID); cu != 5 {
			t.Fatalf("usage %d, want 5", cu)
		}
	})
}

// TestStore_SuggestionsRankByScoreThenSightings keeps candidates from
// posts nobody shared (score 0) and ranks them below any engaged one, by
// how often they were seen; a negative score is refused.
func TestStore_SuggestionsRankByScoreThenSightings(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		at := time.Now().UTC()
		inc := func(seq uint64, cands ...api.Suggestion) api.Increment {
			i := analyticsInc(t, c.ID, u.ID, seq, at, 1)
			i.Analytics.Candidates = cands
			return i
		}
		incs := []api.Increment{
			inc(1, api.Suggestion{Term: "#often", Score: 0, Count: 3}, api.Suggestion{Term: "#rare", Score: 0, Count: 1},
				api.Suggestion{Term: "#bad", Score: -1, Count: 1}),
			inc(2, api.Suggestion{Term: "#often", Score: 0, Count: 2}, api.Suggestion{Term: "#shared", Score: 0.09, Count: 1}),
		}
		if _, err := s.ApplyIncrements(ctx, incs); err != nil {
			t.Fatal(err)
		}
		got, err := s.Suggestions(ctx, c.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []api.Suggestion{{Term: "#shared", Score: 0.09, Count: 1}, {Term: "#often", Score: 0, Count: 5}, {Term: "#rare", Score: 0, Count: 1}}
		if !slices.Equal(got, want) {
			t.Fatalf("suggestions = %+v, want %+v", got, want)
		}
	})
}

func TestStore_TermsBoundedPerHour(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		at := time.Now().UTC()
		var total int64
		for seq := uint64(1); seq <= 40; seq++ {
			h := api.HourTerms{At: at.Truncate(time.Hour)}
			for i := range 20 {
				n := int64(i + 1)
				h.Terms = append(h.Terms, api.TermCount{Term: fmt.Sprintf("t%d-%d", seq, i), Count: n})
				total += n
			}
			h.Terms = append(h.Terms, api.TermCount{Term: "#always", Count: 100})
			total += 100
			inc := api.Increment{NodeID: "n", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: 1, Analytics: &api.IncrementAnalytics{Terms: []api.HourTerms{h}}}
			if _, err := s.ApplyIncrements(ctx, []api.Increment{inc}); err != nil {
				t.Fatal(err)
			}
		}
		var rows int64
		if err := s.db.Model(&termCountRow{}).Where("crawler_id = ?", c.ID).Count(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if rows > compactTermsAt+1 {
			t.Fatalf("%d rows in one crawler hour, want at most %d", rows, compactTermsAt+1)
		}
		var sum int64
		if err := s.db.Model(&termCountRow{}).Where("crawler_id = ?", c.ID).Select("SUM(count)").Scan(&sum).Error; err != nil {
			t.Fatal(err)
		}
		if sum != total {
			t.Fatalf("terms plus tail = %d, want every occurrence %d", sum, total)
		}
		got, err := s.TermsSince(ctx, c.ID, at, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != (api.TermCount{Term: "#always", Count: 4000}) {
			t.Fatalf("top = %v", got)
		}
		if err := s.PruneAnalytics(ctx, at.Add(analyticsRetention+2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.TermsSince(ctx, c.ID, at.Add(-time.Hour), 5); len(got) != 0 {
			t.Fatalf("terms after prune = %v", got)
		}
	})
}

func TestStore_ActivityRefusesBadSteps(t *testing.T) {
	s := openTest(t, sqliteTestDSN(t))
	now := time.Now()
	for _, tc := range []struct {
		since time.Duration
		step  time.Duration
	}{{time.Hour, 30 * time.Second}, {7 * 24 * time.Hour, time.Minute}, {24 * time.Hour, 90 * time.Minute}, {7 * 24 * time.Hour, time.Hour / 2}} {
		if _, err := s.Activity(context.Background(), 1, now.Add(-tc.since), now, tc.step); err == nil {
			t.Errorf("window %s step %s: no error", tc.since, tc.step)
		}
	}
}
