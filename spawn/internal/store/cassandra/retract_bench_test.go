package cassandra

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Shape of BenchmarkForgetAuthor: a store of forgetStoreRows comments
// (BW_BENCH_FORGET_ROWS overrides, for a quicker run) over
// forgetCrawlers crawlers and forgetDays days, by forgetAuthors authors,
// into which one author's forgetAuthorRows comments are written, spread
// over forgetAuthorCrawlers crawlers.
const (
	forgetStoreRows      = 10_000_000
	forgetCrawlers       = 1000
	forgetDays           = 30
	forgetAuthors        = 200_000
	forgetAuthorRows     = 10_000
	forgetAuthorCrawlers = 100
	// forgetKeyspace is kept between runs: the load is written once.
	forgetKeyspace = "bwbench_forget"
	// forgetLoadBatch is how many comments one Write of the load carries.
	forgetLoadBatch = 5000
	// loadedRow names the store_info row counting the comments loaded.
	loadedRow = "bench_loaded"
)

func forgetRows() int {
	if n, err := strconv.Atoi(os.Getenv("BW_BENCH_FORGET_ROWS")); err == nil && n > 0 {
		return n
	}
	return forgetStoreRows
}

// BenchmarkForgetAuthor removes every comment of one author — 10,000 over
// 100 crawlers — from a store of 10,000,000 comments, as an account
// takedown (an account tombstone) and as a forget (a forget tombstone),
// and reports how long the removal took and how many index rows it read:
// the author index gives the rows to delete, so it reads what it removes
// and not the store. The load is written once with the store's own
// batched writer into a keyspace kept for reruns (its time is logged); each
// op writes the author's comments again, outside the timing.
//
//	go test -run '^$' -bench ForgetAuthor -benchtime 3x ./spawn/internal/store/cassandra/
func BenchmarkForgetAuthor(b *testing.B) {
	addr := testAddr(b)
	ctx := context.Background()
	s, err := Open(ctx, "cassandra://"+addr+"/"+forgetKeyspace, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	rows := forgetRows()
	loadForget(b, s, rows)

	const did = "did:plc:forgetbench0000000000000"
	for _, tc := range []struct {
		name string
		tomb store.Tombstone
	}{
		{"takedown", store.Tombstone{Source: api.SourceBluesky, Author: did, Account: true}},
		{"forget", store.Tombstone{Source: api.SourceBluesky, Author: did, Exact: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var took time.Duration
			var read, removed int64
			ops := 0
			for b.Loop() {
				b.StopTimer()
				writeAuthor(b, s, did)
				// The previous op's tombstone would keep the author out.
				if err := s.Lift(ctx, api.SourceBluesky, []string{did}); err != nil {
					b.Fatal(err)
				}
				tomb := tc.tomb
				tomb.Until = time.Now().Add(time.Hour)
				tomb.Before = time.Now()
				if tomb.Account {
					tomb.Before = time.Time{}
				}
				before := s.indexRowsRead.Load()
				b.StartTimer()
				start := time.Now()
				gone, err := s.Bury(ctx, []store.Tombstone{tomb})
				took += time.Since(start)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if len(gone) != forgetAuthorRows {
					b.Fatalf("removed %d comments, want %d", len(gone), forgetAuthorRows)
				}
				read += s.indexRowsRead.Load() - before
				removed += int64(len(gone))
				ops++
				// The forget tombstone would keep the author's comments
				// of the next op out: let it go.
				if err := s.session.Query(`TRUNCATE ` + forgetKeyspace + `.tombstones`).Exec(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(ops), "ms/removal")
			b.ReportMetric(float64(read)/float64(ops), "index-rows-read/op")
			b.ReportMetric(float64(removed)/float64(ops), "comments-removed/op")
			b.ReportMetric(float64(rows), "store-comments")
		})
	}
}

// writeAuthor writes the benchmark author's comments.
func writeAuthor(b *testing.B, s *Store, did string) {
	b.Helper()
	now := time.Now().UTC()
	cs := make([]api.Comment, forgetAuthorRows)
	for i := range cs {
		cs[i] = api.Comment{ID: fmt.Sprintf("at://%s/app.bsky.feed.post/f%07d", did, i), CrawlerID: int64(1 + i%forgetAuthorCrawlers),
			Source: api.SourceBluesky, Author: "forgetme.bsky.social", AuthorID: did, Text: "a post to forget",
			PublishedAt: now.Add(-time.Duration(i%forgetDays) * 24 * time.Hour).Add(-time.Duration(i) * time.Second), FetchedAt: now}
	}
	for start := 0; start < len(cs); start += forgetLoadBatch {
		if err := s.Write(context.Background(), cs[start:min(start+forgetLoadBatch, len(cs))]); err != nil {
			b.Fatal(err)
		}
	}
}

// loadForget fills the keyspace up to rows comments, going on from where
// an earlier run stopped, and logs how long it took.
func loadForget(b *testing.B, s *Store, rows int) {
	b.Helper()
	ctx := context.Background()
	loaded := 0
	var v string
	err := s.session.Query(`SELECT value FROM `+forgetKeyspace+`.store_info WHERE name = ?`, loadedRow).Scan(&v)
	switch {
	case err == nil:
		loaded, _ = strconv.Atoi(v)
	case err != gocql.ErrNotFound:
		b.Fatal(err)
	}
	if loaded >= rows {
		b.Logf("store of %d comments already loaded", loaded)
		return
	}
	start := time.Now()
	now := time.Now().UTC()
	text := "a post of the background load, about nothing in particular, long enough to look like one"
	batch := make([]api.Comment, 0, forgetLoadBatch)
	for i := loaded; i < rows; i++ {
		a := i % forgetAuthors
		batch = append(batch, api.Comment{ID: fmt.Sprintf("at://did:plc:load%09d/app.bsky.feed.post/l%010d", a, i),
			CrawlerID: int64(1000 + i%forgetCrawlers), Source: api.SourceBluesky, Author: fmt.Sprintf("load%d.bsky.social", a),
			AuthorID: fmt.Sprintf("did:plc:load%09d", a), Text: text,
			PublishedAt: now.Add(-time.Duration(i%forgetDays) * 24 * time.Hour).Add(-time.Duration(i%86400) * time.Second), FetchedAt: now})
		if len(batch) == forgetLoadBatch || i == rows-1 {
			if err := s.Write(ctx, batch); err != nil {
				b.Fatalf("load at %d: %v", i, err)
			}
			batch = batch[:0]
			if err := s.session.Query(`INSERT INTO `+forgetKeyspace+`.store_info (name, value) VALUES (?, ?)`, loadedRow, strconv.Itoa(i+1)).Exec(); err != nil {
				b.Fatal(err)
			}
			if (i+1)%500_000 < forgetLoadBatch {
				b.Logf("loaded %d comments in %s", i+1, time.Since(start).Round(time.Second))
			}
		}
	}
	b.Logf("loaded %d comments (from %d) in %s", rows, loaded, time.Since(start).Round(time.Second))
}
