package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// The Listen view's load for a crawler of a million comments, from the
// aggregates the hub keeps (BenchmarkListenView). The comments arrive as
// spawns send them: usage increments of about a thousand comments, each
// with its minutes (and their author sketches), its hours' top terms, and
// every author and language of its comments.
const (
	// listenComments is the big crawler's comments over the last 7 days;
	// listenBaseline the small one's, measured in the same run.
	listenComments = 1_000_000
	listenBaseline = 1_000
	// listenAuthors is how many authors write them, their comments
	// Zipf-distributed (a few loud voices, a long tail).
	listenAuthors = 200_000
	// listenPerIncrement is the comments of one increment.
	listenPerIncrement = 1_000
	// listenSpan is how far back the comments go.
	listenSpan = 7 * 24 * time.Hour
)

// listenLangs are the comments' languages, the first most often.
var listenLangs = []string{"en", "en", "en", "es", "de", "fr", "ja", "pt", ""}

// listenTerms are the vocabulary of the comments' terms.
var listenTerms = func() []string {
	out := make([]string, 400)
	for i := range out {
		switch i % 4 {
		case 0:
			out[i] = fmt.Sprintf("#tag%d", i)
		case 1:
			out[i] = fmt.Sprintf("@user%d", i)
		default:
			out[i] = fmt.Sprintf("word%d", i)
		}
	}
	return out
}()

// seedListen applies n comments of a crawler, spread evenly over the last
// listenSpan, through ApplyIncrements.
func seedListen(b *testing.B, store *sqlstore.Store, crawlerID, userID int64, n int, seq *uint64) {
	b.Helper()
	ctx := context.Background()
	r := mrand.New(mrand.NewPCG(uint64(crawlerID), 7))
	zipf := mrand.NewZipf(r, 1.2, 1, listenAuthors-1)
	end := time.Now().UTC()
	start := end.Add(-listenSpan + time.Minute)
	every := listenSpan / time.Duration(n)
	var batch []api.Increment
	for first := 0; first < n; first += listenPerIncrement {
		count := min(listenPerIncrement, n-first)
		a := &api.IncrementAnalytics{}
		minutes := map[time.Time]*hyperloglog.Sketch{}
		minuteCount := map[time.Time]int64{}
		hourTerms := map[time.Time]map[string]int64{}
		hourAuthors := map[time.Time]map[string]*api.AuthorTally{}
		hourLangs := map[time.Time]map[string]int64{}
		for i := first; i < first+count; i++ {
			at := start.Add(time.Duration(i) * every)
			m, h := at.Truncate(time.Minute), at.Truncate(time.Hour)
			author := fmt.Sprintf("author%d", zipf.Uint64())
			if minutes[m] == nil {
				minutes[m], _ = hyperloglog.NewSketch(12, true)
			}
			minutes[m].Insert([]byte(author))
			minuteCount[m]++
			if hourTerms[h] == nil {
				hourTerms[h], hourAuthors[h], hourLangs[h] = map[string]int64{}, map[string]*api.AuthorTally{}, map[string]int64{}
			}
			for range 3 {
				hourTerms[h][listenTerms[int(zipf.Uint64())%len(listenTerms)]]++
			}
			t := hourAuthors[h][author]
			if t == nil {
				t = &api.AuthorTally{Author: author, AuthorID: "id:" + author}
				hourAuthors[h][author] = t
			}
			t.Comments++
			t.Likes += int64(r.IntN(20))
			t.Reposts += int64(r.IntN(4))
			hourLangs[h][listenLangs[r.IntN(len(listenLangs))]]++
		}
		for m, sk := range minutes {
			raw, err := sk.MarshalBinary()
			if err != nil {
				b.Fatal(err)
			}
			a.Minutes = append(a.Minutes, api.MinuteActivity{At: m, Comments: minuteCount[m], Authors: raw})
		}
		for h, terms := range hourTerms {
			ht := api.HourTerms{At: h}
			for term, c := range terms {
				ht.Terms = append(ht.Terms, api.TermCount{Term: term, Count: c})
			}
			a.Terms = append(a.Terms, ht)
			ha := api.HourAuthors{At: h}
			for _, t := range hourAuthors[h] {
				ha.Authors = append(ha.Authors, *t)
			}
			a.Authors = append(a.Authors, ha)
			hl := api.HourLangs{At: h}
			for lang, c := range hourLangs[h] {
				hl.Langs = append(hl.Langs, api.LangTally{Lang: lang, Comments: c})
			}
			a.Langs = append(a.Langs, hl)
		}
		*seq++
		batch = append(batch, api.Increment{NodeID: "bench-node", Seq: *seq, CrawlerID: crawlerID, UserID: userID, Count: int64(count), Analytics: a})
		if len(batch) == 20 || first+count >= n {
			if _, err := store.ApplyIncrements(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// benchPostgres makes a fresh PostgreSQL database under BW_TEST_POSTGRES
// and returns its DSN, or "" when there is none.
func benchPostgres(b *testing.B) string {
	b.Helper()
	base := os.Getenv("BW_TEST_POSTGRES")
	if base == "" {
		return ""
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	name := "bw_bench_" + hex.EncodeToString(raw[:])
	exec := func(stmt string) {
		// Also run by TestMain after the run, when b is done: report
		// there by panicking, which fails the binary.
		db, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: gormlogger.Discard})
		if err != nil {
			panic(fmt.Sprintf("server: benchmark database: %v", err))
		}
		defer func() {
			if s, err := db.DB(); err == nil {
				_ = s.Close()
			}
		}()
		if err := db.Exec(stmt).Error; err != nil {
			panic(fmt.Sprintf("server: benchmark database: %s: %v", stmt, err))
		}
	}
	exec("CREATE DATABASE " + name)
	listenCleanups = append(listenCleanups, func() { exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// listenFixture is a hub's HTTP surface over a database holding a big and
// a small crawler.
type listenFixture struct {
	url        string
	big, small int64
}

// listenFixtures are made once per test binary, for every count of the
// benchmark, and removed by TestMain after the run (listenCleanups).
var (
	listenFixtures = map[string]*listenFixture{}
	listenCleanups []func()
)

// TestMain removes what the benchmarks left: their databases.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range slices.Backward(listenCleanups) {
		f()
	}
	os.Exit(code)
}

func newListenFixture(b *testing.B, dsn string) *listenFixture {
	b.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	store, err := sqlstore.Open(ctx, dsn, logger)
	if err != nil {
		b.Fatal(err)
	}
	listenCleanups = append(listenCleanups, func() { _ = store.Close() })
	hub, err := cluster.New(cluster.Config{Store: store, NodeToken: "node-token", Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	u, err := store.CreateUser(ctx, "acme", 0)
	if err != nil {
		b.Fatal(err)
	}
	var ids []int64
	for i, name := range []string{"Acme launch", "Acme support"} {
		parsed, err := query.ParseList([]string{fmt.Sprintf("acme%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		c, err := store.CreateCrawler(ctx, sqlstore.Crawler{UserID: u.ID, Name: name, Source: "twitter", Query: []string{parsed.String()},
			QueryUUID: parsed.UUID("twitter").String(), Enabled: false})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	var seq uint64
	began := time.Now()
	seedListen(b, store, ids[0], u.ID, listenComments, &seq)
	seedListen(b, store, ids[1], u.ID, listenBaseline, &seq)
	b.Logf("%s: %d + %d comments applied in %s", dsn[:min(len(dsn), 8)], listenComments, listenBaseline, time.Since(began).Round(time.Second))
	s := &Server{Hub: hub, Store: store, AdminToken: testAdminToken, NodeToken: "node-token", Logger: logger}
	srv := httptest.NewServer(s.Handler())
	listenCleanups = append(listenCleanups, srv.Close)
	return &listenFixture{url: srv.URL, big: ids[0], small: ids[1]}
}

// loadListen makes the requests the Listen view makes when a crawler is
// picked, at once as the page does, and waits for every answer.
func loadListen(b *testing.B, base string, id int64, window string) {
	step := map[string]string{"1h": "1m", "24h": "1h", "7d": "6h"}[window]
	paths := []string{
		fmt.Sprintf("/v1/crawlers/%d", id),
		fmt.Sprintf("/v1/crawlers/%d/activity?window=%s&step=%s", id, window, step),
		fmt.Sprintf("/v1/crawlers/%d/terms?window=%s&n=40&merge=false", id, window),
		fmt.Sprintf("/v1/crawlers/%d/authors?window=%s&n=15", id, window),
		fmt.Sprintf("/v1/crawlers/%d/breakdown?window=%s", id, window),
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(paths))
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, base+p, nil)
			req.Header.Set("Authorization", "Bearer "+testAdminToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				errs <- err
				return
			}
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("GET %s: %d", p, resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkListenView measures the Listen view's reads (the crawler, its
// activity, terms, top authors and breakdowns) for a crawler of a million
// comments over 7 days, against a crawler of a thousand in the same
// database: the aggregates make the view's cost independent of the
// comments stored.
//
//	go test -run '^$' -bench BenchmarkListenView -benchtime 20x -count 3 ./hub/internal/server/
//
// With BW_TEST_POSTGRES set (scripts/services.sh env) it measures
// PostgreSQL too.
func BenchmarkListenView(b *testing.B) {
	dbs := []struct{ name, dsn string }{{"sqlite", ""}}
	if os.Getenv("BW_TEST_POSTGRES") != "" {
		dbs = append(dbs, struct{ name, dsn string }{"postgres", ""})
	}
	for _, db := range dbs {
		fixture := func(b *testing.B) *listenFixture {
			if f := listenFixtures[db.name]; f != nil {
				return f
			}
			var dsn string
			if db.name == "postgres" {
				dsn = benchPostgres(b)
			} else {
				dir, err := os.MkdirTemp("", "bw-listen-bench-")
				if err != nil {
					b.Fatal(err)
				}
				listenCleanups = append(listenCleanups, func() { _ = os.RemoveAll(dir) })
				dsn = "sqlite://" + filepath.Join(dir, "hub.db")
			}
			f := newListenFixture(b, dsn)
			listenFixtures[db.name] = f
			return f
		}
		for _, window := range []string{"1h", "24h", "7d"} {
			for _, size := range []string{"1k", "1M"} {
				b.Run(fmt.Sprintf("%s/window=%s/comments=%s", db.name, window, size), func(b *testing.B) {
					f := fixture(b)
					id := f.small
					if size == "1M" {
						id = f.big
					}
					loadListen(b, f.url, id, window) // warm
					b.ResetTimer()
					for b.Loop() {
						loadListen(b, f.url, id, window)
					}
				})
			}
		}
	}
}
