package rss

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

func TestFeed_HealthDegradesFailsAndRecovers(t *testing.T) {
	fs := newFeedServer(t, rssDoc)
	fs.set(func(fs *feedServer) { fs.status = http.StatusInternalServerError })
	ds, rec := start(t, testOptions(), fs.URL)

	testkit.WaitFor(t, waitDeadline, "degraded", func() bool { return ds.Health().State == Degraded })
	err := ds.Err()
	var fe *FeedError
	if !errors.As(err, &fe) || !errors.Is(err, ErrDegraded) || errors.Is(err, ErrFailing) || !errors.Is(err, ErrStatus) {
		t.Fatalf("Err() while degraded = %v", err)
	}
	if !strings.Contains(err.Error(), "feed degraded: 1 failed fetch in a row, next attempt at ") {
		t.Fatalf("Err() = %q, want the state, the failures and the next attempt", err)
	}

	testkit.WaitFor(t, waitDeadline, "failing", func() bool { return ds.Health().State == Failing })
	h := ds.Health()
	if h.Failures < failingAfter || h.LastError == nil || !h.NextAttempt.After(time.Now().Add(-time.Second)) {
		t.Fatalf("failing health = %+v", h)
	}
	if err := ds.Err(); !errors.Is(err, ErrFailing) || !strings.Contains(err.Error(), "feed failing") {
		t.Fatalf("Err() while failing = %v", err)
	}

	fs.set(func(fs *feedServer) { fs.status = http.StatusOK })
	testkit.WaitFor(t, waitDeadline, "recovery", func() bool { return ds.Health().State == Healthy })
	if err := ds.Err(); err != nil {
		t.Fatalf("Err() after recovery = %v", err)
	}
	if h := ds.Health(); h.Failures != 0 || h.LastSuccess.IsZero() || h.LastError != nil {
		t.Fatalf("health after recovery = %+v", h)
	}
	testkit.WaitFor(t, waitDeadline, "items", func() bool { return rec.batchCount() == 1 })
}

func TestAdaptiveInterval(t *testing.T) {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	every := func(n int, gap, since time.Duration) []source.Item {
		items := make([]source.Item, n)
		for i := range items { // oldest first, the newest published since ago
			items[i].PublishedAt = now.Add(-since - time.Duration(n-1-i)*gap)
		}
		return items
	}
	base := 30 * time.Second
	tests := []struct {
		name  string
		items []source.Item
		want  time.Duration
	}{
		{name: "no items", want: base},
		{name: "one item", items: every(1, 0, time.Hour), want: base},
		// Ten items a minute apart, the newest just now: ten gaps over
		// nine minutes, half of it.
		{name: "busy", items: every(10, time.Minute, 0), want: 27 * time.Second},
		// The same feed silent for an hour since.
		{name: "gone quiet", items: every(10, time.Minute, time.Hour), want: 207 * time.Second},
		// Only the newest ten count.
		{name: "long feed", items: append(every(5, 24*time.Hour, 10*time.Minute+24*time.Hour), every(10, time.Minute, 0)...), want: 27 * time.Second},
		{name: "all at once", items: every(3, 0, 0), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := adaptiveInterval(tt.items, now, base); got != tt.want {
				t.Fatalf("adaptiveInterval = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextIntervalBoundsAndPublisherHints(t *testing.T) {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	busy := make([]source.Item, 10) // one a second: adaptive 0.5 s
	for i := range busy {
		busy[i].PublishedAt = now.Add(-time.Duration(9-i) * time.Second)
	}
	opts := Options{Interval: 10 * time.Second, MinInterval: 2 * time.Second, MaxInterval: time.Minute}.withDefaults()
	tests := []struct {
		name        string
		items       []source.Item
		maxAge, ttl time.Duration
		want        time.Duration
	}{
		{name: "base until the rate is known", want: 10 * time.Second},
		{name: "busy feed at the floor", items: busy, want: 2 * time.Second},
		{name: "max-age lengthens", items: busy, maxAge: 30 * time.Second, want: 30 * time.Second},
		{name: "ttl lengthens", items: busy, ttl: 40 * time.Second, want: 40 * time.Second},
		{name: "the longer hint wins", items: busy, maxAge: 20 * time.Second, ttl: 40 * time.Second, want: 40 * time.Second},
		{name: "hints within the ceiling", items: busy, ttl: time.Hour, want: time.Minute},
		{name: "a short hint does not speed up", maxAge: time.Second, want: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &feed{opts: opts, current: tt.items, maxAge: tt.maxAge, ttl: tt.ttl}
			for range 20 {
				got := f.nextInterval(now)
				if got < tt.want || got > tt.want+time.Duration(float64(tt.want)*intervalJitter) {
					t.Fatalf("nextInterval = %v, want %v plus at most %.0f%% jitter", got, tt.want, intervalJitter*100)
				}
			}
		})
	}
}

func TestOptions_IntervalDefaultsFollowTheBase(t *testing.T) {
	tests := []struct {
		in             Options
		min, max, host time.Duration
	}{
		{in: Options{}, min: 15 * time.Second, max: 4 * time.Minute, host: time.Second},
		{in: Options{Interval: 50 * time.Millisecond}, min: 25 * time.Millisecond, max: 400 * time.Millisecond, host: 25 * time.Millisecond},
		{in: Options{Interval: time.Minute, MinInterval: 10 * time.Second, MaxInterval: time.Hour, HostDelay: 3 * time.Second}, min: 10 * time.Second, max: time.Hour, host: 3 * time.Second},
		{in: Options{MinInterval: time.Minute, MaxInterval: time.Second, HostDelay: -1}, min: time.Minute, max: time.Minute, host: 0},
	}
	for i, tt := range tests {
		o := tt.in.withDefaults()
		if o.MinInterval != tt.min || o.MaxInterval != tt.max || o.HostDelay != tt.host {
			t.Errorf("%d: bounds %v..%v, host delay %v; want %v..%v, %v", i, o.MinInterval, o.MaxInterval, o.HostDelay, tt.min, tt.max, tt.host)
		}
	}
}

// requestLog records when a test server received each request.
type requestLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (l *requestLog) add() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.times = append(l.times, time.Now())
}

func (l *requestLog) snapshot() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.times)
}

func (l *requestLog) minGap() time.Duration {
	ts := l.snapshot()
	gap := time.Duration(1<<63 - 1)
	for i := 1; i < len(ts); i++ {
		gap = min(gap, ts[i].Sub(ts[i-1]))
	}
	return gap
}

// busyServer serves a feed that has a new item at every request, so that
// on its own it would be fetched at MinInterval; header and ttl are added
// to every answer.
func busyServer(t *testing.T, header http.Header, ttl string) (*httptest.Server, *requestLog) {
	t.Helper()
	log := &requestLog{}
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		log.add()
		mu.Lock()
		n++
		count := n
		mu.Unlock()
		for k, v := range header {
			w.Header()[k] = v
		}
		fmt.Fprintf(w, `<rss version="2.0"><channel><title>t</title>%s`, ttl)
		for i := count; i > 0 && i > count-10; i-- {
			fmt.Fprintf(w, `<item><title>item %d</title><guid>g%d</guid></item>`, i, i)
		}
		fmt.Fprint(w, `</channel></rss>`)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

func TestFeed_AdaptsToPublishingRateWithinBounds(t *testing.T) {
	opts := testOptions()
	opts.MinInterval, opts.MaxInterval = 10*time.Millisecond, 150*time.Millisecond

	// A feed whose newest item is days old is fetched at MaxInterval.
	quiet := newFeedServer(t, rssDoc)
	qlog := &quiet.log
	qds, _ := start(t, opts, quiet.URL)
	testkit.WaitFor(t, waitDeadline, "four fetches of the quiet feed", func() bool { return len(qlog.snapshot()) >= 4 })
	if g := qlog.minGap(); g < opts.MaxInterval {
		t.Fatalf("quiet feed fetched %v apart, want at least MaxInterval %v", g, opts.MaxInterval)
	}
	if h := qds.Health(); h.Interval < opts.MaxInterval {
		t.Fatalf("quiet feed interval %v, want MaxInterval", h.Interval)
	}

	// A feed with a new item at every fetch speeds up towards MinInterval.
	srv, _ := busyServer(t, nil, "")
	bds, _ := start(t, opts, srv.URL)
	testkit.WaitFor(t, waitDeadline, "the busy feed to speed up", func() bool {
		h := bds.Health()
		return h.State == Healthy && h.Interval < opts.MaxInterval/2
	})
}

func TestFeed_NeverFasterThanThePublisherAsks(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		ttl    string
		max    time.Duration
		want   time.Duration
	}{
		// <ttl> is in minutes: a minute, cut to the ceiling.
		{name: "rss ttl", ttl: "<ttl>1</ttl>", max: 300 * time.Millisecond, want: 300 * time.Millisecond},
		{name: "cache-control max-age", header: http.Header{"Cache-Control": {"max-age=1"}}, max: 5 * time.Second, want: time.Second},
		{name: "long max-age cut to the ceiling", header: http.Header{"Cache-Control": {"max-age=600"}}, max: 200 * time.Millisecond, want: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := busyServer(t, tt.header, tt.ttl)
			opts := testOptions()
			opts.MinInterval, opts.MaxInterval = 10*time.Millisecond, tt.max
			start(t, opts, srv.URL)
			testkit.WaitFor(t, waitDeadline, "three fetches", func() bool { return len(log.snapshot()) >= 3 })
			if g := log.minGap(); g < tt.want {
				t.Fatalf("fetched %v apart, the publisher asked for %v", g, tt.want)
			}
		})
	}
}

// Two pollers of one feed on different nodes see the same ids and
// publication times, which is what lets a moved subscriber's cursor skip
// what it already stored.
func TestFeed_IdsAndDatesAgreeAcrossNodes(t *testing.T) {
	fs := newFeedServer(t, rssDoc)
	_, a := start(t, testOptions(), fs.URL)
	_, b := start(t, testOptions(), fs.URL)
	testkit.WaitFor(t, waitDeadline, "both nodes emitted", func() bool { return a.batchCount() == 1 && b.batchCount() == 1 })
	ia, ib := a.all(), b.all()
	for i := range ia {
		if ia[i].ID != ib[i].ID || !ia[i].PublishedAt.Equal(ib[i].PublishedAt) {
			t.Fatalf("item %d: %s at %v on one node, %s at %v on the other", i, ia[i].ID, ia[i].PublishedAt, ib[i].ID, ib[i].PublishedAt)
		}
	}
	// A cursor at the second item keeps exactly the newer ones.
	cursor := api.Cursor{PublishedAt: ia[1].PublishedAt}
	var after []string
	for _, it := range ib {
		if it.PublishedAt.After(cursor.PublishedAt) {
			after = append(after, it.ID)
		}
	}
	if len(after) != len(ia)-2 {
		t.Fatalf("items after the cursor: %v", after)
	}
}
