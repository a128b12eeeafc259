package rss

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

func TestFeed_ConditionalGet(t *testing.T) {
	fs := newFeedServer(t, atomDoc)
	lastMod := "Mon, 01 Jan 2024 00:00:00 GMT"
	fs.set(func(fs *feedServer) { fs.etag, fs.lastMod = `"v1"`, lastMod })
	ds, rec := start(t, testOptions(), fs.URL)
	testkit.WaitFor(t, waitDeadline, "first batch", func() bool { return rec.batchCount() == 1 })
	testkit.WaitFor(t, waitDeadline, "three 304 answers", func() bool { _, nm := fs.count(); return nm >= 3 })
	if err := ds.Err(); err != nil {
		t.Fatalf("Err() after 304s = %v, want nil", err)
	}
	if c := rec.batchCount(); c != 1 {
		t.Fatalf("%d batches, want 1", c)
	}
	fs.mu.Lock()
	cond := fs.conditional[0]
	fs.mu.Unlock()
	if cond != `"v1"|`+lastMod {
		t.Fatalf("conditional headers %q, want If-None-Match and If-Modified-Since", cond)
	}

	// A changed feed gets a new ETag; its new item comes through.
	fs.set(func(fs *feedServer) {
		fs.etag = `"v2"`
		fs.body = strings.Replace(atomDoc, "<entry>", `<entry><title>Third</title><id>urn:entry:3</id><updated>2024-02-03T00:00:00Z</updated></entry><entry>`, 1)
	})
	testkit.WaitFor(t, waitDeadline, "second batch", func() bool { return rec.batchCount() == 2 })
	if got := rec.all(); got[len(got)-1].ID != "urn:entry:3" {
		t.Fatalf("new item not emitted: %+v", got)
	}
}

func TestFeed_ErrorsAreReportedAndPollingContinues(t *testing.T) {
	big := `<rss version="2.0"><channel><title>t</title><description>` + strings.Repeat("x", 4096) + `</description></channel></rss>`
	tests := []struct {
		name    string
		setup   func(fs *feedServer)
		opts    func(o *Options)
		want    string
		wantIs  error
		maxTime time.Duration
		// unreachable is how the error starts as the crawler's degraded
		// reason; "" when the feed was reached.
		unreachable string
	}{
		{name: "malformed", setup: func(fs *feedServer) { fs.body = "this is not a feed" }, want: "rss: unable to parse "},
		{name: "truncated", setup: func(fs *feedServer) { fs.body = rssDoc[:len(rssDoc)/2] }, want: "rss: unable to parse "},
		{name: "oversize", setup: func(fs *feedServer) { fs.body = big }, opts: func(o *Options) { o.MaxBodyBytes = 1024 }, want: "rss: unable to fetch ", wantIs: ErrTooLarge},
		{name: "server error", setup: func(fs *feedServer) { fs.status = http.StatusInternalServerError }, want: "500", wantIs: ErrStatus, unreachable: "HTTP 500 Internal Server Error"},
		{name: "gone", setup: func(fs *feedServer) { fs.status = http.StatusNotFound }, want: "404", wantIs: ErrStatus, unreachable: "HTTP 404 Not Found"},
		{name: "never answers", setup: func(fs *feedServer) { fs.hang = true }, opts: func(o *Options) { o.FetchTimeout = 50 * time.Millisecond }, want: "no complete answer within 50ms", wantIs: ErrTimeout, unreachable: "timed out"},
		{name: "private target refused by default", opts: func(o *Options) { o.Client = nil }, want: "rss: unable to fetch ", wantIs: netguard.ErrForbiddenTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFeedServer(t, rssDoc)
			if tt.setup != nil {
				fs.set(tt.setup)
			}
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			ds, rec := start(t, opts, fs.URL+"/feed.xml")
			testkit.WaitFor(t, waitDeadline, "an error", func() bool { return ds.Err() != nil })
			err := ds.Err()
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), fs.URL+"/feed.xml") {
				t.Fatalf("Err() = %q, want it to contain %q and the feed URL", err, tt.want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Fatalf("Err() = %v, want errors.Is %v", err, tt.wantIs)
			}
			if got := source.Unreachable(err); got != tt.unreachable {
				t.Fatalf("Unreachable(%q) = %q, want %q", err, got, tt.unreachable)
			}
			if rec.batchCount() != 0 {
				t.Fatalf("emitted %d batches from a failing feed", rec.batchCount())
			}
			if tt.name == "private target refused by default" {
				if n, _ := fs.count(); n != 0 {
					t.Fatalf("refused target saw %d requests", n)
				}
				return
			}
			// It keeps polling (with backoff) and recovers once the feed
			// is fixed.
			n, _ := fs.count()
			testkit.WaitFor(t, waitDeadline, "more attempts", func() bool { r, _ := fs.count(); return r >= n+2 })
			fs.set(func(fs *feedServer) { fs.body, fs.status, fs.hang = rssDoc, http.StatusOK, false })
			testkit.WaitFor(t, waitDeadline, "recovery", func() bool { return ds.Err() == nil && rec.batchCount() == 1 })
		})
	}
}

func TestFeed_OversizeAnnouncedByContentLength(t *testing.T) {
	fs := newFeedServer(t, rssDoc)
	fs.set(func(fs *feedServer) { fs.header = http.Header{"Content-Length": {"999999"}} })
	opts := testOptions()
	opts.MaxBodyBytes = 1000
	ds, _ := start(t, opts, fs.URL)
	testkit.WaitFor(t, waitDeadline, "an error", func() bool { return ds.Err() != nil })
	if err := ds.Err(); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "999999 bytes announced") {
		t.Fatalf("Err() = %v, want ErrTooLarge for the announced length", err)
	}
}

func TestFeed_FailedHandOverIsRetried(t *testing.T) {
	fs := newFeedServer(t, rssDoc)
	fs.set(func(fs *feedServer) { fs.etag = `"v1"` })
	// The recorder fails from the first hand-over on.
	rec := &recorder{fail: errors.New("store gone")}
	ds := startWith(t, testOptions(), fs.URL, rec)
	testkit.WaitFor(t, waitDeadline, "hand-over error", func() bool { return ds.Err() != nil })
	if err := ds.Err(); !strings.Contains(err.Error(), "unable to hand over") {
		t.Fatalf("Err() = %v", err)
	}
	rec.mu.Lock()
	rec.fail = nil
	rec.mu.Unlock()
	// The validators were not kept, so the next fetch is a full one and
	// the items come through.
	testkit.WaitFor(t, waitDeadline, "items after recovery", func() bool { return rec.batchCount() == 1 && ds.Err() == nil })
	if got := len(rec.all()); got != 3 {
		t.Fatalf("emitted %d items, want 3", got)
	}
}

func TestFeed_Backoff(t *testing.T) {
	f := &feed{opts: Options{Interval: 100 * time.Millisecond, MaxBackoff: time.Second}.withDefaults()}
	tests := []struct {
		failures   int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 0, 200 * time.Millisecond, 400 * time.Millisecond},
		{10, 0, 500 * time.Millisecond, time.Second},
		{100, 0, 500 * time.Millisecond, time.Second},
		{1, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond},
		{1, time.Hour, time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.failures, "/", tt.retryAfter), func(t *testing.T) {
			for range 50 {
				if d := f.backoff(tt.failures, tt.retryAfter); d < tt.lo || d > tt.hi {
					t.Fatalf("backoff(%d, %v) = %v, want in [%v, %v]", tt.failures, tt.retryAfter, d, tt.lo, tt.hi)
				}
			}
		})
	}
}

func TestFeed_RetryAfterHonoured(t *testing.T) {
	fs := newFeedServer(t, rssDoc)
	fs.set(func(fs *feedServer) {
		fs.status = http.StatusTooManyRequests
		fs.header = http.Header{"Retry-After": {"1"}}
	})
	opts := testOptions()
	opts.MaxBackoff = 10 * time.Second
	ds, _ := start(t, opts, fs.URL)
	testkit.WaitFor(t, waitDeadline, "an error", func() bool { return ds.Err() != nil })
	if !errors.Is(ds.Err(), ErrStatus) {
		t.Fatalf("Err() = %v", ds.Err())
	}
	// Polls would come every ~20ms without Retry-After; with it the next
	// one waits a second.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n, _ := fs.count(); n > 1 {
			t.Fatalf("fetched %d times within 500ms despite Retry-After: 1", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
