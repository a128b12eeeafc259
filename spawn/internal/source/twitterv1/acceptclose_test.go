package twitterv1

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/twitterserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// A stream Twitter answers with 200 and ends before sending a byte (not
// even a keep-alive) is a network error like any other: the waits grow
// linearly, instead of starting again from the first step.
func TestTracker_StreamEndedBeforeAnyByteBacksOff(t *testing.T) {
	srv := twitterserver.New(twitterserver.Options{Credentials: twitterserver.Credentials(testCreds), KeepAlive: testKeepAlive})
	h := srv.Handler()
	var mu sync.Mutex
	var at []time.Time
	base := fakehttp.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != filterPath {
			h.ServeHTTP(w, r) // search (the backfill) works
			return
		}
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
	}), srv.Close)
	start(t, testOptions(base), spec(1, "golang"))
	conns := func() []time.Time { mu.Lock(); defer mu.Unlock(); return append([]time.Time(nil), at...) }
	testkit.WaitFor(t, waitDeadline, "six attempts", func() bool { return len(conns()) >= 6 })
	got := conns()
	planned := []time.Duration{testNetworkStep, 2 * testNetworkStep, 3 * testNetworkStep, testNetworkMax, testNetworkMax}
	for i, want := range planned {
		if g := got[i+1].Sub(got[i]); g < want {
			t.Errorf("retry %d came after %v, want %v", i+1, g.Round(time.Millisecond), want)
		}
	}
}
