package twitterv1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/xtext"
)

// errReopen is the cause a connection's context is cancelled with when
// new terms arrived.
var errReopen = errors.New("twitter: reopening with new terms")

// newBackoff is the reconnect policy of Twitter's streaming guide.
func newBackoff(o Options) *linestream.Backoff {
	return linestream.NewBackoff(linestream.Policies{
		NetworkStep: o.NetworkBackoffStep, NetworkMax: o.NetworkBackoffMax,
		HTTPMin: o.HTTPBackoffMin, HTTPMax: o.HTTPBackoffMax,
		RateLimitMin: o.RateLimitBackoffMin, RateLimitMax: o.RateLimitBackoffMax,
	})
}

// worker keeps one filter connection open for its share of the terms.
// terms belongs to the manager; the goroutine gets its copies through
// run's argument and update.
type worker struct {
	t      *tracker
	bf     *backfiller
	emit   source.Emit
	id     int
	name   string
	terms  []string
	update chan []string
	cancel context.CancelFunc
	done   chan struct{}
}

// reopen hands the worker new terms; the latest ones win.
func (w *worker) reopen(terms []string) {
	select {
	case <-w.update:
	default:
	}
	w.update <- terms
}

func (w *worker) stop() {
	w.cancel()
	<-w.done
}

// outcome is how one connection ended.
type outcome struct {
	class    linestream.Class
	reopen   bool // new terms: reconnect at once
	err      error
	newTerms []string // set when new terms arrived meanwhile
}

// run connects, reads, and reconnects with the back-off the failure asks
// for, until ctx ends. backfillFrom, when set, anchors the backfill after
// the first connection.
func (w *worker) run(ctx context.Context, terms []string, backfillFrom time.Time) {
	defer close(w.done)
	o := w.t.opts
	var (
		fails  = newBackoff(o)
		wait   time.Duration
		newest int64          // the newest tweet id this worker has seen
		anchor = backfillFrom // when nothing newer is known, backfill from here
	)
	for {
		if wait > 0 {
			timer := time.NewTimer(wait)
		waiting:
			for {
				select {
				case <-ctx.Done():
					timer.Stop()
					return
				case terms = <-w.update:
				case <-timer.C:
					break waiting
				}
			}
		}
		connected := func() {
			since := newest
			if since == 0 && !anchor.IsZero() {
				since = idAt(anchor.Add(-backfillClockSkew))
			}
			if since > 0 {
				w.bf.request(w.id, terms, since)
			}
			anchor = time.Now()
		}
		res := w.session(ctx, terms, &newest, connected, fails.Reset)
		if res.newTerms != nil {
			terms = res.newTerms
		}
		if ctx.Err() != nil {
			return
		}
		if res.reopen {
			wait = 0
			w.t.logger.Info("twitter stream reopening", "stream", w.id, "track_terms", len(terms))
			continue
		}
		wait = fails.Next(res.class)
		w.t.setErr(w.name, res.err)
		w.t.logger.Warn("twitter stream failed", "stream", w.id, "err", res.err, "retry_in", wait)
	}
}

// session runs one connection: the POST with the track terms, then the
// messages until the stream ends, stalls, or new terms arrive. connected
// is called when Twitter accepts it, answered when its first bytes come (a
// keep-alive will do): a stream that Twitter accepts and ends at once is a
// failure like any other, and its waits keep growing.
func (w *worker) session(ctx context.Context, terms []string, newest *int64, connected, answered func()) (res outcome) {
	t, o := w.t, w.t.opts
	sctx, cancel := context.WithCancelCause(ctx)
	var newTerms []string
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-sctx.Done():
		case newTerms = <-w.update:
			cancel(errReopen)
		}
	})
	defer func() {
		cancel(nil)
		watch.Wait()
		// New terms that arrived as the connection ended for another
		// reason are kept; the failure's back-off still applies.
		res.newTerms = newTerms
	}()
	classify := func(err error) outcome {
		switch cause := context.Cause(sctx); {
		case ctx.Err() != nil:
			return outcome{class: linestream.ClassNone, err: ctx.Err()}
		case errors.Is(cause, errReopen):
			return outcome{reopen: true}
		case errors.Is(cause, linestream.ErrSilent):
			t.stats.stalls.Add(1)
			return outcome{class: linestream.ClassNetwork, err: fmt.Errorf("%w: nothing received for %v", ErrStalled, o.StallTimeout)}
		case errors.Is(cause, linestream.ErrNoAnswer):
			return outcome{class: linestream.ClassNetwork, err: fmt.Errorf("%w: no response within %v", ErrNoAnswer, o.ConnectTimeout)}
		case errors.Is(err, ErrMessageTooLarge):
			t.stats.tooLarge.Add(1)
			return outcome{class: linestream.ClassHTTP, err: err}
		case errors.Is(err, ErrTruncated):
			t.stats.truncated.Add(1)
			return outcome{class: linestream.ClassNetwork, err: err}
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return outcome{class: linestream.ClassNetwork, err: fmt.Errorf("%w: the server closed the stream", ErrDisconnected)}
		}
		return outcome{class: linestream.ClassNetwork, err: fmt.Errorf("twitter: stream connection failed: %w", err)}
	}

	form := url.Values{"track": {strings.Join(terms, ",")}, "stall_warnings": {"true"}}
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, t.filterURL, strings.NewReader(form.Encode()))
	if err != nil {
		return outcome{class: linestream.ClassHTTP, err: fmt.Errorf("twitter: unable to build the stream request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", o.UserAgent)
	t.stats.attempts.Add(1)
	resp, err := linestream.Open(t.stream, req, o.ConnectTimeout, cancel)
	if err != nil {
		res := classify(err)
		if res.class == linestream.ClassNetwork {
			t.stats.networkErrors.Add(1)
		}
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return w.refused(resp)
	}
	t.stats.connects.Add(1)
	t.setErr(w.name, nil)
	t.logger.Info("twitter stream connected", "stream", w.id, "track_terms", len(terms))
	connected()

	stall := linestream.Watch(o.StallTimeout, cancel)
	defer stall.Stop()
	fr := newFramer(stall.Reader(resp.Body), o.MaxMessageBytes)
	for first := true; ; first = false {
		line, err := fr.Next()
		if first && err == nil {
			answered()
		}
		if err != nil {
			res := classify(err)
			if res.class == linestream.ClassNetwork {
				t.stats.networkErrors.Add(1)
			}
			return res
		}
		if len(line) == 0 {
			t.stats.keepAlives.Add(1)
			continue
		}
		msg, err := decodeLine(line)
		if err != nil {
			t.stats.malformed.Add(1)
			t.setErr(w.name, err)
			t.logger.Warn("twitter stream message skipped", "stream", w.id, "err", err, "bytes", len(line))
			continue
		}
		switch msg.kind {
		case kindTweet:
			now := time.Now()
			it, err := tweetItem(msg.tweet, msg.engagement, t.matcher.Load(), now)
			if err != nil {
				t.stats.malformed.Add(1)
				t.setErr(w.name, err)
				continue
			}
			if id, err := strconv.ParseInt(strings.TrimPrefix(it.ID, xtext.IDPrefix), 10, 64); err == nil {
				*newest = max(*newest, id)
			}
			t.setErr(w.name, nil) // a good tweet ends an earlier bad message's report
			if len(it.Terms) == 0 {
				t.stats.unmatched.Add(1)
				continue
			}
			// Time spent handing over (the store pushing back) is not
			// silence from Twitter.
			stall.Pause()
			if err := t.deliver(ctx, w.emit, []source.Item{it}); err != nil {
				if ctx.Err() != nil {
					return outcome{class: linestream.ClassNone, err: err}
				}
				return outcome{class: linestream.ClassNetwork, err: fmt.Errorf("twitter: unable to hand over a tweet: %w", err)}
			}
			stall.Resume()
		case kindDisconnect:
			d := msg.disconnect
			err := fmt.Errorf("%w: code %d: %s", ErrDisconnected, d.Code, d.Reason)
			t.setErr(w.name, err)
			t.logger.Warn("twitter stream disconnect message", "stream", w.id, "code", d.Code, "reason", d.Reason)
		case kindLimit:
			t.logger.Debug("twitter stream limit notice", "stream", w.id, "undelivered", msg.limit.Track)
		case kindWarning:
			t.logger.Warn("twitter stream stall warning", "stream", w.id, "code", msg.warning.Code, "percent_full", msg.warning.PercentFull)
		}
	}
}

// refused turns a non-200 answer into its failure class and error.
func (w *worker) refused(resp *http.Response) outcome {
	t := w.t
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	detail := strings.TrimSpace(string(body))
	if len(detail) > 200 {
		detail = detail[:200]
	}
	status := fmt.Sprintf("%d %s", resp.StatusCode, statusText(resp.StatusCode))
	switch resp.StatusCode {
	case 420, http.StatusTooManyRequests:
		t.stats.rateLimited.Add(1)
		return outcome{class: linestream.ClassRateLimit, err: fmt.Errorf("%w: %s", ErrRateLimited, status)}
	case http.StatusUnauthorized:
		t.stats.httpErrors.Add(1)
		return outcome{class: linestream.ClassHTTP, err: fmt.Errorf("%w: the stream answered %s; check --twitter-consumer-key and the other credentials", ErrUnauthorized, status)}
	}
	t.stats.httpErrors.Add(1)
	if detail != "" {
		return outcome{class: linestream.ClassHTTP, err: fmt.Errorf("%w: the stream answered %s: %s", ErrStatus, status, detail)}
	}
	return outcome{class: linestream.ClassHTTP, err: fmt.Errorf("%w: the stream answered %s", ErrStatus, status)}
}

func statusText(code int) string {
	if code == 420 {
		return "Enhance Your Calm"
	}
	return http.StatusText(code)
}
