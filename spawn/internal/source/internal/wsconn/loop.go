package wsconn

import (
	"context"
	"log/slog"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
)

// Defaults of the reconnect waits and the handshake of the sources that
// hold a WebSocket open (bluesky, mastodon, stream), said once for all of
// them.
const (
	// DefaultRetryMin is the first wait before reconnecting after a
	// failure; it doubles with each failure in a row, and every wait is
	// drawn at random from its upper half.
	DefaultRetryMin = time.Second
	// DefaultRetryMax caps the reconnect wait.
	DefaultRetryMax = 5 * time.Minute
	// DefaultRefusedMin is the first wait after the service refused the
	// key or token: only an operator can fix it, retrying sooner cannot
	// help, and hammering a service with a bad key looks like abuse (and
	// gets the spawn's address blocked).
	DefaultRefusedMin = time.Minute
	// DefaultHandshakeTimeout bounds the WebSocket handshake.
	DefaultHandshakeTimeout = 30 * time.Second
)

// Backoff is a source's wait between connections: Retry after a failure,
// Refused after one the source calls refused (a refused key or token: only
// an operator can fix it, so retrying soon cannot help and looks like
// abuse). A zero Refused policy means Retry serves both.
type Backoff struct {
	Retry, Refused backoff.Policy
}

// Next records a failure and returns the wait before the next attempt.
// healthy says the connection worked before it failed: the waits start
// again from their minimum, except Refused's after a refusal, so a peer
// that accepts the connection and then refuses the token is still retried
// ever more slowly.
func (b *Backoff) Next(refused, healthy bool) time.Duration {
	if healthy {
		b.Reset(refused)
	}
	if refused && b.Refused.Min > 0 {
		return b.Refused.Next()
	}
	return b.Retry.Next()
}

// Reset starts the waits again after a success; Refused's only when the
// success was not followed by a refusal.
func (b *Backoff) Reset(refused bool) {
	b.Retry.Reset()
	if !refused {
		b.Refused.Reset()
	}
}

// Loop is the reconnect loop of a source's connection.
type Loop struct {
	Backoff Backoff
	// Refused tells the failures that take the Refused back-off; nil
	// means none.
	Refused func(err error) bool
	// Again, when set, tells a failure after which the source reconnects
	// at once, without a wait and without reporting it (bluesky rewinding
	// for a subscriber behind the connection).
	Again func(err error) bool
	// Failed records a failure in the source's error state (its
	// connection part); the source clears it once a connection works.
	Failed func(err error)
	// Logger and Name ("stream", "bluesky") log each failure.
	Logger *slog.Logger
	Name   string
}

// Run calls connect until ctx ends. connect opens one connection and
// serves it until it fails, and reports whether it worked before it did:
// whether the peer delivered something (Conn.Delivered), not merely
// accepted the connection. A peer that accepts and closes at once thus
// meets waits that grow with every attempt.
func (l *Loop) Run(ctx context.Context, connect func(ctx context.Context) (healthy bool, err error)) {
	fails := 0
	for {
		healthy, err := connect(ctx)
		if ctx.Err() != nil {
			return
		}
		refused := l.Refused != nil && l.Refused(err)
		if healthy {
			fails = 0
			l.Backoff.Reset(refused)
		}
		if l.Again != nil && l.Again(err) {
			continue
		}
		fails++
		wait := l.Backoff.Next(refused, false)
		l.Failed(err)
		l.Logger.Warn(l.Name+" connection failed", "err", err, "failures", fails, "retry_in", wait.Round(time.Millisecond))
		if !backoff.Sleep(ctx, wait) {
			return
		}
	}
}
