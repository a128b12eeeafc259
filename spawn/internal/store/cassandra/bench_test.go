package cassandra

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

func benchComments() []api.Comment { return benchCommentsOf(0) }

// benchCommentsOf is benchComments for crawlers first+1 to
// first+benchCrawlers.
func benchCommentsOf(first int64) []api.Comment {
	op := benchSeq.Add(1)
	now := time.Now().UTC()
	text := strings.Repeat("lorem ipsum dolor sit amet ", 9)
	out := make([]api.Comment, benchBatch)
	for i := range out {
		pub := now.Add(-time.Duration(i%2) * 24 * time.Hour).Add(-time.Duration(i) * time.Millisecond)
		out[i] = api.Comment{
			ID:          "op" + strconv.FormatInt(op, 10) + "-" + strconv.Itoa(i),
			CrawlerID:   first + int64(1+i%benchCrawlers),
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

// Rich comments: posts as a social source brings them, for the store's
// cost on texts of many words (each a search term). richWords words a
// text, drawn under Zipf's law (s = 1.1) from a vocabulary of richVocab,
// by richAuthors authors (also Zipf), every third a reply in its batch.
const (
	richWords   = 20
	richVocab   = 100_000
	richAuthors = 10_000
)

var (
	richMu     sync.Mutex
	richRand   = rand.New(rand.NewSource(1))
	richZipf   = rand.NewZipf(richRand, 1.1, 1, richVocab-1)
	richPeople = rand.NewZipf(richRand, 1.1, 1, richAuthors-1)
)

func benchRichComments() []api.Comment {
	op := benchSeq.Add(1)
	now := time.Now().UTC()
	out := make([]api.Comment, benchBatch)
	richMu.Lock()
	defer richMu.Unlock()
	for i := range out {
		pub := now.Add(-time.Duration(i%2) * 24 * time.Hour).Add(-time.Duration(i) * time.Millisecond)
		var text strings.Builder
		for w := range richWords {
			if w > 0 {
				text.WriteByte(' ')
			}
			text.WriteString("w" + strconv.FormatUint(richZipf.Uint64(), 36))
		}
		a := strconv.FormatUint(richPeople.Uint64(), 10)
		did := "did:plc:author" + a
		c := api.Comment{
			ID:          "at://" + did + "/app.bsky.feed.post/op" + strconv.FormatInt(op, 10) + "-" + strconv.Itoa(i),
			CrawlerID:   int64(1 + i%benchCrawlers),
			Source:      api.SourceBluesky,
			Author:      "author" + a + ".bsky.social",
			AuthorID:    did,
			Text:        text.String(),
			URL:         "https://bsky.app/profile/" + did + "/post/op" + strconv.Itoa(i),
			PublishedAt: pub,
			FetchedAt:   now,
			Lang:        "en",
			Matched:     []string{"w1"},
		}
		if i%3 == 2 {
			c.ReplyTo, c.ThreadID = out[i-2].ID, out[i-2].ID
		}
		out[i] = c
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

	report := func(b *testing.B, cpu cpuTime) {
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "comments/s")
		cpu.report(b, b.N*benchBatch)
	}
	// The baseline writes into a table of the comments' own columns and
	// key, without the store's indexes: one bare row a comment.
	if err := raw.Query(`CREATE TABLE ` + ks + `.bare_comments (crawler_id bigint, day date, published_at timestamp, comment_id text,
			source text, author text, text text, url text, fetched_at timestamp, matched frozen<list<text>>,
			PRIMARY KEY ((crawler_id, day), published_at, comment_id)) WITH CLUSTERING ORDER BY (published_at DESC, comment_id ASC)`).Exec(); err != nil {
		b.Fatal(err)
	}
	baseline := func(gen func() []api.Comment) func(b *testing.B) {
		return func(b *testing.B) {
			insert := `INSERT INTO ` + ks + `.bare_comments (crawler_id, day, published_at, comment_id,
			source, author, text, url, fetched_at, matched) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
			// Rows are made before the clock starts, like the store's batches.
			rows := make([]api.Comment, 0, b.N*benchBatch)
			for range b.N {
				rows = append(rows, gen()...)
			}
			b.ResetTimer()
			start := readCPU()
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
			cpu := readCPU().since(start)
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			report(b, cpu)
		}
	}
	// The paths of plain comments first, the counted ones right after the
	// store's Write: what a path leaves the node to do afterwards
	// (memtable flushes, compactions, index segments) is charged to the
	// next one, and single statements and rich posts leave far more.
	b.Run("baseline", baseline(benchComments))
	b.Run("store", benchWrites(ctx, st, benchComments))
	// counted is the path a spawn takes for comments it counts: the
	// batch's usage intents first, then the comments attributed to them,
	// skipping any the store already holds. Its crawlers are its own, as
	// a spawn's are: the partitions it writes are ones it alone writes.
	b.Run("counted", benchCounted(ctx, st, 100))
	// counted-shared is the same path into partitions another spawn wrote
	// too (a crawler that moved, a spawn restarted): every key is read.
	other, err := Open(ctx, uri, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { other.Close() })
	if err := other.Write(ctx, benchCommentsOf(200)); err != nil {
		b.Fatal(err)
	}
	b.Run("counted-shared", benchCounted(ctx, st, 200))
	b.Run("store-alt", benchWrites(ctx, alt, benchComments))
	b.Run("baseline-rich", baseline(benchRichComments))
	b.Run("store-rich", benchWrites(ctx, st, benchRichComments))
}

// benchCounted is a benchmark of s's counted path (Intend, then
// WriteFresh) for crawlers first+1 to first+benchCrawlers.
func benchCounted(ctx context.Context, st *Store, first int64) func(*testing.B) {
	return func(b *testing.B) {
		var seq uint64
		var cpu cpuTime
		whole := readCPU()
		for range b.N {
			b.StopTimer()
			batch := benchCommentsOf(first)
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
			start := readCPU()
			if err := st.Intend(ctx, intents); err != nil {
				b.Fatal(err)
			}
			if _, err := st.WriteFresh(ctx, batch); err != nil {
				b.Fatal(err)
			}
			cpu = cpu.add(readCPU().since(start))
		}
		cpu.node = readCPU().since(whole).node
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "comments/s")
		cpu.report(b, b.N*benchBatch)
	}
}

// benchWrites is a benchmark of s's Write path: one op is one batch of
// gen's comments, made before the clock starts; it reports comments/s.
func benchWrites(ctx context.Context, s *Store, gen func() []api.Comment) func(*testing.B) {
	return func(b *testing.B) {
		var cpu cpuTime
		whole := readCPU()
		for range b.N {
			b.StopTimer()
			batch := gen()
			b.StartTimer()
			start := readCPU()
			if err := s.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
			cpu = cpu.add(readCPU().since(start))
		}
		cpu.node = readCPU().since(whole).node
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "comments/s")
		cpu.report(b, b.N*benchBatch)
	}
}

// cpuTime is processor time spent by this process and, when
// BW_BENCH_CASSANDRA_PID names it, by the Cassandra node: on a machine
// other work shares, the time a path costs per comment moves much less
// than its rate does. The client's is summed over the timed parts of the
// ops, the node's (read in clock ticks) over the whole run.
type cpuTime struct {
	self, node time.Duration
	nodeKnown  bool
}

// readCPU reads both processes' user and system time so far.
func readCPU() cpuTime {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t := cpuTime{self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	pid := os.Getenv("BW_BENCH_CASSANDRA_PID")
	if pid == "" {
		return t
	}
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return t
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 12th and 13th of them, in clock ticks of 1/100 s.
	rest := string(raw)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return t
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return t
	}
	t.node, t.nodeKnown = time.Duration(u+k)*10*time.Millisecond, true
	return t
}

func (t cpuTime) since(start cpuTime) cpuTime {
	return cpuTime{self: t.self - start.self, node: t.node - start.node, nodeKnown: t.nodeKnown && start.nodeKnown}
}

func (t cpuTime) add(u cpuTime) cpuTime {
	return cpuTime{self: t.self + u.self, node: t.node + u.node, nodeKnown: u.nodeKnown}
}

// report adds the CPU time a comment took to the benchmark's metrics.
func (t cpuTime) report(b *testing.B, comments int) {
	b.ReportMetric(float64(t.self.Microseconds())/float64(comments), "client-cpu-µs/comment")
	if t.nodeKnown {
		b.ReportMetric(float64(t.node.Microseconds())/float64(comments), "node-cpu-µs/comment")
	}
}
