// Package wsconn is the WebSocket plumbing the streaming sources share
// (stream, bluesky, mastodon): the handshake, reading one message with a
// byte cap and a stall deadline, telling why a connection ended, and the
// reconnect loop with pkg/backoff. What a message means and what a source
// subscribes stay in the source's own package.
//
// Each source keeps its own exported sentinels (stream.ErrStalled,
// bluesky.ErrStalled, …) so its callers need not know this package; they
// are made with source.NewError to match the shared ones here as well, and
// a Conn wraps the source's sentinel in every error it returns.
package wsconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// maxErrorBodyBytes caps the part of a refused handshake's body read for
// its message.
const maxErrorBodyBytes = 512

// The failures every WebSocket source reports. Their texts carry no
// package prefix: the sources' own sentinels, which match them, do.
var (
	// ErrConnectionLost means the connection could not be opened or ended.
	ErrConnectionLost = errors.New("connection lost")
	// ErrStalled means nothing arrived for the stall timeout.
	ErrStalled = errors.New("connection stalled")
	// ErrMessageTooLarge means one message exceeded the byte cap.
	ErrMessageTooLarge = errors.New("message too large")
)

// Errors are a source's own sentinels for the shared failures; each should
// match the shared sentinel of the same name (source.NewError). A nil
// field means the shared sentinel itself.
type Errors struct {
	ConnectionLost, Stalled, MessageTooLarge error
}

func (e Errors) withDefaults() Errors {
	if e.ConnectionLost == nil {
		e.ConnectionLost = ErrConnectionLost
	}
	if e.Stalled == nil {
		e.Stalled = ErrStalled
	}
	if e.MessageTooLarge == nil {
		e.MessageTooLarge = ErrMessageTooLarge
	}
	return e
}

// Counters are where a Conn counts the connections it ends; nil fields
// are not counted. They belong to the source and outlive its connections.
type Counters struct {
	Stalls   *atomic.Int64 // connections ended by silence
	TooLarge *atomic.Int64 // connections ended by a message over the cap
}

func add(c *atomic.Int64) {
	if c != nil {
		c.Add(1)
	}
}

// Config is what a source's connections have in common.
type Config struct {
	// Client performs the handshake; its Timeout bounds it (see
	// HandshakeClient).
	Client *http.Client
	// Header goes with the handshake (User-Agent, Authorization).
	Header http.Header
	// OnPing and OnPong, when set, see the peer's pings and pongs.
	OnPing func(ctx context.Context, payload []byte) bool
	OnPong func(ctx context.Context, payload []byte)
	// MaxMessageBytes caps one message; a larger one is never returned.
	MaxMessageBytes int64
	// MaxSkipBytes, when above MaxMessageBytes, lets a connection live
	// through a message over the cap: one of at most MaxSkipBytes is read
	// to its end and dropped (a source whose service replays its log
	// would otherwise meet the same message on every reconnect). 0 means
	// a message over the cap ends the connection at once.
	MaxSkipBytes int64
	// StallTimeout is how long one Read may wait for a message before the
	// connection counts as stalled; 0 means Read waits as long as its
	// context lets it (the source watches for silence itself).
	StallTimeout time.Duration
	// Silence says what did not arrive, for the stall error: "no event".
	Silence string
	// Peer names the other side in errors: "the service".
	Peer string
	// Errors are the source's sentinels; Counters its counters.
	Errors   Errors
	Counters Counters
}

// HandshakeClient returns a copy of c (a zero client when nil) whose
// Timeout bounds the handshake only: the connection itself is long-lived
// and watched for silence instead.
func HandshakeClient(c *http.Client, timeout time.Duration) *http.Client {
	var d http.Client
	if c != nil {
		d = *c
	}
	d.Timeout = timeout
	return &d
}

// HandshakeError is a handshake the peer answered with another HTTP status
// than 101 Switching Protocols; the source maps it to its own errors.
type HandshakeError struct {
	URL        string
	Status     string // "401 Unauthorized"
	StatusCode int
	// Header is the answer's header (Mastodon's streaming server says why
	// in X-Error-Message).
	Header http.Header
	// Body is the start of the answer's body, for its message.
	Body []byte
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("%s answered %s", e.URL, e.Status)
}

// Conn is one open connection of a source.
type Conn struct {
	*websocket.Conn
	cfg *Config
	// messages counts the messages read, skipped ones included.
	messages atomic.Int64
}

// Delivered reports whether the peer sent at least one message (returned or
// skipped): a connection that ends before it did counts as a failure, so a
// peer that accepts and closes at once is retried with growing waits.
func (c *Conn) Delivered() bool { return c.messages.Load() > 0 }

// TooLargeError is a message over MaxMessageBytes. Read counts it and
// returns it wrapping the source's MessageTooLarge sentinel; the source
// finds it with errors.As.
type TooLargeError struct {
	// Bytes is the message's size when Skipped, else how much of it was
	// read before the connection gave up on it.
	Bytes int64
	// Skipped says the message was read to its end and dropped: the
	// connection is still usable. Otherwise it is over MaxSkipBytes (or
	// the peer went silent or away inside it) and the connection ends.
	Skipped bool
	// Head is the start of the message (MaxMessageBytes+1 bytes, as sent:
	// compressed or not), so the source can tell which event it was.
	Head []byte
	err  error
}

func (e *TooLargeError) Error() string { return e.err.Error() }
func (e *TooLargeError) Unwrap() error { return e.err }

// Dial opens a connection to url. It returns ctx's error when ctx ended, a
// *HandshakeError when the peer refused the handshake, and otherwise an
// error wrapping Errors.ConnectionLost. The connection's own read limit
// is one byte above MaxMessageBytes (or MaxSkipBytes): Read enforces the
// caps itself and the library's limit only backs them up.
func Dial(ctx context.Context, url string, cfg *Config) (*Conn, error) {
	errs := cfg.Errors.withDefaults()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient:     cfg.Client,
		HTTPHeader:     cfg.Header,
		OnPingReceived: cfg.OnPing,
		OnPongReceived: cfg.OnPong,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			he := &HandshakeError{URL: url, Status: resp.Status, StatusCode: resp.StatusCode, Header: resp.Header}
			if resp.Body != nil {
				he.Body, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
			}
			return nil, he
		}
		return nil, fmt.Errorf("%w: unable to connect to %s: %w", errs.ConnectionLost, url, err)
	}
	if cfg.MaxMessageBytes > 0 {
		c.SetReadLimit(max(cfg.MaxMessageBytes+1, cfg.MaxSkipBytes))
	}
	return &Conn{Conn: c, cfg: cfg}, nil
}

// Read returns the next message of at most MaxMessageBytes. A larger one
// up to MaxSkipBytes is read to its end and dropped, and Read returns a
// *TooLargeError with Skipped set: the connection goes on. Over
// MaxSkipBytes (or with no MaxSkipBytes) Read stops at the cap and fails
// at once, so the source drops the connection without the close
// handshake the library would wait for while the peer still sends the
// rest.
//
// When Read fails it says why, wrapping the source's sentinels: the cause
// of ctx when ctx ended; MessageTooLarge (a *TooLargeError); Stalled when
// no message came within StallTimeout; ConnectionLost, with the close
// status when the peer closed. Stalls and messages over the cap are
// counted.
func (c *Conn) Read(ctx context.Context) ([]byte, error) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if c.cfg.StallTimeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, c.cfg.StallTimeout)
	}
	data, err := c.readCapped(rctx)
	silent := errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err == nil {
		c.messages.Add(1)
		return data, nil
	}
	return nil, c.classify(ctx, silent, err)
}

func (c *Conn) readCapped(ctx context.Context) ([]byte, error) {
	_, r, err := c.Reader(ctx)
	if err != nil {
		return nil, err
	}
	max := c.cfg.MaxMessageBytes
	if max <= 0 {
		return io.ReadAll(r)
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) <= max {
		return data, nil
	}
	tl := &TooLargeError{Bytes: int64(len(data)), Head: data}
	if c.cfg.MaxSkipBytes > max {
		// The library's read limit stops the copy past MaxSkipBytes.
		n, err := io.Copy(io.Discard, r)
		tl.Bytes += n
		tl.Skipped = err == nil && tl.Bytes <= c.cfg.MaxSkipBytes
	}
	if tl.Skipped {
		c.messages.Add(1)
	}
	return nil, tl
}

// classify turns a failed read into the error the source reports.
func (c *Conn) classify(ctx context.Context, silent bool, err error) error {
	errs := c.cfg.Errors.withDefaults()
	var tl *TooLargeError
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.As(err, &tl):
		add(c.cfg.Counters.TooLarge)
		switch {
		case tl.Skipped:
			tl.err = fmt.Errorf("%w: a message of %d bytes, more than %d, skipped", errs.MessageTooLarge, tl.Bytes, c.cfg.MaxMessageBytes)
		case tl.Bytes > c.cfg.MaxSkipBytes && c.cfg.MaxSkipBytes > c.cfg.MaxMessageBytes:
			tl.err = fmt.Errorf("%w: a message of more than %d bytes, too large to skip", errs.MessageTooLarge, c.cfg.MaxSkipBytes)
		case c.cfg.MaxSkipBytes > c.cfg.MaxMessageBytes:
			tl.err = fmt.Errorf("%w: a message of more than %d bytes; the connection ended %d bytes into it", errs.MessageTooLarge, c.cfg.MaxMessageBytes, tl.Bytes)
		default:
			tl.err = fmt.Errorf("%w: more than %d bytes", errs.MessageTooLarge, c.cfg.MaxMessageBytes)
		}
		return tl
	case silent:
		add(c.cfg.Counters.Stalls)
		return fmt.Errorf("%w: %s for %v", errs.Stalled, c.cfg.Silence, c.cfg.StallTimeout)
	case errors.Is(err, websocket.ErrMessageTooBig):
		add(c.cfg.Counters.TooLarge)
		return fmt.Errorf("%w: more than %d bytes", errs.MessageTooLarge, c.cfg.MaxMessageBytes)
	}
	if code := websocket.CloseStatus(err); code != -1 {
		return fmt.Errorf("%w: %s closed the connection (%v)", errs.ConnectionLost, c.cfg.Peer, code)
	}
	return fmt.Errorf("%w: %w", errs.ConnectionLost, err)
}

// Write sends one text message, waiting at most timeout. It returns ctx's
// error when ctx ended, else the library's.
func (c *Conn) Write(ctx context.Context, timeout time.Duration, msg []byte) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.Conn.Write(wctx, websocket.MessageText, msg)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
