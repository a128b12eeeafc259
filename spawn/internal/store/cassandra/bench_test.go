package cassandra

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Benchmark shape: one op is one delivery batch as a spawn flushes it,
// benchBatch comments from benchCrawlers crawlers over two days (so
// 2×benchCrawlers partitions), ~250 bytes of text each. Every comment has a
// new id, so every op writes new rows.
const (
	benchBatch    = 1000
	benchCrawlers = 10
)

var benchSeq atomic.Int64

func benchComments() []api.Comment {
	op := benchSeq.Add(1)
	now := time.Now().UTC()
	text := strings.Repeat("lorem ipsum dolor sit amet ", 9)
	out := make([]api.Comment, benchBatch)
	for i := range out {
		pub := now.Add(-time.Duration(i%2) * 24 * time.Hour).Add(-time.Duration(i) * time.Millisecond)
		out[i] = api.Comment{
			ID:          "op" + strconv.FormatInt(op, 10) + "-" + strconv.Itoa(i),
			CrawlerID:   int64(1 + i%benchCrawlers),
			Source:      "rss",
			Author:      "someone",
			Text:        text,
			URL:         "https://example.test/item/" + strconv.Itoa(i),
			PublishedAt: pub,
			FetchedAt:   now,
			Matched:     []string{"lorem"},
		}
	}
	return out
}

// baselineWorkers is how many goroutines the baseline writes with (env
// BW_BENCH_WORKERS overrides).
func baselineWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("BW_BENCH_WORKERS")); err == nil && n > 0 {
		return n
	}
	return 256
}

// BenchmarkWrite compares the store's Write path with a baseline: a minimal
// gocql loop, prepared and token-aware, writing the same rows with
// baselineWorkers goroutines as fast as it can, with no per-batch barrier.
// scripts/bench-store.sh runs it and prints the ratio.
func BenchmarkWrite(b *testing.B) {
	addr := testAddr(b)
	ks := newKeyspace(b)
	ctx := context.Background()
	uri := "cassandra://" + addr + "/" + ks
	st, err := Open(ctx, uri, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	alt, err := Open(ctx, uri, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { alt.Close() })
	if n, err := strconv.Atoi(os.Getenv("BW_BENCH_STORE_INFLIGHT")); err == nil && n > 0 {
		st.inFlight, alt.inFlight = n, n
	}
	if st.mode == writeBatches {
		alt.mode = writeSingles
	} else {
		alt.mode = writeBatches
	}

	c := gocql.NewCluster(addr)
	c.ProtoVersion = 4
	c.Consistency = gocql.LocalOne
	c.NumConns = 2
	c.Timeout = 10 * time.Second
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	c.Logger = log.New(io.Discard, "", 0)
	raw, err := c.CreateSession()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(raw.Close)

	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "comments/s")
	}
	b.Run("baseline", func(b *testing.B) {
		insert := `INSERT INTO ` + ks + `.comments (crawler_id, day, published_at, comment_id,
			source, author, text, url, fetched_at, matched) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
		// Rows are made before the clock starts, like the store's batches.
		rows := make([]api.Comment, 0, b.N*benchBatch)
		for range b.N {
			rows = append(rows, benchComments()...)
		}
		b.ResetTimer()
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		for range baselineWorkers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= len(rows) {
						return
					}
					r := &rows[i]
					err := raw.Query(insert, r.CrawlerID, utcDay(r.PublishedAt), r.PublishedAt, r.ID,
						r.Source, r.Author, r.Text, r.URL, r.FetchedAt, r.Matched).Exec()
					if err != nil {
						failed.Store(fmt.Errorf("row %d: %w", i, err))
						return
					}
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		report(b)
	})
	b.Run("store", benchWrites(ctx, st))
	b.Run("store-alt", benchWrites(ctx, alt))
	// counted is the path a spawn takes for comments it counts: the
	// batch's usage intents first, then the comments attributed to them,
	// skipping any the store already holds.
	b.Run("counted", func(b *testing.B) {
		var seq uint64
		for range b.N {
			b.StopTimer()
			batch := benchComments()
			byCrawler := map[int64]*store.Intent{}
			var intents []store.Intent
			for i := range batch {
				c := &batch[i]
				in, ok := byCrawler[c.CrawlerID]
				if !ok {
					seq++
					intents = append(intents, store.Intent{NodeID: "bench-node", Seq: seq, CrawlerID: c.CrawlerID, UserID: 1})
					in = &intents[len(intents)-1]
					byCrawler[c.CrawlerID] = in
				}
				c.NodeID, c.IncSeq = in.NodeID, in.Seq
			}
			for i := range intents {
				intents[i].Days = []time.Time{time.Now(), time.Now().Add(-24 * time.Hour)}
			}
			b.StartTimer()
			if err := st.Intend(ctx, intents); err != nil {
				b.Fatal(err)
			}
			if _, err := st.WriteFresh(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}

// benchWrites is a benchmark of s's Write path: one op is one batch of
// benchComments, made before the clock starts; it reports comments/s.
func benchWrites(ctx context.Context, s *Store) func(*testing.B) {
	return func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			batch := benchComments()
			b.StartTimer()
			if err := s.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "comments/s")
	}
}
