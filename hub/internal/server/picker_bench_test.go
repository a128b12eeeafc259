package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// The Listen view's list of searches over a fleet of 10,000 crawlers
// (BenchmarkListenPicker): the first page, a page deep in the list, a
// name found, and a find that matches nothing (every row looked at).
const (
	pickerCrawlers = 10_000
	pickerBaseline = 100
	// pickerPage is the page the dashboard reads: 50 rows and one more to
	// know whether a next page exists.
	pickerPage = 51
)

// pickerFixtures are made once per test binary; TestMain removes what
// they leave (listenCleanups).
var pickerFixtures = map[string]string{}

// newPickerFixture is a hub's HTTP surface over a database of n named
// crawlers, made through the store as the API makes them; the last one is
// "Needle in the hay".
func newPickerFixture(b *testing.B, dsn string, n int) string {
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
	began := time.Now()
	jobs := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				name := fmt.Sprintf("Brand watch %d", i)
				if i == n-1 {
					name = "Needle in the hay"
				}
				parsed, err := query.ParseList([]string{fmt.Sprintf("brand%d OR product%d", i, i)})
				if err == nil {
					_, err = store.CreateCrawler(ctx, sqlstore.Crawler{UserID: u.ID, Name: name, Source: "twitter", Query: []string{parsed.String()},
						QueryUUID: parsed.UUID("twitter").String(), Enabled: false})
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.Logf("%s: %d crawlers made in %s", dsn[:min(len(dsn), 8)], n, time.Since(began).Round(time.Millisecond))
	s := &Server{Hub: hub, Store: store, AdminToken: testAdminToken, NodeToken: "node-token", Logger: logger}
	srv := httptest.NewServer(s.Handler())
	listenCleanups = append(listenCleanups, srv.Close)
	// The reads measured find what they should.
	for path, want := range map[string]int{
		fmt.Sprintf("/v1/crawlers?after=0&limit=%d", pickerPage):              min(n, pickerPage),
		fmt.Sprintf("/v1/crawlers?after=0&limit=%d&match=needle", pickerPage): 1,
		fmt.Sprintf("/v1/crawlers?after=0&limit=%d&match=zzz", pickerPage):    0,
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var page []api.Crawler
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || len(page) != want {
			b.Fatalf("GET %s: %d crawlers (%v), want %d", path, len(page), err, want)
		}
	}
	return srv.URL
}

// getOK reads one path of the admin API and checks it answered 200.
func getOK(b *testing.B, base, path string) {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
}

// BenchmarkListenPicker measures the reads of the Listen view's list of
// searches over 10,000 crawlers against 100 in the same run:
//
//	go test -run '^$' -bench BenchmarkListenPicker -benchtime 20x -count 3 ./hub/internal/server/
//
// With BW_TEST_POSTGRES set (scripts/services.sh env) it measures
// PostgreSQL too.
func BenchmarkListenPicker(b *testing.B) {
	dbs := []string{"sqlite"}
	if os.Getenv("BW_TEST_POSTGRES") != "" {
		dbs = append(dbs, "postgres")
	}
	for _, db := range dbs {
		for _, n := range []int{pickerBaseline, pickerCrawlers} {
			fixture := func(b *testing.B) string {
				key := fmt.Sprintf("%s/%d", db, n)
				if u := pickerFixtures[key]; u != "" {
					return u
				}
				var dsn string
				if db == "postgres" {
					dsn = benchPostgres(b)
				} else {
					dir, err := os.MkdirTemp("", "bw-picker-bench-")
					if err != nil {
						b.Fatal(err)
					}
					listenCleanups = append(listenCleanups, func() { _ = os.RemoveAll(dir) })
					dsn = "sqlite://" + filepath.Join(dir, "hub.db")
				}
				u := newPickerFixture(b, dsn, n)
				pickerFixtures[key] = u
				return u
			}
			reads := []struct{ name, path string }{
				{"first-page", fmt.Sprintf("/v1/crawlers?after=0&limit=%d", pickerPage)},
				{"last-page", fmt.Sprintf("/v1/crawlers?after=%d&limit=%d", n-pickerPage+1, pickerPage)},
				{"find-name", fmt.Sprintf("/v1/crawlers?after=0&limit=%d&match=needle", pickerPage)},
				{"find-nothing", fmt.Sprintf("/v1/crawlers?after=0&limit=%d&match=zzz", pickerPage)},
			}
			for _, r := range reads {
				b.Run(fmt.Sprintf("%s/read=%s/crawlers=%d", db, r.name, n), func(b *testing.B) {
					u := fixture(b)
					getOK(b, u, r.path) // warm
					b.ResetTimer()
					for b.Loop() {
						getOK(b, u, r.path)
					}
				})
			}
		}
	}
}
