package stream

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// A service that accepts the WebSocket and closes it before sending
// anything (not even a tick) is failing: the waits between attempts grow
// as after any failure, instead of starting again from BackoffMin.
func TestMulti_ConnectionClosedBeforeAnyMessageBacksOff(t *testing.T) {
	srv := streamserver.New(streamserver.Options{Username: testUser, APIKey: testKey, TickInterval: testTick})
	h := srv.Handler()
	var mu sync.Mutex
	var at []time.Time
	base := fakehttp.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != multiPath {
			h.ServeHTTP(w, r) // the compile endpoint works
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		_ = c.Close(websocket.StatusNormalClosure, "")
	}), srv.Close)
	opts := testOptions(base)
	opts.BackoffMax = time.Minute
	m, _ := start(t, opts, spec(1, "golang"))
	const n = 6
	conns := func() []time.Time { mu.Lock(); defer mu.Unlock(); return append([]time.Time(nil), at...) }
	testkit.WaitFor(t, waitDeadline, "connections", func() bool { return len(conns()) >= n })
	// Each wait is at least half of BackoffMin doubled per failure in a row.
	floor := time.Duration(0)
	for i := range n - 1 {
		floor += opts.BackoffMin << i / 2
	}
	got := conns()
	if took := got[n-1].Sub(got[0]); took < floor {
		t.Errorf("%d connections in %v, want at least %v of back-off between them", n, took, floor)
	}
	if !m.sawErr(ErrConnectionLost) {
		t.Errorf("Err never said the connection was lost (now %v)", m.Err())
	}
}
