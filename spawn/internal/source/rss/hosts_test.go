package rss

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// visit is one request as the server saw it.
type visit struct {
	path       string
	start, end time.Time
}

func TestKind_PoliteToEachHost(t *testing.T) {
	const (
		hostDelay = 60 * time.Millisecond
		work      = 15 * time.Millisecond // how long the server takes to answer
	)
	var mu sync.Mutex
	var visits []visit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visit{path: r.URL.Path, start: time.Now()}
		time.Sleep(work) // a slow publisher
		fmt.Fprintf(w, `<rss version="2.0"><channel><title>%s</title><item><guid>%s</guid><title>x</title></item></channel></rss>`, r.URL.Path, r.URL.Path)
		v.end = time.Now()
		mu.Lock()
		visits = append(visits, v)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	opts := testOptions()
	opts.HostDelay = hostDelay
	opts.MinInterval, opts.MaxInterval = time.Millisecond, time.Millisecond // each feed alone would poll non-stop
	k := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, path := range []string{"/a.xml", "/b.xml"} {
		keys, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{Query: []string{srv.URL + path}}))
		if err != nil {
			t.Fatal(err)
		}
		ds, err := k.New(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds.Run(ctx, (&recorder{}).emit)
		}()
	}
	seen := func() []visit {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(visits)
	}
	testkit.WaitFor(t, waitDeadline, "eight requests", func() bool { return len(seen()) >= 8 })
	cancel()
	wg.Wait()

	vs := seen()
	slices.SortFunc(vs, func(a, b visit) int { return a.start.Compare(b.start) })
	paths := map[string]int{}
	for i, v := range vs {
		paths[v.path]++
		if i == 0 {
			continue
		}
		prev := vs[i-1]
		if v.start.Before(prev.end) {
			t.Fatalf("requests %d (%s) and %d (%s) overlapped at the server", i-1, prev.path, i, v.path)
		}
		if gap := v.start.Sub(prev.end); gap < hostDelay {
			t.Fatalf("request %d (%s) started %v after the previous one ended, want at least %v", i, v.path, gap, hostDelay)
		}
	}
	if paths["/a.xml"] < 2 || paths["/b.xml"] < 2 {
		t.Fatalf("requests per feed %v: both feeds must get turns", paths)
	}
}

func TestHostLimiter_OtherHostsDoNotWait(t *testing.T) {
	l := newHostLimiter(time.Hour)
	release, err := l.acquire(context.Background(), "busy.example")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	done := make(chan error, 1)
	go func() {
		r, err := l.acquire(context.Background(), "other.example")
		if err == nil {
			r()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitDeadline):
		t.Fatal("a request to another host waited for a busy one")
	}
}

func TestHostLimiter_ForgetsIdleHosts(t *testing.T) {
	l := newHostLimiter(0)
	for i := range 10 * hostSweepMin {
		release, err := l.acquire(context.Background(), fmt.Sprintf("h%d.example", i))
		if err != nil {
			t.Fatal(err)
		}
		release()
		release() // a second release is harmless
	}
	if n := l.size(); n > hostSweepMin {
		t.Fatalf("limiter remembers %d hosts, want at most %d", n, hostSweepMin)
	}
}
