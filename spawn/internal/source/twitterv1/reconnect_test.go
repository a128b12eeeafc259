package twitterv1

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/twitterserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// gaps returns the time between consecutive connection attempts.
func gaps(conns []twitterserver.Connection) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(conns); i++ {
		out = append(out, conns[i].At.Sub(conns[i-1].At))
	}
	return out
}

func TestTracker_BacksOffAsTwitterAsks(t *testing.T) {
	cases := []struct {
		name   string
		status int
		fails  int
		waits  []time.Duration // planned wait before each retry
		want   error
	}{
		{"503 exponential from the HTTP minimum", 503, 4, []time.Duration{testHTTPMin, 2 * testHTTPMin, 4 * testHTTPMin, 8 * testHTTPMin}, ErrStatus},
		{"HTTP back-off is capped", 500, 5, []time.Duration{testHTTPMin, 2 * testHTTPMin, 4 * testHTTPMin, testHTTPMax, testHTTPMax}, ErrStatus},
		{"420 exponential from the rate-limit minimum", 420, 3, []time.Duration{testRateMin, 2 * testRateMin, testRateMax}, ErrRateLimited},
		{"429 like 420", 429, 2, []time.Duration{testRateMin, 2 * testRateMin}, ErrRateLimited},
		{"401 says the credentials are wrong", 401, 2, []time.Duration{testHTTPMin, 2 * testHTTPMin}, ErrUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := newServer(t)
			srv.FailStreams(tc.status, tc.fails)
			tr, rec := start(t, testOptions(base), spec(1, "kept"))
			testkit.WaitFor(t, waitDeadline, "the failure in Err", func() bool { return tr.sawErr(tc.want) })
			testkit.WaitFor(t, waitDeadline, "a stream after the failures", func() bool { return srv.Open() == 1 })
			conns := srv.Connections()
			if len(conns) != tc.fails+1 {
				t.Fatalf("%d attempts, want %d", len(conns), tc.fails+1)
			}
			for i, g := range gaps(conns) {
				if g < tc.waits[i] || g > tc.waits[i]+backoffTolerance {
					t.Errorf("retry %d came after %v, want %v", i+1, g.Round(time.Millisecond), tc.waits[i])
				}
			}
			testkit.WaitFor(t, waitDeadline, "Err to clear once connected", func() bool { return tr.Err() == nil })
			// The back-off resets once connected: a new failure waits the
			// minimum again.
			kept := srv.Publish(twitterserver.Tweet{Text: "kept after recovery"})
			testkit.WaitFor(t, waitDeadline, "a tweet after recovery", func() bool { return rec.Has(tweetID(kept)) })
		})
	}
}

func TestTracker_CutConnectionReconnectsAfterNetworkBackoff(t *testing.T) {
	srv, base := newServer(t)
	tr, rec := start(t, testOptions(base), spec(1, "cut"))
	testkit.WaitFor(t, waitDeadline, "stream", func() bool { return srv.Open() == 1 })
	c1 := srv.Publish(twitterserver.Tweet{Text: "cut one"})
	testkit.WaitFor(t, waitDeadline, "c1", func() bool { return rec.Has(tweetID(c1)) })
	cutAt := time.Now()
	srv.Cut()
	testkit.WaitFor(t, waitDeadline, "a new stream", func() bool { return srv.Streaming() == 2 && srv.Open() == 1 })
	if !tr.sawErr(ErrDisconnected) {
		t.Errorf("Err never reported the cut: %v", tr.Err())
	}
	conns := srv.Connections()
	if g := conns[1].At.Sub(cutAt); g < testNetworkStep {
		t.Errorf("reconnected %v after a cut, want at least %v", g, testNetworkStep)
	}
	testkit.WaitFor(t, waitDeadline, "the gap's backfill", func() bool { return tr.stats.backfills.Load() == 1 })
	if s := srv.Searches(); len(s) != 1 || s[0].SinceID != c1.ID {
		t.Errorf("searches %+v, want one since %d", s, c1.ID)
	}
}

func TestTracker_NetworkErrorsBackOffLinearly(t *testing.T) {
	// A listener that accepts and drops every connection at once: the
	// client sees the connection end before any HTTP answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var accepted []time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, time.Now())
			mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	tr, _ := start(t, testOptions("http://"+ln.Addr().String()), spec(1, "x"))
	testkit.WaitFor(t, waitDeadline, "six attempts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= 6
	})
	if err := tr.Err(); err == nil || !strings.Contains(err.Error(), "stream") {
		t.Errorf("Err() = %v, want a stream connection error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	planned := []time.Duration{testNetworkStep, 2 * testNetworkStep, 3 * testNetworkStep, testNetworkMax, testNetworkMax}
	for i, want := range planned {
		g := accepted[i+1].Sub(accepted[i])
		if g < want || g > want+backoffTolerance {
			t.Errorf("retry %d came after %v, want %v", i+1, g.Round(time.Millisecond), want)
		}
	}
}

func TestTracker_StallReconnectsAndBackfills(t *testing.T) {
	srv, base := newServer(t)
	tr, rec := start(t, testOptions(base), spec(1, "quiet"))
	testkit.WaitFor(t, waitDeadline, "stream", func() bool { return srv.Open() == 1 })
	q1 := srv.Publish(twitterserver.Tweet{Text: "quiet one"})
	testkit.WaitFor(t, waitDeadline, "q1", func() bool { return rec.Has(tweetID(q1)) })

	srv.Stall(true)
	q2 := srv.Publish(twitterserver.Tweet{Text: "quiet two, sent while the stream is silent"})
	testkit.WaitFor(t, waitDeadline, "a stall to be detected", func() bool { return tr.stats.stalls.Load() >= 1 })
	srv.Stall(false)
	testkit.WaitFor(t, waitDeadline, "q2 through the backfill", func() bool { return rec.Has(tweetID(q2)) })
	if tr.stats.backfilled.Load() < 1 {
		t.Error("q2 did not come from a backfill")
	}
	if s := srv.Searches(); len(s) == 0 || s[0].SinceID != q1.ID {
		t.Errorf("searches %+v, want since_id %d", s, q1.ID)
	}
}

func TestTracker_KeepAlivesAreNotStalls(t *testing.T) {
	srv, base := newServer(t)
	// The stall timeout is 25 keep-alive intervals (500 ms): with the
	// shared 200 ms, a loaded machine's scheduling pause under -race
	// showed up as a stall.
	opts := testOptions(base)
	opts.StallTimeout = 25 * testKeepAlive
	tr, _ := start(t, opts, spec(1, "idle"))
	// Keep-alives every 20 ms for over three stall timeouts.
	want := int64(3 * opts.StallTimeout / testKeepAlive)
	testkit.WaitFor(t, waitDeadline, "keep-alives", func() bool { return tr.stats.keepAlives.Load() >= want })
	if n := tr.stats.stalls.Load(); n != 0 {
		t.Errorf("%d stalls on a stream sending keep-alives", n)
	}
	if n := srv.Streaming(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestTracker_ServerThatNeverAnswers(t *testing.T) {
	srv, base := newServer(t)
	srv.Hang(true)
	tr, rec := start(t, testOptions(base), spec(1, "late"))
	testkit.WaitFor(t, waitDeadline, "no-answer error", func() bool { return tr.sawErr(ErrNoAnswer) })
	testkit.WaitFor(t, waitDeadline, "a retry", func() bool { return len(srv.Connections()) >= 2 })
	srv.Hang(false)
	testkit.WaitFor(t, waitDeadline, "stream once the server answers", func() bool { return srv.Open() == 1 })
	l := srv.Publish(twitterserver.Tweet{Text: "late but here"})
	testkit.WaitFor(t, waitDeadline, "tweet", func() bool { return rec.Has(tweetID(l)) })
}

func TestTracker_WrongCredentials(t *testing.T) {
	srv, base := newServer(t)
	opts := testOptions(base)
	opts.Credentials.AccessSecret = "wrong"
	tr, _ := start(t, opts, spec(1, "secret"))
	testkit.WaitFor(t, waitDeadline, "three refused attempts", func() bool { return srv.Unauthorized() >= 3 })
	err := tr.Err()
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("Err() = %v, want ErrUnauthorized naming 401 and the credentials", err)
	}
	for i, g := range gaps(srv.Connections())[:2] {
		if want := testHTTPMin << i; g < want {
			t.Errorf("retry %d after %v, want at least %v (no hammering)", i+1, g, want)
		}
	}
}

func TestTracker_BadMessages(t *testing.T) {
	huge := []byte(`{"id_str":"1","text":"` + strings.Repeat("x", DefaultMaxMessageBytes) + `"}`)
	cases := []struct {
		name      string
		send      func(srv *twitterserver.Server)
		want      error
		reconnect bool
	}{
		{"malformed JSON", func(s *twitterserver.Server) { s.PublishRaw([]byte(`{"id_str": "12", "text": oops}`), true) }, ErrMalformed, false},
		{"not an object", func(s *twitterserver.Server) { s.PublishRaw([]byte(`[1,2,3]`), true) }, ErrMalformed, false},
		{"tweet without id", func(s *twitterserver.Server) { s.PublishRaw([]byte(`{"id_str":"","text":"bad tweet"}`), true) }, ErrMalformed, false},
		{"truncated message", func(s *twitterserver.Server) { s.Truncate([]byte(`{"id_str":"1","text":"half a tw`)) }, ErrTruncated, true},
		{"huge message", func(s *twitterserver.Server) { s.PublishRaw(huge, true) }, ErrMessageTooLarge, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := newServer(t)
			tr, rec := start(t, testOptions(base), spec(1, "good"))
			testkit.WaitFor(t, waitDeadline, "stream", func() bool { return srv.Open() == 1 })
			tc.send(srv)
			testkit.WaitFor(t, waitDeadline, fmt.Sprintf("Err() to wrap %v", tc.want), func() bool { return tr.sawErr(tc.want) })
			if tc.reconnect {
				testkit.WaitFor(t, waitDeadline, "a new stream", func() bool { return srv.Streaming() == 2 && srv.Open() == 1 })
			} else if n := srv.Streaming(); n != 1 {
				t.Errorf("%d connections: a bad message must not cost the stream", n)
			}
			g := srv.Publish(twitterserver.Tweet{Text: "good after bad"})
			testkit.WaitFor(t, waitDeadline, "a good tweet after the bad message", func() bool { return rec.Has(tweetID(g)) })
			if n := len(rec.All()); n != 1 {
				t.Errorf("%d items, want only the good one", n)
			}
		})
	}
}

func TestTracker_BackfillRetriesRateLimitedSearch(t *testing.T) {
	srv, base := newServer(t)
	tr, rec := start(t, testOptions(base), spec(1, "retry"))
	testkit.WaitFor(t, waitDeadline, "stream", func() bool { return srv.Open() == 1 })
	r1 := srv.Publish(twitterserver.Tweet{Text: "retry one"})
	testkit.WaitFor(t, waitDeadline, "r1", func() bool { return rec.Has(tweetID(r1)) })
	srv.FailSearches(429, 1)
	srv.FailStreams(503, 1<<30)
	srv.Cut()
	testkit.WaitFor(t, waitDeadline, "the stream to be down", func() bool { return srv.Open() == 0 })
	r2 := srv.Publish(twitterserver.Tweet{Text: "retry two"})
	srv.FailStreams(0, 0)
	testkit.WaitFor(t, waitDeadline, "r2 after a rate-limited search", func() bool { return rec.Has(tweetID(r2)) })
	s := srv.Searches()
	if len(s) < 2 {
		t.Fatalf("%d searches, want a refused one and a retry", len(s))
	}
	if g := s[1].At.Sub(s[0].At); g < testRateMin {
		t.Errorf("search retried after %v, want at least %v", g, testRateMin)
	}
	testkit.WaitFor(t, waitDeadline, "Err to clear", func() bool { return tr.Err() == nil })
}

// sawErr reports whether one of the recent errors, cleared or not, wraps
// target: a failure that a reconnect has already repaired still shows.
func (t *tracker) sawErr(target error) bool { return t.errs.Saw(target) }

// TestTracker_BackfilledTweetKeepsItsLinks: a tweet found by the
// backfill's search is read as a streamed one is: the search asks for
// entities, so its t.co link is replaced by the address it stands for and
// listed in links, and its text is unescaped.
func TestTracker_BackfilledTweetKeepsItsLinks(t *testing.T) {
	srv, base := newServer(t)
	tr, rec := start(t, testOptions(base), spec(1, "quiet"))
	testkit.WaitFor(t, waitDeadline, "stream", func() bool { return srv.Open() == 1 })
	q1 := srv.Publish(twitterserver.Tweet{Text: "quiet one"})
	testkit.WaitFor(t, waitDeadline, "q1", func() bool { return rec.Has(tweetID(q1)) })

	srv.Stall(true)
	q2 := srv.Publish(twitterserver.Tweet{Text: "quiet <two> & a link: https://go.dev/doc"})
	testkit.WaitFor(t, waitDeadline, "a stall to be detected", func() bool { return tr.stats.stalls.Load() >= 1 })
	srv.Stall(false)
	testkit.WaitFor(t, waitDeadline, "q2 through the backfill", func() bool { return rec.Has(tweetID(q2)) })
	it, _ := rec.ByID(tweetID(q2))
	if it.Text != "quiet <two> & a link: https://go.dev/doc" || !slices.Equal(it.Links, []string{"https://go.dev/doc"}) {
		t.Fatalf("backfilled text %q links %q", it.Text, it.Links)
	}
}
