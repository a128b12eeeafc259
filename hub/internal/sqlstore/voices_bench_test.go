package sqlstore

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// BenchmarkApplyVoices measures applying usage increments with their
// analytics (minutes, terms), with and without their voices (every
// author and language of their comments), in alternating batches in the
// same databases: the ratio is what counting exact authors costs the hub.
// An increment holds 10 comments of a crawler, by 10 authors of 5,000; a
// batch of 200 increments spreads over 100 crawlers, as a poll round's.
//
//	go test -run '^$' -bench BenchmarkApplyVoices -benchtime 50x -count 3 ./hub/internal/sqlstore/
func BenchmarkApplyVoices(b *testing.B) {
	const (
		crawlers  = 100
		perBatch  = 200
		perInc    = 10
		authorsOf = 5000
	)
	dbs := []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", sqliteTestDSN}}
	if os.Getenv("BW_TEST_POSTGRES") != "" {
		dbs = append(dbs, struct {
			name string
			dsn  func(testing.TB) string
		}{"postgres", postgresTestDSN})
	}
	for _, db := range dbs {
		b.Run(db.name, func(b *testing.B) {
			ctx := context.Background()
			open := func() (*Store, []int64, int64) {
				s := openTest(b, db.dsn(b))
				u, err := s.CreateUser(ctx, "u", 0)
				if err != nil {
					b.Fatal(err)
				}
				var ids []int64
				for i := range crawlers {
					c, err := s.CreateCrawler(ctx, newCrawler(u.ID, fmt.Sprintf("q%d", i)))
					if err != nil {
						b.Fatal(err)
					}
					ids = append(ids, c.ID)
				}
				return s, ids, u.ID
			}
			with, withIDs, withUser := open()
			without, withoutIDs, withoutUser := open()
			var seq uint64
			batch := func(ids []int64, user int64, voices bool) []api.Increment {
				now := time.Now().UTC()
				out := make([]api.Increment, perBatch)
				for i := range out {
					seq++
					a := &api.IncrementAnalytics{
						Minutes: []api.MinuteActivity{{At: now.Truncate(time.Minute), Comments: perInc}},
						Terms:   []api.HourTerms{{At: now.Truncate(time.Hour), Terms: []api.TermCount{{Term: "#go", Count: perInc}, {Term: "release", Count: 3}}}},
					}
					if voices {
						ha := api.HourAuthors{At: now.Truncate(time.Hour)}
						for k := range perInc {
							ha.Authors = append(ha.Authors, api.AuthorTally{Author: fmt.Sprintf("a%d", (int(seq)*7+k*131)%authorsOf), Comments: 1, Likes: 2})
						}
						a.Authors = []api.HourAuthors{ha}
						a.Langs = []api.HourLangs{{At: now.Truncate(time.Hour), Langs: []api.LangTally{{Lang: "en", Comments: 7}, {Lang: "de", Comments: 3}}}}
					}
					out[i] = api.Increment{NodeID: "bench", Seq: seq, CrawlerID: ids[i%len(ids)], UserID: user, Count: perInc, Analytics: a}
				}
				return out
			}
			var tWith, tWithout time.Duration
			b.ResetTimer()
			for b.Loop() {
				incs := batch(withoutIDs, withoutUser, false)
				start := time.Now()
				if _, err := without.ApplyIncrements(ctx, incs); err != nil {
					b.Fatal(err)
				}
				tWithout += time.Since(start)
				incs = batch(withIDs, withUser, true)
				start = time.Now()
				if _, err := with.ApplyIncrements(ctx, incs); err != nil {
					b.Fatal(err)
				}
				tWith += time.Since(start)
			}
			n := float64(b.N * perBatch)
			b.ReportMetric(float64(tWith.Microseconds())/n, "µs/inc(voices)")
			b.ReportMetric(float64(tWithout.Microseconds())/n, "µs/inc(none)")
			b.ReportMetric(float64(tWith)/float64(tWithout), "ratio")
		})
	}
}
