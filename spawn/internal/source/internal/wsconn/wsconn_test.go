package wsconn

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// The sentinels of a made-up source, as a source declares them.
var (
	errLost     = source.NewError("demo: connection lost", ErrConnectionLost)
	errStalled  = source.NewError("demo: connection stalled", ErrStalled)
	errTooLarge = source.NewError("demo: message too large", ErrMessageTooLarge)
)

// stallTimeout is short: the tests that stall wait for it.
const stallTimeout = 50 * time.Millisecond

// serve starts a WebSocket server that runs peer on each connection.
func serve(t *testing.T, peer func(ctx context.Context, c *websocket.Conn)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "refuse" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"bad token"}`))
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		peer(r.Context(), c)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func newConfig(stalls, tooLarge *atomic.Int64) *Config {
	return &Config{
		Client:          HandshakeClient(nil, 5*time.Second),
		MaxMessageBytes: 16,
		StallTimeout:    stallTimeout,
		Silence:         "no message",
		Peer:            "the peer",
		Errors:          Errors{ConnectionLost: errLost, Stalled: errStalled, MessageTooLarge: errTooLarge},
		Counters:        Counters{Stalls: stalls, TooLarge: tooLarge},
	}
}

func TestConn_ReadClassifiesHowTheConnectionEnded(t *testing.T) {
	cases := []struct {
		name         string
		peer         func(ctx context.Context, c *websocket.Conn)
		want         []error // the errors.Is targets of the failing read
		wantText     string
		stalls, larg int64
	}{
		{
			name: "message at the cap, then silence",
			peer: func(ctx context.Context, c *websocket.Conn) {
				_ = c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("a", 16)))
				<-ctx.Done()
			},
			want:     []error{errStalled, ErrStalled},
			wantText: "demo: connection stalled: no message for 50ms",
			stalls:   1,
		},
		{
			name: "message over the cap",
			peer: func(ctx context.Context, c *websocket.Conn) {
				_ = c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("a", 16)))
				_ = c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("b", 17)))
				<-ctx.Done()
			},
			want:     []error{errTooLarge, ErrMessageTooLarge},
			wantText: "demo: message too large: more than 16 bytes",
			larg:     1,
		},
		{
			name: "close status",
			peer: func(ctx context.Context, c *websocket.Conn) {
				_ = c.Write(ctx, websocket.MessageText, []byte("x"))
				_ = c.Close(websocket.StatusGoingAway, "restart")
			},
			want:     []error{errLost, ErrConnectionLost},
			wantText: "demo: connection lost: the peer closed the connection (StatusGoingAway)",
		},
		{
			name: "cut without a close",
			peer: func(ctx context.Context, c *websocket.Conn) {
				_ = c.Write(ctx, websocket.MessageText, []byte("x"))
				c.CloseNow()
			},
			want: []error{errLost, ErrConnectionLost},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stalls, tooLarge atomic.Int64
			c, err := Dial(t.Context(), serve(t, tc.peer), newConfig(&stalls, &tooLarge))
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			if _, err := c.Read(t.Context()); err != nil {
				t.Fatalf("first read: %v", err)
			}
			_, err = c.Read(t.Context())
			for _, target := range tc.want {
				if !errors.Is(err, target) {
					t.Errorf("read error %v does not match %v", err, target)
				}
			}
			if tc.wantText != "" && (err == nil || err.Error() != tc.wantText) {
				t.Errorf("read error %q, want %q", err, tc.wantText)
			}
			if stalls.Load() != tc.stalls || tooLarge.Load() != tc.larg {
				t.Errorf("stalls %d too large %d, want %d and %d", stalls.Load(), tooLarge.Load(), tc.stalls, tc.larg)
			}
		})
	}
}

func TestConn_ReadReturnsTheCauseOfItsContext(t *testing.T) {
	url := serve(t, func(ctx context.Context, _ *websocket.Conn) { <-ctx.Done() })
	cfg := newConfig(nil, nil)
	cfg.StallTimeout = 0 // the source watches for silence itself
	c, err := Dial(t.Context(), url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	why := errors.New("rewinding")
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(stallTimeout, func() { cancel(why) })
	if _, err := c.Read(ctx); !errors.Is(err, why) {
		t.Fatalf("read error %v, want the context's cause", err)
	}
}

func TestDial_TellsARefusedHandshakeFromALostConnection(t *testing.T) {
	url := serve(t, func(ctx context.Context, _ *websocket.Conn) { <-ctx.Done() })
	cfg := newConfig(nil, nil)
	cfg.Header = http.Header{"Authorization": {"refuse"}}
	_, err := Dial(t.Context(), url, cfg)
	var he *HandshakeError
	if !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized || string(he.Body) != `{"error":"bad token"}` {
		t.Fatalf("refused handshake: %v", err)
	}
	_, err = Dial(t.Context(), "ws://127.0.0.1:1/", newConfig(nil, nil))
	if !errors.Is(err, errLost) || !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("unreachable peer: %v, want the connection lost", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Dial(ctx, url, newConfig(nil, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended context: %v", err)
	}
}

func TestBackoff_RefusalsWaitLongerAndSurviveHealthyConnections(t *testing.T) {
	b := Backoff{
		Retry:   backoff.Policy{Min: time.Second, Max: 8 * time.Second, NoJitter: true},
		Refused: backoff.Policy{Min: time.Minute, Max: 8 * time.Minute, NoJitter: true},
	}
	steps := []struct {
		refused, healthy bool
		want             time.Duration
	}{
		{false, false, time.Second},
		{false, false, 2 * time.Second},
		{true, false, time.Minute},
		{true, true, 2 * time.Minute}, // accepted, then refused: still growing
		{false, false, time.Second},   // the healthy connection reset Retry
		{false, false, 2 * time.Second},
		{false, true, time.Second},
		{true, false, time.Minute}, // a healthy connection reset the refusals
	}
	for i, s := range steps {
		if got := b.Next(s.refused, s.healthy); got != s.want {
			t.Fatalf("step %d: wait %v, want %v", i, got, s.want)
		}
	}
	noRefused := Backoff{Retry: backoff.Policy{Min: time.Second, Max: time.Minute, NoJitter: true}}
	if got := noRefused.Next(true, false); got != time.Second {
		t.Fatalf("without a Refused policy: wait %v, want Retry's", got)
	}
}

func TestLoop_ReportsFailuresAndReconnectsAtOnceWhenAsked(t *testing.T) {
	again := errors.New("again")
	boom := errors.New("boom")
	results := []error{boom, again, boom}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var failed []error
	calls := 0
	l := Loop{
		Backoff: Backoff{Retry: backoff.Policy{Min: time.Millisecond, Max: time.Millisecond}},
		Again:   func(err error) bool { return errors.Is(err, again) },
		Failed:  func(err error) { failed = append(failed, err) },
		Logger:  slog.New(slog.DiscardHandler),
		Name:    "demo",
	}
	l.Run(ctx, func(context.Context) (bool, error) {
		calls++
		if calls > len(results) {
			cancel()
			return false, ctx.Err()
		}
		return true, results[calls-1]
	})
	if calls != 4 || len(failed) != 2 || failed[0] != boom || failed[1] != boom {
		t.Fatalf("%d calls, failures %v; want 4 calls and boom twice", calls, failed)
	}
}

func TestConn_SkipsAMessageOverTheCapUpToMaxSkipBytes(t *testing.T) {
	url := serve(t, func(ctx context.Context, c *websocket.Conn) {
		_ = c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("a", 17))) // over the cap: skipped
		_ = c.Write(ctx, websocket.MessageText, []byte("next"))
		_ = c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("b", 65))) // over MaxSkipBytes
		<-ctx.Done()
	})
	var tooLarge atomic.Int64
	cfg := newConfig(nil, &tooLarge)
	cfg.MaxSkipBytes = 64
	c, err := Dial(t.Context(), url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if c.Delivered() {
		t.Error("Delivered before any message")
	}
	_, err = c.Read(t.Context())
	var tl *TooLargeError
	if !errors.As(err, &tl) || !tl.Skipped || tl.Bytes != 17 || !errors.Is(err, errTooLarge) || !c.Delivered() {
		t.Fatalf("first read: %v (%+v), want the 17-byte message skipped", err, tl)
	}
	if got, err := c.Read(t.Context()); err != nil || string(got) != "next" {
		t.Fatalf("second read %q, %v: the connection must go on after a skipped message", got, err)
	}
	_, err = c.Read(t.Context())
	if !errors.As(err, &tl) || tl.Skipped || !errors.Is(err, ErrMessageTooLarge) || string(tl.Head) != strings.Repeat("b", 17) {
		t.Fatalf("third read: %v (%+v), want a message too large to skip, with its head", err, tl)
	}
	if tooLarge.Load() != 2 {
		t.Errorf("%d counted too large, want 2", tooLarge.Load())
	}
}

func TestConn_DeliveredOnlyOnceAMessageCame(t *testing.T) {
	url := serve(t, func(ctx context.Context, c *websocket.Conn) { _ = c.Close(websocket.StatusNormalClosure, "") })
	c, err := Dial(t.Context(), url, newConfig(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, err := c.Read(t.Context()); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("read: %v", err)
	}
	if c.Delivered() {
		t.Error("a connection closed before any message counts as delivered")
	}
}
