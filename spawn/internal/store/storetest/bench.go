package storetest

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Search benchmark shape: BenchComments() comments of crawler BenchCrawler
// over BenchDays days, ~250 bytes of text each, published one after the
// other (comment i is the i-th oldest) by BenchAuthors authors in turn; one
// comment in NeedleEvery carries the word "needle", one in RareEvery the
// words "needle thimble". The store's name carries BenchVersion, so a
// store filled by an earlier shape (or an earlier layout of the store) is
// not read as this one.
const (
	BenchCrawler = 1
	BenchDays    = 10
	BenchAuthors = 5000
	NeedleEvery  = 100
	RareEvery    = 100_000
	BenchVersion = 3
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

// BenchComment is the i-th oldest comment of the search benchmarks, published
// at base + i*step. Comments NeedleEvery/2, NeedleEvery/2 + NeedleEvery, …
// end with " needle"; the last comment of every RareEvery (RareEvery-50,
// 2*RareEvery-50, …), itself one of those, with " needle thimble".
func BenchComment(i int, base time.Time, step time.Duration) api.Comment {
	t := strings.Repeat("lorem ipsum dolor sit amet ", 9)
	switch {
	case i%RareEvery == RareEvery-NeedleEvery/2:
		t += " needle thimble"
	case i%NeedleEvery == NeedleEvery/2:
		t += " needle"
	}
	return api.Comment{ID: "c" + strconv.Itoa(i), CrawlerID: BenchCrawler, Source: Source,
		Author: "author" + strconv.Itoa(i%BenchAuthors), Text: t, URL: "https://example.test/item/" + strconv.Itoa(i),
		PublishedAt: base.Add(time.Duration(i) * step), FetchedAt: base, Matched: []string{"lorem"}}
}

// FillForSearch writes the benchmark's comments, oldest first, unless the
// store already holds them (a search of every comment counts them and the
// rare ones).
func FillForSearch(b *testing.B, s SearchStore) {
	b.Helper()
	ctx := context.Background()
	n := BenchComments()
	rare := 0
	countRare := func(c *api.Comment) bool {
		if strings.HasSuffix(c.Text, " thimble") {
			rare++
		}
		return false
	}
	p, err := s.Search(ctx, BenchCrawler, store.Search{Limit: 1, MaxScan: n + 1, Budget: time.Hour, Match: countRare})
	if err == nil && p.Scanned == n && rare == n/RareEvery {
		return
	}
	if p.Scanned > 0 {
		b.Fatalf("the store holds %d comments of crawler %d (%d rare), want 0 or %d (%d rare): use a fresh store",
			p.Scanned, BenchCrawler, rare, n, n/RareEvery)
	}
	start := time.Now()
	base := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -BenchDays)
	step := time.Duration(BenchDays) * 24 * time.Hour / time.Duration(n)
	batch := make([]api.Comment, 0, benchBatch)
	for i := range n {
		batch = append(batch, BenchComment(i, base, step))
		if len(batch) == benchBatch || i == n-1 {
			// A write is idempotent: one that timed out on a loaded
			// machine is written again, a few times at most.
			var err error
			for try := 0; try < 5; try++ {
				if err = s.Write(ctx, batch); err == nil {
					break
				}
				b.Logf("write of comments %d to %d: %v; again", i+1-len(batch), i, err)
			}
			if err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	el := time.Since(start)
	b.Logf("wrote %d comments in %s, %.0f comments/s", n, el.Round(100*time.Millisecond), float64(n)/el.Seconds())
}

// benchMatcher evaluates a query of the query language on a comment as
// the node API's search does.
func benchMatcher(b *testing.B, q string) func(*api.Comment) bool {
	b.Helper()
	parsed := benchQuery(b, q)
	return func(c *api.Comment) bool {
		_, ok := parsed.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang, Sentiment: api.SentimentLabel(c.Sentiment)})
		return ok
	}
}

func benchQuery(b *testing.B, q string) *query.Query {
	b.Helper()
	parsed, err := query.Parse(q)
	if err != nil {
		b.Fatal(err)
	}
	return parsed
}

// SearchQuestion is one question of the search benchmarks: a query and the
// matches a first page of 20 holds, read off BenchComment for 1,000,000
// comments: Bounded when the page stops at store.DefaultSearchScan (it
// reads the 200,000 newest comments, 800,000 to 999,999), Whole when it
// reads as far as it needs.
type SearchQuestion struct {
	Name, Query    string
	Bounded, Whole int
}

// SearchQuestions are the questions of BenchSearch (and of the index
// measured against it in docs/benchmarks.md).
var SearchQuestions = []SearchQuestion{
	// One in NeedleEvery: the newest 20 are 999,950 back to 998,050.
	{Name: "common", Query: "needle", Bounded: 20, Whole: 20},
	// One in RareEvery: 99,950 + k*100,000; 999,950 and 899,950 are among
	// the newest 200,000.
	{Name: "rare", Query: "thimble", Bounded: 2, Whole: 10},
	{Name: "absent", Query: "haystack", Bounded: 0, Whole: 0},
	// The rare comments end with the phrase.
	{Name: "phrase", Query: `"needle thimble"`, Bounded: 2, Whole: 10},
	// The needles but the rare ones: 999,850 back to 997,950 (999,950 has
	// thimble).
	{Name: "boolean", Query: `"dolor sit" needle -thimble`, Bounded: 20, Whole: 20},
	// One in BenchAuthors: 999,950, 994,950, … back to 904,950.
	{Name: "from", Query: "from:author4950", Bounded: 20, Whole: 20},
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
// and the peak heap while it runs), the first page of 20 matches of each
// of SearchQuestions as the node API asks for it (bounded by
// store.DefaultSearchScan and DefaultSearchBudget), and, for the questions
// whose bounded page is not their whole answer, the first page read as far
// as it needs. With indexed (a store with a search index), each question
// is also asked with its parsed query (store.Search.Query), which the
// store answers from its index (first-page-index/…). The 1,000,000-comment
// counts of SearchQuestions are checked when BW_BENCH_COMMENTS is unset.
func BenchSearch(b *testing.B, s interface {
	SearchStore
	store.Exporter
}, indexed bool) {
	FillForSearch(b, s)
	ctx := context.Background()
	n := BenchComments()
	check := os.Getenv("BW_BENCH_COMMENTS") == ""
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
		none := benchMatcher(b, "haystack")
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
	for _, sq := range SearchQuestions {
		b.Run("first-page/"+sq.Name, func(b *testing.B) {
			benchFirstPage(b, s, sq, store.Search{Match: benchMatcher(b, sq.Query), Limit: 20}, check)
		})
	}
	for _, sq := range SearchQuestions {
		if !indexed {
			break
		}
		b.Run("first-page-index/"+sq.Name, func(b *testing.B) {
			benchFirstPage(b, s, sq, store.Search{Match: benchMatcher(b, sq.Query), Query: benchQuery(b, sq.Query), Limit: 20}, check)
		})
	}
	for _, sq := range SearchQuestions {
		if sq.Bounded == sq.Whole {
			continue
		}
		b.Run("first-page-whole/"+sq.Name, func(b *testing.B) {
			benchFirstPage(b, s, sq, store.Search{Match: benchMatcher(b, sq.Query), Limit: 20, MaxScan: n + 1, Budget: time.Hour}, check)
		})
	}
}

// benchFirstPage times one search page of sq and reports the comments it
// read and the matches it holds. With check, a page that read the
// default bound (or everything, when unbounded) must hold sq's matches.
func benchFirstPage(b *testing.B, s store.Searcher, sq SearchQuestion, q store.Search, check bool) {
	var p store.SearchPage
	var peak uint64
	for range b.N {
		var err error
		peak = max(peak, peakHeap(func() {
			p, err = s.Search(context.Background(), BenchCrawler, q)
		}))
		if err != nil {
			b.Fatal(err)
		}
	}
	want := -1
	switch {
	case q.MaxScan > 0 || p.Next == "":
		want = sq.Whole
	case p.Scanned == store.DefaultSearchScan || len(p.Comments) == q.Limit:
		want = sq.Bounded
	}
	if check && want >= 0 && len(p.Comments) != want {
		b.Fatalf("%s: a first page of %d matches after reading %d: %v, want %d", sq.Query, len(p.Comments), p.Scanned, IDs(p.Comments), want)
	}
	b.ReportMetric(float64(p.Scanned), "read/page")
	b.ReportMetric(float64(len(p.Comments)), "matches/page")
	b.ReportMetric(float64(peak)/(1<<20), "heap-growth-MiB")
}
