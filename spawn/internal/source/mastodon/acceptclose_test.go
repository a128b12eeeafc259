package mastodon

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// A streaming server that accepts the WebSocket and closes it before
// sending anything is failing: the waits between attempts grow as after
// any failure, instead of starting again from BackoffMin.
func TestSource_ConnectionClosedBeforeAnyMessageBacksOff(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	streaming := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		_ = c.Close(websocket.StatusNormalClosure, "")
	}))
	t.Cleanup(streaming.Close)
	front := startServer(t, fake.Options{StreamingURL: "ws" + strings.TrimPrefix(streaming.URL, "http")})
	opts := testOptions(t, front.URL())
	opts.BackoffMax = time.Minute
	src, _ := start(t, opts, spec(1, "golang"))
	const n = 6
	conns := func() []time.Time { mu.Lock(); defer mu.Unlock(); return append([]time.Time(nil), at...) }
	testkit.WaitFor(t, waitDeadline, "connections", func() bool { return len(conns()) >= n })
	floor := time.Duration(0)
	for i := range n - 1 {
		floor += opts.BackoffMin << i / 2
	}
	got := conns()
	if took := got[n-1].Sub(got[0]); took < floor {
		t.Errorf("%d connections in %v, want at least %v of back-off between them", n, took, floor)
	}
	if !src.errs.Saw(ErrConnectionLost) {
		t.Errorf("Err never said the connection was lost (now %v)", src.Err())
	}
}
