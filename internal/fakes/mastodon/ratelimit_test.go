package mastodon

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// TestServer_RateLimitHeadersAndTooManyRequests calls the REST API past
// the token's limit: every answer says the limit, what is left and when
// the window ends (the same instant for every call of a window); the
// call past the limit is a 429 with Mastodon's error; the next window
// starts the count again.
func TestServer_RateLimitHeadersAndTooManyRequests(t *testing.T) {
	const period = 200 * 365 * 24 * time.Hour // one window for the whole test
	s := Start(t, Options{Token: testToken, RateLimit: 3, RatePeriod: period})
	st := s.Remember(Status{Acct: "alice", Content: "<p>root</p>"})
	var reset string
	for n, want := range []struct {
		code      int
		remaining string
	}{{200, "2"}, {200, "1"}, {200, "0"}, {429, "0"}, {429, "0"}} {
		var body map[string]any
		code, h := rest(t, s, http.MethodGet, "/api/v1/statuses/"+st.ID+"/context", &body)
		if code != want.code || h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Remaining") != want.remaining {
			t.Fatalf("call %d: %d, limit %q remaining %q; want %d, 3, %s", n+1, code, h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), want.code, want.remaining)
		}
		if code == http.StatusTooManyRequests && body["error"] != "Too many requests" {
			t.Fatalf("429 body %v", body)
		}
		at, err := time.Parse(time.RFC3339Nano, h.Get("X-RateLimit-Reset"))
		if err != nil || !at.After(time.Now()) || (reset != "" && h.Get("X-RateLimit-Reset") != reset) {
			t.Fatalf("call %d: reset %q (%v), want one instant in the future", n+1, h.Get("X-RateLimit-Reset"), err)
		}
		reset = h.Get("X-RateLimit-Reset")
	}
	if s.Throttled() != 2 {
		t.Fatalf("throttled %d calls, want 2", s.Throttled())
	}

	short := Start(t, Options{Token: testToken, RateLimit: 1, RatePeriod: 50 * time.Millisecond})
	testkit.WaitFor(t, waitTimeout, "a refused call, then a new window", func() bool {
		code, _ := rest(t, short, http.MethodGet, "/api/v1/instance", nil)
		return code == http.StatusOK && short.Throttled() > 0
	})
	_, h := rest(t, short, http.MethodGet, "/api/v1/instance", nil)
	if _, err := strconv.Atoi(h.Get("X-RateLimit-Remaining")); err != nil {
		t.Fatalf("remaining %q", h.Get("X-RateLimit-Remaining"))
	}
}
