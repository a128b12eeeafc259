package rss

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
)

// checkErr waits for the feed to report an error and checks it: it names
// the feed, says what went wrong (want) and matches every sentinel in is.
func checkErr(t *testing.T, ds *feed, url, want string, is ...error) error {
	t.Helper()
	testkit.WaitFor(t, waitDeadline, "an error", func() bool { return ds.Err() != nil })
	err := ds.Err()
	if !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Err() = %q, want it to name %s and say %q", err, url, want)
	}
	for _, target := range is {
		if !errors.Is(err, target) {
			t.Fatalf("Err() = %v, want errors.Is %v", err, target)
		}
	}
	return err
}

func TestFeed_TimeoutsEndInAClearError(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    func(o *Options)
		want    string
	}{
		{
			name: "no headers",
			handler: func(_ http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
			},
			opts: func(o *Options) { o.HeaderTimeout, o.FetchTimeout = 50*time.Millisecond, 5*time.Second },
			want: "no response headers within 50ms",
		},
		{
			name: "body never ends",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				fmt.Fprint(w, `<rss version="2.0"><channel><title>t</title>`)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			opts: func(o *Options) { o.HeaderTimeout, o.FetchTimeout = time.Second, 100*time.Millisecond },
			want: "no complete answer within 100ms",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			opts := testOptions()
			tt.opts(&opts)
			ds, rec := start(t, opts, srv.URL+"/feed")
			checkErr(t, ds, srv.URL+"/feed", tt.want, ErrTimeout, ErrDegraded)
			if rec.batchCount() != 0 {
				t.Fatal("a timed-out fetch emitted items")
			}
		})
	}
}

// A server that accepts connections and never reads or answers.
func TestFeed_SilentServerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read
		}
	}()
	opts := testOptions()
	opts.HeaderTimeout, opts.FetchTimeout = 50*time.Millisecond, 5*time.Second
	url := "http://" + ln.Addr().String() + "/feed"
	ds, _ := start(t, opts, url)
	checkErr(t, ds, url, "no response headers within 50ms", ErrTimeout)
}

func TestFeed_HugeFeedRefusedWithBoundedMemory(t *testing.T) {
	const huge = 50 << 20 // a 50 MB document
	chunk := []byte(strings.Repeat("<item><title>x</title></item>", 1024))
	tests := []struct {
		name     string
		announce bool
		want     string
	}{
		{name: "streamed", want: fmt.Sprintf("more than %d bytes", DefaultMaxBodyBytes)},
		{name: "announced", announce: true, want: fmt.Sprintf("%d bytes announced", huge)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var written atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tt.announce {
					w.Header().Set("Content-Length", fmt.Sprint(huge))
				}
				fmt.Fprint(w, `<rss version="2.0"><channel><title>t</title>`)
				for written.Load() < huge {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			t.Cleanup(srv.Close)
			opts := testOptions()
			opts.MaxBodyBytes = 0     // the default cap
			opts.Interval = time.Hour // one fetch: the retry is far away
			opts.FetchTimeout = waitDeadline
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			ds, rec := start(t, opts, srv.URL+"/big.xml")
			checkErr(t, ds, srv.URL+"/big.xml", tt.want, ErrTooLarge)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			// Reading the whole document would allocate well over 50 MB;
			// the cap keeps it to a small multiple of 10 MiB.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*DefaultMaxBodyBytes {
				t.Fatalf("allocated %d MiB refusing a 50 MB feed, want under %d MiB", alloc>>20, 4*DefaultMaxBodyBytes>>20)
			}
			if rec.batchCount() != 0 {
				t.Fatal("an oversize feed emitted items")
			}
			srv.CloseClientConnections()
			if w := written.Load(); w >= huge {
				t.Fatalf("the server sent all %d bytes: the client did not stop reading", w)
			}
		})
	}
}

func TestFeed_RedirectToMetadataRefusedAtConnect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	ds, _ := start(t, testOptions(), srv.URL+"/feed") // loopback allowed, metadata not
	err := checkErr(t, ds, srv.URL+"/feed", "169.254.169.254", netguard.ErrForbiddenTarget)
	if !strings.Contains(err.Error(), "link-local") {
		t.Fatalf("Err() = %q, want the refusal's reason", err)
	}
}

func TestFeed_ClientTimeoutsAreTimeouts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	opts := testOptions()
	// The client's own header limit runs out first.
	opts.Client = netguard.NewClient(netguard.Options{Allow: loopback, ResponseHeaderTimeout: 30 * time.Millisecond})
	opts.HeaderTimeout, opts.FetchTimeout = 5*time.Second, 5*time.Second
	ds, _ := start(t, opts, srv.URL)
	checkErr(t, ds, srv.URL, "timeout awaiting response headers", ErrTimeout)
}

func TestCacheLifetime(t *testing.T) {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		ok     bool
		want   time.Duration
	}{
		{name: "nothing", header: http.Header{}},
		{name: "max-age", header: http.Header{"Cache-Control": {"public, max-age=300"}}, ok: true, want: 5 * time.Minute},
		{name: "max-age less age", header: http.Header{"Cache-Control": {"max-age=300"}, "Age": {"100"}}, ok: true, want: 200 * time.Second},
		{name: "age past max-age", header: http.Header{"Cache-Control": {"max-age=300"}, "Age": {"900"}}, ok: true},
		{name: "no-cache", header: http.Header{"Cache-Control": {"no-cache"}}, ok: true},
		{name: "no-store wins", header: http.Header{"Cache-Control": {"max-age=60", "no-store"}}, ok: true},
		{name: "quoted", header: http.Header{"Cache-Control": {`max-age="60"`}}, ok: true, want: time.Minute},
		{name: "unrelated directives", header: http.Header{"Cache-Control": {"private"}}},
		{name: "expires", header: http.Header{"Expires": {now.Add(time.Hour).Format(http.TimeFormat)}, "Date": {now.Format(http.TimeFormat)}}, ok: true, want: time.Hour},
		{name: "expires without date", header: http.Header{"Expires": {now.Add(time.Minute).Format(http.TimeFormat)}}, ok: true, want: time.Minute},
		{name: "max-age beats expires", header: http.Header{"Cache-Control": {"max-age=10"}, "Expires": {now.Add(time.Hour).Format(http.TimeFormat)}}, ok: true, want: 10 * time.Second},
		{name: "invalid expires", header: http.Header{"Expires": {"0"}}, ok: true},
		{name: "absurd max-age", header: http.Header{"Cache-Control": {"max-age=99999999999"}}, ok: true, want: maxCacheHint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, got := cacheLifetime(tt.header, now)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("cacheLifetime(%v) = %v, %v; want %v, %v", tt.header, ok, got, tt.ok, tt.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{" 5 ", 5 * time.Second},
		{"-3", 0},
		{now.Add(time.Minute).Format(http.TimeFormat), time.Minute},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
		{"99999999999999", maxCacheHint},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want || got < 0 {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// A fetch waiting for its host's turn gives up when the source stops.
func TestFeed_StopsWhileWaitingForItsHost(t *testing.T) {
	l := newHostLimiter(time.Hour)
	release, err := l.acquire(context.Background(), "h")
	if err != nil {
		t.Fatal(err)
	}
	release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.acquire(ctx, "h"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire during the host delay = %v, want the context's error", err)
	}
	if _, err := l.acquire(context.Background(), "other"); err != nil {
		t.Fatalf("another host waits: %v", err)
	}
}
