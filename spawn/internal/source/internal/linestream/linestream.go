// Package linestream is the plumbing of the line-delimited HTTP streams
// (twitter's v1.1 filter stream and X API v2's filtered stream): a reader
// that splits a body into bounded lines, a keep-alive watchdog that cuts a
// stream gone silent, and the reconnect policy both services' guides
// prescribe. Each source decodes its own messages and classifies its own
// HTTP answers.
package linestream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
)

// readBufferBytes is a stream's read buffer; a longer line is gathered
// from several reads, up to the line cap.
const readBufferBytes = 64 << 10

// The failures of a line stream. Their texts carry no source name: the
// sources' own sentinels, which match them (source.NewError), do.
var (
	// ErrTooLong means a line longer than the cap.
	ErrTooLong = errors.New("stream message too large")
	// ErrTruncated means the body ended (or failed) inside a line.
	ErrTruncated = errors.New("stream ended inside a message")
)

// Causes a stream's context is cancelled with by its watchdogs.
var (
	// ErrSilent: nothing, not even a keep-alive, arrived for the stall
	// timeout.
	ErrSilent = errors.New("linestream: stall watchdog fired")
	// ErrNoAnswer: the response headers did not arrive in time.
	ErrNoAnswer = errors.New("linestream: connect watchdog fired")
)

// Errors are a source's own sentinels for ErrTooLong and ErrTruncated; a
// nil field means the shared one.
type Errors struct {
	TooLong, Truncated error
}

// Reader splits a stream body into lines ending in "\n" (with any "\r"
// before it), holding at most max bytes of one.
type Reader struct {
	r    *bufio.Reader
	max  int
	errs Errors
	buf  []byte
	// skipping is set after a line over the cap was reported, until its
	// end is read.
	skipping bool
}

// NewReader returns a Reader of r with lines of at most max bytes.
func NewReader(r io.Reader, max int, errs Errors) *Reader {
	if errs.TooLong == nil {
		errs.TooLong = ErrTooLong
	}
	if errs.Truncated == nil {
		errs.Truncated = ErrTruncated
	}
	return &Reader{r: bufio.NewReaderSize(r, min(readBufferBytes, max+2)), max: max, errs: errs}
}

// Next returns the next line without its line end; an empty line is a
// keep-alive. The line is valid until the following call.
//
// A line over the cap is reported with TooLong as soon as the cap is
// passed, without reading the rest of it: a source that ends the
// connection on it need not wait for the end of a line that may never
// come, and one that goes on calls Next again, which skips the rest first.
//
// At the end of the body Next returns io.EOF (or the read error); inside a
// line, that error wrapped in Truncated. Whitespace alone is no line.
func (l *Reader) Next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if l.skipping {
			switch {
			case err == nil:
				l.skipping = false
			case !errors.Is(err, bufio.ErrBufferFull):
				return nil, fmt.Errorf("%w: in a message over %d bytes: %w", l.errs.Truncated, l.max, err)
			}
			continue
		}
		if len(l.buf)+len(chunk) > l.max+2 { // room for "\r\n"
			l.buf = l.buf[:0]
			l.skipping = err != nil
			return nil, fmt.Errorf("%w: more than %d bytes", l.errs.TooLong, l.max)
		}
		l.buf = append(l.buf, chunk...)
		switch {
		case err == nil:
			line := bytes.TrimRight(l.buf, "\r\n")
			if len(line) > l.max {
				return nil, fmt.Errorf("%w: more than %d bytes", l.errs.TooLong, l.max)
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(bytes.TrimSpace(l.buf)) > 0:
			return nil, fmt.Errorf("%w: %d bytes of an unfinished message: %w", l.errs.Truncated, len(l.buf), err)
		default:
			return nil, err
		}
	}
}

// Watchdog cancels a stream's context with ErrSilent when no byte arrived
// for its timeout. Time the source spends handing items over is not
// silence: it pauses the watchdog meanwhile.
type Watchdog struct {
	t *time.Timer
	d time.Duration
}

// Watch starts a watchdog of d that cancels with cancel.
func Watch(d time.Duration, cancel context.CancelCauseFunc) *Watchdog {
	return &Watchdog{t: time.AfterFunc(d, func() { cancel(ErrSilent) }), d: d}
}

// Reader returns r re-arming the watchdog whenever bytes arrive.
func (w *Watchdog) Reader(r io.Reader) io.Reader { return activityReader{r: r, w: w} }

// Pause stops the watchdog; Resume starts it again from its full timeout.
func (w *Watchdog) Pause()  { w.t.Stop() }
func (w *Watchdog) Resume() { w.t.Reset(w.d) }

// Stop ends the watchdog for good.
func (w *Watchdog) Stop() { w.t.Stop() }

type activityReader struct {
	r io.Reader
	w *Watchdog
}

func (a activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.w.t.Reset(a.w.d)
	}
	return n, err
}

// Open sends req and waits at most timeout for the response headers,
// cancelling the request's context with ErrNoAnswer when they do not come
// (the client has no timeout: the body is long-lived).
func Open(client *http.Client, req *http.Request, timeout time.Duration, cancel context.CancelCauseFunc) (*http.Response, error) {
	noAnswer := time.AfterFunc(timeout, func() { cancel(ErrNoAnswer) })
	defer noAnswer.Stop()
	return client.Do(req)
}

// Class says which reconnect policy a failed connection takes.
type Class int

const (
	ClassNone      Class = iota // the context ended: no wait
	ClassNetwork                // refused or cut connection, stall: linear
	ClassHTTP                   // an HTTP error status: exponential
	ClassRateLimit              // rate limited: exponential from longer
)

// Defaults of the reconnect waits of an HTTP stream (twitterv1,
// twitterv2): Twitter's and X's streaming guides state the same policy,
// said once here. The longest wait after rate limiting is each API's own.
const (
	// DefaultNetworkStep is added to the wait with every network error in
	// a row (refused or cut connection, stall, no answer).
	DefaultNetworkStep = 250 * time.Millisecond
	// DefaultNetworkMax caps the wait after network errors.
	DefaultNetworkMax = 16 * time.Second
	// DefaultHTTPMin is the first wait after an HTTP error status; it
	// doubles with each one in a row.
	DefaultHTTPMin = 5 * time.Second
	// DefaultHTTPMax caps the wait after HTTP errors.
	DefaultHTTPMax = 320 * time.Second
	// DefaultRateLimitMin is the first wait after rate limiting (429 Too
	// Many Requests, v1.1's 420 Enhance Your Calm); it doubles with each
	// one in a row.
	DefaultRateLimitMin = time.Minute
	// DefaultHeaderTimeout bounds the wait for a stream's response
	// headers.
	DefaultHeaderTimeout = 30 * time.Second
)

// Policies are the waits of each class.
type Policies struct {
	NetworkStep, NetworkMax    time.Duration
	HTTPMin, HTTPMax           time.Duration
	RateLimitMin, RateLimitMax time.Duration
}

// Backoff is the back-off of each class, grown by its failures in a row,
// exact as Twitter's and X's streaming guides state it, without jitter:
// after the n-th network error n·NetworkStep, after the n-th HTTP error
// HTTPMin·2^(n-1), after the n-th rate limiting RateLimitMin·2^(n-1), each
// capped by its maximum.
type Backoff struct{ network, http, rate backoff.Policy }

// NewBackoff returns the back-off of p.
func NewBackoff(p Policies) *Backoff {
	return &Backoff{
		network: backoff.Policy{Min: p.NetworkStep, Max: p.NetworkMax, Factor: 1, Step: p.NetworkStep, NoJitter: true},
		http:    backoff.Policy{Min: p.HTTPMin, Max: p.HTTPMax, NoJitter: true},
		rate:    backoff.Policy{Min: p.RateLimitMin, Max: p.RateLimitMax, NoJitter: true},
	}
}

// Next records a failure of class c and returns the wait before the next
// attempt; 0 for ClassNone.
func (b *Backoff) Next(c Class) time.Duration {
	switch c {
	case ClassNetwork:
		return b.network.Next()
	case ClassHTTP:
		return b.http.Next()
	case ClassRateLimit:
		return b.rate.Next()
	}
	return 0
}

// Reset starts every class again after a connection succeeded.
func (b *Backoff) Reset() {
	b.network.Reset()
	b.http.Reset()
	b.rate.Reset()
}
