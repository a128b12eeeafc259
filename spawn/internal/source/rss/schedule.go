package rss

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

const (
	// intervalJitter spreads the fetches of feeds started together: each
	// wait is lengthened by up to this fraction.
	intervalJitter = 0.1
	// adaptiveSample is how many of a feed's newest items its publishing
	// rate is estimated from.
	adaptiveSample = 10
	// adaptiveShare is the fraction of the mean gap between items a
	// healthy feed waits: about two fetches per new item.
	adaptiveShare = 0.5
)

// Health states of a feed.
const (
	// Healthy: the last fetch succeeded.
	Healthy = "healthy"
	// Degraded: the last fetches failed, fewer than failingAfter in a row.
	Degraded = "degraded"
	// Failing: failingAfter or more fetches in a row failed.
	Failing = "failing"
)

// Health is what a poller knows about its feed's condition.
type Health struct {
	State string
	// Failures counts the failed fetches in a row.
	Failures int
	// LastError is the last fetch's error; nil when healthy.
	LastError error
	// LastSuccess is when a fetch last succeeded.
	LastSuccess time.Time
	// NextAttempt is when the next fetch is due.
	NextAttempt time.Time
	// Interval is the wait before the next fetch: the adaptive interval
	// when healthy, the backoff otherwise.
	Interval time.Duration
	// Skipped counts the items left out of fetches because the feed
	// listed more than one fetch takes (maxItemsPerFetch).
	Skipped int64
}

// FeedError is a failing or degraded feed's Err: the last fetch's error and
// the feed's state. It matches ErrDegraded or ErrFailing with errors.Is, as
// well as whatever the fetch error wraps.
type FeedError struct {
	URL         string
	State       string
	Failures    int
	NextAttempt time.Time
	Err         error
}

func (e *FeedError) Error() string {
	plural := "es"
	if e.Failures == 1 {
		plural = ""
	}
	return fmt.Sprintf("%v (feed %s: %d failed fetch%s in a row, next attempt at %s)",
		e.Err, e.State, e.Failures, plural, e.NextAttempt.UTC().Format(time.RFC3339))
}

// Unwrap returns the state's sentinel and the fetch error.
func (e *FeedError) Unwrap() []error {
	if e.State == Failing {
		return []error{ErrFailing, e.Err}
	}
	return []error{ErrDegraded, source.ErrDegraded, e.Err}
}

func (h Health) err(url string) error {
	if h.State == Healthy || h.LastError == nil {
		return nil
	}
	return &FeedError{URL: url, State: h.State, Failures: h.Failures, NextAttempt: h.NextAttempt, Err: h.LastError}
}

// record updates the feed's health after a fetch that ended at now and
// returns the wait before the next one.
func (f *feed) record(now time.Time, err error, retryAfter time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.health
	h := prev
	if err == nil {
		h.State, h.Failures, h.LastError, h.LastSuccess = Healthy, 0, nil, now
		h.Interval = f.nextInterval(now)
		if prev.Failures > 0 {
			f.logger.Info("feed recovered", "failures", prev.Failures)
		}
	} else {
		h.Failures++
		h.LastError = err
		h.State = Degraded
		if h.Failures >= failingAfter {
			h.State = Failing
		}
		h.Interval = f.backoff(h.Failures, retryAfter)
		if prev.LastError == nil || prev.LastError.Error() != err.Error() || prev.State != h.State {
			f.logger.Warn("feed fetch failed", "state", h.State, "err", err, "failures", h.Failures, "retry_in", h.Interval.Round(time.Millisecond))
		}
	}
	h.NextAttempt = now.Add(h.Interval)
	f.health = h
	return h.Interval
}

// nextInterval is the wait after a successful fetch: the adaptive interval
// within [MinInterval, MaxInterval], never shorter than the publisher's
// Cache-Control max-age or the feed's <ttl> unless that exceeds
// MaxInterval, lengthened by a little jitter.
func (f *feed) nextInterval(now time.Time) time.Duration {
	d := adaptiveInterval(f.current, now, f.opts.Interval)
	d = min(max(d, f.opts.MinInterval), f.opts.MaxInterval)
	if ask := max(f.maxAge, f.ttl); ask > d {
		d = min(ask, f.opts.MaxInterval)
	}
	return jitter(d)
}

// adaptiveInterval estimates how often a feed should be fetched from its
// newest items (oldest first): adaptiveShare of the mean gap between them,
// counting the silence since the newest as a gap too, so that a feed that
// stopped publishing is fetched less and less often. With fewer than two
// items it is base.
func adaptiveInterval(items []source.Item, now time.Time, base time.Duration) time.Duration {
	n := min(len(items), adaptiveSample)
	if n < 2 {
		return base
	}
	times := make([]time.Time, len(items))
	for i, it := range items {
		times[i] = it.PublishedAt
	}
	slices.SortFunc(times, func(a, b time.Time) int { return b.Compare(a) }) // newest first
	oldest := times[n-1]
	span := now.Sub(oldest)
	if span <= 0 {
		return 0
	}
	return time.Duration(float64(span) / float64(n) * adaptiveShare)
}

// backoff is the wait after the n-th failure in a row: Interval doubled per
// failure, capped at MaxBackoff, then drawn at random from its upper half so
// that feeds failing together do not retry together. A server's Retry-After
// is honoured up to MaxBackoff.
func (f *feed) backoff(n int, retryAfter time.Duration) time.Duration {
	d := f.opts.Interval
	for i := 1; i < n && d < f.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = backoff.Jitter(min(d, f.opts.MaxBackoff))
	return min(max(d, retryAfter), f.opts.MaxBackoff)
}

func jitter(d time.Duration) time.Duration {
	return d + rand.N(time.Duration(float64(d)*intervalJitter)+1)
}
