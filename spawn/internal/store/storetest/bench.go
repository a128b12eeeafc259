package storetest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Search benchmark shape: BenchComments() comments of crawler BenchCrawler
// over BenchDays days, ~250 bytes of text each; one in NeedleEvery carries
// the word "needle".
const (
	BenchCrawler = 1
	BenchDays    = 10
	NeedleEvery  = 100
	benchBatch   = 5000
)

// BenchComments is how many comments the search benchmarks store
// (BW_BENCH_COMMENTS, default 1,000,000).
func BenchComments() int {
	if n, err := strconv.Atoi(os.Getenv("BW_BENCH_COMMENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// FillForSearch writes the benchmark's comments, oldest first, unless the
// store already holds them (a search of every comment counts them).
func FillForSearch(b *testing.B, s SearchStore) {
	b.Helper()
	ctx := context.Background()
	n := BenchComments()
	p, err := s.Search(ctx, BenchCrawler, store.Search{Limit: 1, MaxScan: n + 1, Budget: time.Hour, Match: func(*api.Comment) bool { return false }})
	if err == nil && p.Scanned == n {
		return
	}
	if p.Scanned > 0 {
		b.Fatalf("the store holds %d comments of crawler %d, want 0 or %d: use a fresh store", p.Scanned, BenchCrawler, n)
	}
	start := time.Now()
	base := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -BenchDays)
	step := time.Duration(BenchDays) * 24 * time.Hour / time.Duration(n)
	text := strings.Repeat("lorem ipsum dolor sit amet ", 9)
	batch := make([]api.Comment, 0, benchBatch)
	for i := range n {
		t := text
		if i%NeedleEvery == NeedleEvery/2 {
			t += " needle"
		}
		batch = append(batch, api.Comment{ID: "c" + strconv.Itoa(i), CrawlerID: BenchCrawler, Source: api.SourceRSS,
			Author: "author" + strconv.Itoa(i%5000), Text: t, URL: "https://example.test/item/" + strconv.Itoa(i),
			PublishedAt: base.Add(time.Duration(i) * step), FetchedAt: base, Matched: []string{"lorem"}})
		if len(batch) == benchBatch || i == n-1 {
			if err := s.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Logf("wrote %d comments in %s", n, time.Since(start).Round(time.Second))
}

// peakHeap samples the heap in use while fn runs and returns how far its
// peak rose above the heap in use before fn (after a collection).
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	peak.Store(before.HeapInuse)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	<-stopped
	return peak.Load() - before.HeapInuse
}

// BenchSearch measures, over the comments FillForSearch wrote: the export
// of them all (the baseline: the store's fastest read, page by page), a
// search that reads them all and matches none (comments read per second,
// and the peak heap while it runs), and the first page of 20 matches of a
// word one comment in NeedleEvery carries.
func BenchSearch(b *testing.B, s interface {
	SearchStore
	store.Exporter
}) {
	FillForSearch(b, s)
	ctx := context.Background()
	n := BenchComments()
	none := func(c *api.Comment) bool { return strings.Contains(c.Text, "haystack") }
	needle := func(c *api.Comment) bool { return strings.HasSuffix(c.Text, " needle") }
	b.Run("export-all", func(b *testing.B) {
		for range b.N {
			read, cursor := 0, ""
			for {
				p, err := s.Export(ctx, BenchCrawler, store.Range{}, cursor, api.MaxExportLimit)
				if err != nil {
					b.Fatal(err)
				}
				read += len(p.Comments)
				if p.Next == "" {
					break
				}
				cursor = p.Next
			}
			if read != n {
				b.Fatalf("exported %d comments, want %d", read, n)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "comments/s")
	})
	b.Run("search-all-no-match", func(b *testing.B) {
		var peak uint64
		for range b.N {
			var scanned int
			peak = max(peak, peakHeap(func() {
				p, err := s.Search(ctx, BenchCrawler, store.Search{Match: none, Limit: 20, MaxScan: n + 1, Budget: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				scanned = p.Scanned
			}))
			if scanned != n {
				b.Fatalf("read %d comments, want %d", scanned, n)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "comments/s")
		b.ReportMetric(float64(peak)/(1<<20), "heap-growth-MiB")
	})
	b.Run("search-first-page", func(b *testing.B) {
		var scanned int
		for range b.N {
			p, err := s.Search(ctx, BenchCrawler, store.Search{Match: needle, Limit: 20})
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Comments) != 20 {
				b.Fatalf("a first page of %d matches: %s", len(p.Comments), fmt.Sprint(IDs(p.Comments)))
			}
			scanned = p.Scanned
		}
		b.ReportMetric(float64(scanned), "read/page")
	})
}
