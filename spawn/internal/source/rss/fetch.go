package rss

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
	gofeedrss "github.com/mmcdole/gofeed/rss"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// errHeaderTimeout is the cause a fetch's context is cancelled with when the
// response headers are late.
var errHeaderTimeout = errors.New("no response headers in time")

// fetchResult is one fetch's outcome.
type fetchResult struct {
	at                 time.Time
	notModified        bool
	body               []byte
	contentType        string // the response's Content-Type, charset and all
	etag, lastModified string
	retryAfter         time.Duration
	// cacheHint says the response carried Cache-Control or Expires, and
	// maxAge is how long it may be cached (0: revalidate every time).
	cacheHint bool
	maxAge    time.Duration
}

// fetch makes one request for the feed: after waiting for its host's turn,
// within HeaderTimeout for the headers and FetchTimeout for the whole answer,
// and reading at most MaxBodyBytes.
func (f *feed) fetch(ctx context.Context) (fetchResult, error) {
	var res fetchResult
	release, err := f.hosts.acquire(ctx, f.host)
	if err != nil {
		return res, err
	}
	defer release()
	res.at = time.Now()
	ctx, cancelFetch := context.WithTimeout(ctx, f.opts.FetchTimeout)
	defer cancelFetch()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return res, fmt.Errorf("rss: unable to fetch %s: %w", f.url, err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", acceptHeader)
	if f.etag != "" {
		req.Header.Set("If-None-Match", f.etag)
	}
	if f.lastModified != "" {
		req.Header.Set("If-Modified-Since", f.lastModified)
	}
	headers := time.AfterFunc(f.opts.HeaderTimeout, func() { cancel(errHeaderTimeout) })
	resp, err := f.opts.Client.Do(req)
	headers.Stop()
	if err != nil {
		return res, f.timeoutOr(ctx, fmt.Errorf("rss: unable to fetch %s: %w", f.url, err))
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
		resp.Body.Close()
	}()
	res.cacheHint, res.maxAge = cacheLifetime(resp.Header, res.at)
	switch {
	case resp.StatusCode == http.StatusNotModified:
		res.notModified = true
		return res, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		res.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), res.at)
		return res, fmt.Errorf("rss: unable to fetch %s: %w: %w", f.url, ErrStatus, source.StatusError{Code: resp.StatusCode, Status: resp.Status})
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return res, fmt.Errorf("rss: unable to fetch %s: %w: %w", f.url, ErrStatus, source.StatusError{Code: resp.StatusCode, Status: resp.Status})
	}
	limit := f.opts.MaxBodyBytes
	if resp.ContentLength > limit {
		return res, fmt.Errorf("rss: unable to fetch %s: %w: %d bytes announced, at most %d allowed", f.url, ErrTooLarge, resp.ContentLength, limit)
	}
	body, err := readCapped(resp.Body, resp.ContentLength, limit)
	if err != nil {
		return res, f.timeoutOr(ctx, fmt.Errorf("rss: unable to read %s: %w", f.url, err))
	}
	if int64(len(body)) > limit {
		return res, fmt.Errorf("rss: unable to fetch %s: %w: more than %d bytes", f.url, ErrTooLarge, limit)
	}
	res.body = body
	res.contentType = resp.Header.Get("Content-Type")
	res.etag = resp.Header.Get("ETag")
	res.lastModified = resp.Header.Get("Last-Modified")
	return res, nil
}

// timeoutOr names the time limit a failed fetch ran into, if any: the
// header timeout, or the whole fetch's. A fetch stopped because the source
// is stopping keeps its error as it is.
func (f *feed) timeoutOr(ctx context.Context, err error) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errHeaderTimeout):
		return fmt.Errorf("rss: unable to fetch %s: %w: no response headers within %v", f.url, ErrTimeout, f.opts.HeaderTimeout)
	case errors.Is(cause, context.DeadlineExceeded):
		return fmt.Errorf("rss: unable to fetch %s: %w: no complete answer within %v: %w", f.url, ErrTimeout, f.opts.FetchTimeout, context.DeadlineExceeded)
	}
	// The client's own limits (connect, headers, whole request).
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
		return timedOut{err}
	}
	return err
}

// timedOut adds ErrTimeout to an error that already says which limit it ran
// into.
type timedOut struct{ err error }

func (t timedOut) Error() string   { return t.err.Error() }
func (t timedOut) Unwrap() []error { return []error{ErrTimeout, t.err} }

// readBufferMin is the first buffer a body of unknown length is read into.
const readBufferMin = 32 << 10

// readCapped reads r to its end or to limit+1 bytes, whichever comes first,
// in a buffer that starts at the announced length (or readBufferMin) and
// doubles without ever growing past limit+1: refusing an oversize body
// allocates at most about twice the cap.
func readCapped(r io.Reader, announced, limit int64) ([]byte, error) {
	size := int64(readBufferMin)
	if announced > 0 {
		size = announced + 1
	}
	buf := make([]byte, 0, min(size, limit+1))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return buf, nil
			}
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return buf, err
		}
	}
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && s > 0 {
		return time.Duration(min(s, int64(maxCacheHint/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxCacheHint)
	}
	return 0
}

// cacheLifetime reads how long a response may be reused: Cache-Control
// max-age less the response's Age, else Expires less Date (or now). ok is
// false when the response says neither; no-cache and no-store mean zero.
func cacheLifetime(h http.Header, now time.Time) (ok bool, d time.Duration) {
	if cc := h.Values("Cache-Control"); len(cc) > 0 {
		maxAge := time.Duration(-1)
		for _, directive := range strings.Split(strings.Join(cc, ","), ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(directive), "=")
			switch strings.ToLower(name) {
			case "no-cache", "no-store":
				return true, 0
			case "max-age":
				if s, err := strconv.ParseInt(strings.Trim(value, `"`), 10, 64); err == nil && s >= 0 {
					maxAge = time.Duration(min(s, int64(maxCacheHint/time.Second))) * time.Second
				}
			}
		}
		if maxAge >= 0 {
			if age, err := strconv.ParseInt(strings.TrimSpace(h.Get("Age")), 10, 64); err == nil && age > 0 {
				maxAge -= time.Duration(min(age, int64(maxCacheHint/time.Second))) * time.Second
			}
			return true, max(maxAge, 0)
		}
	}
	if exp := h.Get("Expires"); exp != "" {
		t, err := http.ParseTime(exp)
		if err != nil {
			return true, 0 // an invalid date means already expired
		}
		from := now
		if date, err := http.ParseTime(h.Get("Date")); err == nil {
			from = date
		}
		return true, min(max(t.Sub(from), 0), maxCacheHint)
	}
	return false, 0
}

// maxCacheHint bounds what a publisher's cache headers, <ttl> or
// Retry-After are read as; MaxInterval and MaxBackoff bound the wait
// further.
const maxCacheHint = 7 * 24 * time.Hour

// feedTTL is an RSS feed's <ttl> (minutes to cache the channel), zero for
// other formats and feeds without one.
func feedTTL(parsed *gofeed.Feed) time.Duration {
	rf, ok := parsed.OriginalFeed().(*gofeedrss.Feed)
	if !ok || rf == nil {
		return 0
	}
	minutes, err := strconv.ParseInt(strings.TrimSpace(rf.TTL), 10, 64)
	if err != nil || minutes <= 0 {
		return 0
	}
	return time.Duration(min(minutes, int64(maxCacheHint/time.Minute))) * time.Minute
}
