package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"
	"golang.org/x/sync/errgroup"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// The hub-scale benchmark runs a real hub (this package, a SQLite store, or
// PostgreSQL with BW_SCALE_DB=postgres) against simulated spawns: real HTTP
// servers on loopback that answer the node API the way a spawn does,
// without crawling. They run in child processes, so the CPU time this
// process reports is the hub's own.
const (
	simEnv = "BW_SIM_SPAWNS" // set in the child: how many spawns to simulate
	// churnEnv sets the share of subscribers whose status changes between
	// two polls (BW_SCALE_CHURN, default defaultChurn).
	churnEnv        = "BW_SCALE_CHURN"
	defaultChurn    = 0.1
	crawlersPerUser = 100
	// spawnsPerChild keeps a child's listeners and connections (two file
	// descriptors per simulated spawn) under a 20,000 descriptor limit.
	spawnsPerChild = 4000
	// createChunk is how many crawlers the setup stores per call, so that
	// setup does not inflate the hub's peak memory.
	createChunk = 20_000
	// naiveMaxCrawlers bounds the naive per-subscriber round, one request
	// per crawler, to sizes where it ends in reasonable time.
	naiveMaxCrawlers = 100_000
)

// TestMain turns the test binary into the simulated spawns when asked.
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv(simEnv)); err == nil && n > 0 {
		runSimulatedSpawns(n)
		return
	}
	os.Exit(m.Run())
}

// simSpawn answers the node API from memory, as a spawn does: statuses and
// data sources through api.StatusDelta, so a poll is answered with what
// changed since the answer the hub last took in. Each poll, every running
// subscriber counts a comment with probability churn (its reservation and
// rate change, so its status travels), the activity of a busy fleet.
type simSpawn struct {
	mu    sync.Mutex
	subs  map[int64]*simSub
	delta api.StatusDelta
	rng   *rand.Rand
	churn float64
	// With incs on, every comment counted becomes a usage increment with
	// its analytics (a minute of activity with an author sketch, an
	// hour's terms, candidates), held until the hub acknowledges it, as a
	// spawn reports usage (simIncrementsPath turns it on and off).
	incs    bool
	incSeq  uint64
	pending []api.Increment
}

// simIncrementsPath turns a simulated spawn's usage increments on (?on=1)
// or off.
const simIncrementsPath = "/sim/increments"

type simSub struct {
	spec api.SubscriberSpec
	st   api.SubscriberStatus
}

func (s *simSpawn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case simIncrementsPath:
		s.incs = r.URL.Query().Get("on") == "1"
	case api.PathSubscribers:
		var req api.SubscribersRequest
		if json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		resp := api.SubscribersResponse{Results: make([]api.SubscriberResult, 0, len(req.Subscribers))}
		for _, spec := range req.Subscribers {
			sub, ok := s.subs[spec.CrawlerID]
			if !ok {
				sub = &simSub{st: api.SubscriberStatus{CrawlerID: spec.CrawlerID, State: api.StateRunning, Instance: 1}}
				s.subs[spec.CrawlerID] = sub
			}
			sub.spec = spec
			sub.st.Version, sub.st.QueryUUID, sub.st.DataSource = spec.Version, spec.QueryUUID, "rss:"+spec.Query[0]
			resp.Results = append(resp.Results, api.SubscriberResult{CrawlerID: spec.CrawlerID})
		}
		_ = json.NewEncoder(w).Encode(resp)
	case api.PathSubscribersRemove:
		var req api.RemoveRequest
		_ = json.Unmarshal(body, &req)
		for _, id := range req.CrawlerIDs {
			delete(s.subs, id)
		}
	case api.PathPoll:
		var req api.PollRequest
		if json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		resp := api.PollResponse{NodeID: req.NodeID, Clock: time.Now().UnixMilli(), Store: "ok"}
		resp.Answer, resp.Partial = s.delta.Begin(req.StatusBase)
		s.pending = slices.DeleteFunc(s.pending, func(inc api.Increment) bool { return slices.Contains(req.Acks, inc.Seq) })
		listed := make(map[int64]bool, len(req.Subscribers))
		for _, ref := range req.Subscribers {
			listed[ref.CrawlerID] = true
			st := api.SubscriberStatus{CrawlerID: ref.CrawlerID, State: api.StateMissing}
			if sub, ok := s.subs[ref.CrawlerID]; ok {
				if s.rng.Float64() < s.churn {
					sub.st.Reserved++
					sub.st.Stored++
					sub.st.RatePerSec = float64(1+s.rng.IntN(20)) / 10
					if s.incs {
						s.incSeq++
						s.pending = append(s.pending, simIncrement(s.incSeq, sub.spec, s.rng))
					}
				}
				st = sub.st
			}
			if s.delta.Include(st) {
				resp.Subscribers = append(resp.Subscribers, st)
			}
		}
		for id := range s.subs {
			if !listed[id] {
				delete(s.subs, id) // the hub no longer wants it here
			}
		}
		ids := make([]int64, 0, len(s.subs))
		for id := range s.subs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			resp.DataSources = append(resp.DataSources, api.DataSourceStatus{Key: s.subs[id].st.DataSource, Source: api.SourceRSS, Subscribers: 1})
		}
		resp.Increments = s.pending
		if !s.delta.DataSources(resp.DataSources) {
			resp.DataSources, resp.DataSourcesUnchanged = nil, true
		}
		s.delta.End()
		_ = json.NewEncoder(w).Encode(resp)
	default:
		http.NotFound(w, r)
	}
}

// simIncrement is one comment counted for a subscriber, with the
// analytics a spawn sends with it.
func simIncrement(seq uint64, spec api.SubscriberSpec, rng *rand.Rand) api.Increment {
	now := time.Now().UTC()
	sketch, _ := hyperloglog.NewSketch(12, true) // the spawn's precision (terms.SketchPrecision)
	sketch.Insert(fmt.Appendf(nil, "author%d", rng.IntN(1000)))
	authors, _ := sketch.MarshalBinary()
	terms := make([]api.TermCount, 8)
	for i := range terms {
		terms[i] = api.TermCount{Term: fmt.Sprintf("term%d", rng.IntN(200)), Count: 1}
	}
	return api.Increment{Seq: seq, CrawlerID: spec.CrawlerID, UserID: spec.UserID, Instance: 1, Count: 1, Newest: now,
		Analytics: &api.IncrementAnalytics{
			Minutes:    []api.MinuteActivity{{At: now.Truncate(time.Minute), Comments: 1, Authors: authors}},
			Terms:      []api.HourTerms{{At: now.Truncate(time.Hour), Terms: terms}},
			Candidates: []api.Suggestion{{Term: fmt.Sprintf("#tag%d", rng.IntN(50)), Score: 0.5, Count: 1}},
		}}
}

// runSimulatedSpawns serves n simulated spawns, prints their URLs, and exits
// when its standard input closes.
func runSimulatedSpawns(n int) {
	out := bufio.NewWriter(os.Stdout)
	churn := envFloat(churnEnv, defaultChurn)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		srv := &http.Server{Handler: &simSpawn{subs: map[int64]*simSub{}, churn: churn, rng: rand.New(rand.NewPCG(uint64(i), 1))}}
		go func() { _ = srv.Serve(ln) }()
		fmt.Fprintf(out, "http://%s\n", ln.Addr())
	}
	out.Flush()
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startSimulatedSpawns starts child processes of at most spawnsPerChild
// spawns each and returns the URLs.
func startSimulatedSpawns(b *testing.B, n int) []string {
	urls := make([]string, 0, n)
	for len(urls) < n {
		urls = append(urls, startSimulatedChild(b, min(spawnsPerChild, n-len(urls)))...)
	}
	return urls
}

func startSimulatedChild(b *testing.B, n int) []string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", simEnv, n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	urls := make([]string, 0, n)
	for len(urls) < n && sc.Scan() {
		urls = append(urls, strings.TrimSpace(sc.Text()))
	}
	if len(urls) != n {
		b.Fatalf("simulated spawns: got %d URLs, want %d: %v", len(urls), n, sc.Err())
	}
	return urls
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func maxRSSMiB() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// rssMiB is this process's resident size now (Linux).
func rssMiB() float64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize()) / (1 << 20)
}

// scaleDSN is the benchmark's database: a SQLite file, or with
// BW_SCALE_DB=postgres a fresh database on the server BW_TEST_POSTGRES
// names, dropped afterwards.
func scaleDSN(b *testing.B) string {
	if os.Getenv("BW_SCALE_DB") != "postgres" {
		return "sqlite://" + filepath.Join(b.TempDir(), "hub.db")
	}
	base := os.Getenv("BW_TEST_POSTGRES")
	if base == "" {
		b.Fatal("BW_SCALE_DB=postgres needs BW_TEST_POSTGRES (eval \"$(scripts/services.sh env)\")")
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatalf("BW_TEST_POSTGRES: %v", err)
	}
	admin := func(sql string) {
		db, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: gormlogger.Discard})
		if err != nil {
			b.Fatalf("connect to BW_TEST_POSTGRES: %v", err)
		}
		defer func() {
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		}()
		if err := db.Exec(sql).Error; err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	name := fmt.Sprintf("bw_bench_%d", time.Now().UnixNano())
	admin("CREATE DATABASE " + name)
	b.Cleanup(func() { admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// scaleHub builds a hub with crawlers crawlers over nodes simulated spawns.
func scaleHub(b *testing.B, nodes, crawlers int) (*Hub, []string) {
	b.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(ctx, scaleDSN(b), logger)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	// Customers of 100 crawlers each; a tenth of the crawlers are limited.
	users := make([]int64, envInt("BW_SCALE_USERS", max(1, crawlers/crawlersPerUser)))
	for i := range users {
		u, err := st.CreateUser(ctx, fmt.Sprintf("customer%d", i), 0)
		if err != nil {
			b.Fatal(err)
		}
		users[i] = u.ID
	}
	for from := 0; from < crawlers; from += createChunk {
		rows := make([]sqlstore.Crawler, min(createChunk, crawlers-from))
		for j := range rows {
			i := from + j
			q := []string{fmt.Sprintf("https://feeds.example/%d.xml", i)}
			rows[j] = sqlstore.Crawler{UserID: users[i%len(users)], Source: api.SourceRSS, Query: q[:1],
				QueryUUID: query.UUID(api.SourceRSS, q).String(), Enabled: true}
			if i%10 == 0 {
				rows[j].CommentLimit = 1_000_000 // a tenth are limited: leases on every poll
			}
		}
		if _, err := st.CreateCrawlers(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	debug.FreeOSMemory() // the setup's garbage is not the hub's
	h, err := New(Config{Store: st, Logger: logger, PollInterval: 10 * time.Second, HTTPClient: &http.Client{Transport: &countingTransport{next: nodeTransport()}}})
	if err != nil {
		b.Fatal(err)
	}
	hctx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	h.run.start(hctx)
	h.mu.Lock()
	h.loadPriorLocked(nil) // a first run: no spawn has usage to report
	h.mu.Unlock()
	urls := startSimulatedSpawns(b, nodes)
	for i, u := range urls {
		if _, err := h.Register(api.RegisterRequest{NodeID: fmt.Sprintf("node-%05d", i), URL: u}); err != nil {
			b.Fatal(err)
		}
	}
	return h, urls
}

// countingTransport counts the requests the hub sends to spawns.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

// BenchmarkHubScale measures a hub with 1,000 spawns and 100,000 crawlers of
// 1,000 customers (BW_SCALE_NODES, BW_SCALE_CRAWLERS and BW_SCALE_USERS
// change the sizes, BW_SCALE_DB=postgres the database): the first hard
// reload that places every subscriber, a hard reload with nothing to move
// (which reads only what changed in SQL), a soft one (the same without the
// poll of every node), the hard one with the periodic full read of SQL, one
// batched poll round, and, for comparison up to
// naiveMaxCrawlers, one round of the naive polling that asks every
// subscriber separately.
func BenchmarkHubScale(b *testing.B) {
	nodes, crawlers := envInt("BW_SCALE_NODES", 1000), envInt("BW_SCALE_CRAWLERS", 100_000)
	h, urls := scaleHub(b, nodes, crawlers)
	ctx := context.Background()

	// measure runs fn b.N times after setup, which is not measured.
	sent := &h.cfg.HTTPClient.Transport.(*countingTransport).n
	measure := func(name string, setup, fn func()) {
		b.Run(name, func(b *testing.B) {
			if setup != nil {
				setup()
			}
			cpu0 := cpuTime()
			req0 := sent.Load()
			b.ResetTimer()
			// Labelled, so a CPU profile tells the measures apart
			// (go tool pprof -tagfocus measure=PollRound).
			pprof.Do(ctx, pprof.Labels("measure", name), func(context.Context) {
				for range b.N {
					fn()
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "hub-cpu-ms/op")
			b.ReportMetric(float64(sent.Load()-req0)/float64(b.N), "requests/op")
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
			b.ReportMetric(rssMiB(), "rss-MiB")
			b.ReportMetric(maxRSSMiB(), "max-rss-MiB")
		})
	}
	// place makes sure every crawler is placed and sent, whichever of the
	// benchmarks below runs first.
	place := func() {
		if _, err := h.Reload(ctx, true); err != nil {
			b.Fatalf("reload: %v", err)
		}
	}
	first := true
	measure("FirstHardReload", nil, func() {
		if !first {
			// Forget what was sent, so every run places everything again.
			h.mu.Lock()
			for _, c := range h.crawlers {
				h.sentToLocked(c, nil)
				h.wantLocked(c, nil)
			}
			h.mu.Unlock()
			h.reload.mu.Lock()
			h.reload.view.fullAt = time.Time{} // a starting hub reads everything
			h.reload.mu.Unlock()
		}
		first = false
		resp, err := h.Reload(ctx, true)
		if err != nil || resp.Assigned != crawlers || resp.Failed != 0 {
			b.Fatalf("reload: %+v %v", resp, err)
		}
	})
	measure("SteadyHardReload", place, func() {
		resp, err := h.Reload(ctx, true)
		if err != nil || resp.Assigned != 0 {
			b.Fatalf("steady reload sent %+v: %v", resp, err)
		}
	})
	// The reload's own part, without the poll of every node that follows
	// a hard one: read what changed in SQL, route, plan.
	measure("SteadySoftReload", place, func() {
		resp, err := h.Reload(ctx, false)
		if err != nil || resp.Assigned != 0 {
			b.Fatalf("steady reload sent %+v: %v", resp, err)
		}
	})
	measure("SteadyHardReloadFullRead", place, func() {
		h.reload.mu.Lock()
		h.reload.view.fullAt = time.Time{} // the periodic full read is due
		h.reload.mu.Unlock()
		resp, err := h.Reload(ctx, true)
		if err != nil || resp.Assigned != 0 {
			b.Fatalf("steady reload sent %+v: %v", resp, err)
		}
	})
	measure("PollRound", place, func() { h.PollAll(ctx) })
	if path := os.Getenv("BW_SCALE_HEAP_PROFILE"); path != "" {
		// What the hub holds in steady state, for go tool pprof.
		runtime.GC()
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	// The same round with every status and data source told, as before
	// answers carried only what changed: the baseline of the one above.
	measure("PollRoundWhole", place, func() {
		h.mu.Lock()
		for _, n := range h.nodes {
			n.askAllLocked()
		}
		h.mu.Unlock()
		h.PollAll(ctx)
	})
	// A round in which every churned subscriber reports a counted comment
	// with its analytics: the hub merges them exactly once into SQL.
	incs := func(on bool) {
		var g errgroup.Group
		g.SetLimit(sendConcurrency)
		for _, u := range urls {
			g.Go(func() error {
				resp, err := http.Post(fmt.Sprintf("%s%s?on=%v", u, simIncrementsPath, map[bool]int{false: 0, true: 1}[on]), "", nil)
				if err == nil {
					resp.Body.Close()
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	measure("PollRoundIncrements", func() { place(); incs(true); h.PollAll(ctx) }, func() { h.PollAll(ctx) })
	incs(false)
	h.PollAll(ctx) // acknowledge the last ones
	// GET /v1/health (and every metrics scrape) counts crawlers by state.
	measure("Health", place, func() {
		if hh := h.Health(); hh.Crawlers.Total != crawlers {
			b.Fatalf("health counts %d crawlers", hh.Crawlers.Total)
		}
	})
	// Every spawn registering again, as after a partition healed: each
	// registration walks only what its node ran.
	measure("RegisterAgain", place, func() {
		for i, u := range urls {
			if _, err := h.Register(api.RegisterRequest{NodeID: fmt.Sprintf("node-%05d", i), URL: u}); err != nil {
				b.Fatal(err)
			}
		}
	})
	if crawlers <= naiveMaxCrawlers {
		measure("NaivePerSubscriberPollRound", place, func() { naiveRound(b, h, urls) })
	}
}

// naiveRound polls every subscriber with its own request, as a hub that
// checks each subscriber separately would, with the same concurrency.
func naiveRound(b *testing.B, h *Hub, urls []string) {
	type job struct {
		url string
		id  int64
		v   int64
	}
	h.mu.Lock()
	byURL := make(map[string]string, len(h.nodes))
	for _, n := range h.nodes {
		byURL[n.id] = n.url
	}
	jobs := make([]job, 0, len(h.crawlers))
	for id, c := range h.crawlers {
		if c.node != nil {
			jobs = append(jobs, job{byURL[c.node.id], id, c.row.Version})
		}
	}
	h.mu.Unlock()
	opts := h.nodeOpts
	opts.Timeouts = api.NodeTimeouts{} // bounded by the benchmark, not the poll interval
	var g errgroup.Group
	g.SetLimit(sendConcurrency)
	for _, j := range jobs {
		g.Go(func() error {
			_, err := api.NewNodeClient(j.url, opts).Poll(context.Background(), api.PollRequest{Epoch: h.epoch, Subscribers: []api.SubscriberRef{{CrawlerID: j.id, Version: j.v}}})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	_ = urls
}

func envFloat(name string, def float64) float64 {
	if f, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && f >= 0 {
		return f
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
