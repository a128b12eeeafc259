package twitterv1

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	gotwitter "github.com/dghubble/go-twitter/twitter"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
)

// backfillPart names backfill errors in Err.
const backfillPart = "backfill"

// backfillReq asks for the tweets newer than since that match terms.
type backfillReq struct {
	terms []string
	since int64
}

// backfiller fills the gaps reconnects leave, one search at a time: the
// standard search allows 180 calls per 15 minutes, and a burst of
// reconnects must not spend them all at once. Requests of the same
// connection that pile up are merged.
type backfiller struct {
	t    *tracker
	api  *gotwitter.Client
	emit source.Emit
	wake chan struct{}

	mu      sync.Mutex
	pending map[int]backfillReq // by worker id
}

func newBackfiller(t *tracker, client *gotwitter.Client, emit source.Emit) *backfiller {
	return &backfiller{t: t, api: client, emit: emit, wake: make(chan struct{}, 1), pending: map[int]backfillReq{}}
}

// request queues a backfill for a worker's terms. A request still pending
// for the same worker is merged: the earlier since, the newer terms.
func (b *backfiller) request(worker int, terms []string, since int64) {
	b.mu.Lock()
	if p, ok := b.pending[worker]; ok {
		since = min(since, p.since)
	}
	b.pending[worker] = backfillReq{terms: slices.Clone(terms), since: since}
	b.mu.Unlock()
	source.Signal(b.wake)
}

func (b *backfiller) take() (backfillReq, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := -1
	for id := range b.pending {
		if first < 0 || id < first {
			first = id
		}
	}
	if first < 0 {
		return backfillReq{}, false
	}
	req := b.pending[first]
	delete(b.pending, first)
	return req, true
}

func (b *backfiller) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		for {
			req, ok := b.take()
			if !ok {
				break
			}
			b.fill(ctx, req)
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// fill runs one backfill, retrying failures with the back-off of their
// class, and gives up (reporting it through Err) after
// maxBackfillAttempts.
func (b *backfiller) fill(ctx context.Context, req backfillReq) {
	o := b.t.opts
	fails := newBackoff(o)
	for attempt := 1; ; attempt++ {
		n, err := b.once(ctx, req)
		if err == nil {
			b.t.stats.backfills.Add(1)
			b.t.stats.backfilled.Add(int64(n))
			b.t.setErr(backfillPart, nil)
			b.t.logger.Info("twitter backfill done", "since_id", req.since, "track_terms", len(req.terms), "items", n)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt >= maxBackfillAttempts {
			err = fmt.Errorf("twitter: backfill since tweet %d given up after %d attempts: %w", req.since, attempt, err)
			b.t.setErr(backfillPart, err)
			b.t.logger.Error("twitter backfill failed", "err", err)
			return
		}
		class := linestream.ClassHTTP
		switch {
		case errors.Is(err, ErrRateLimited):
			class = linestream.ClassRateLimit
		case errors.Is(err, errSearchNetwork):
			class = linestream.ClassNetwork
		}
		wait := fails.Next(class)
		b.t.setErr(backfillPart, err)
		b.t.logger.Warn("twitter backfill failed", "err", err, "attempt", attempt, "retry_in", wait)
		if !backoff.Sleep(ctx, wait) {
			return
		}
	}
}

// errSearchNetwork marks a search that got no HTTP answer.
var errSearchNetwork = errors.New("twitter: search request failed")

// once searches every query of the request, newest pages first, and hands
// the matching tweets over oldest first.
func (b *backfiller) once(ctx context.Context, req backfillReq) (int, error) {
	var found []gotwitter.Tweet
	for _, q := range searchQueries(req.terms) {
		var maxID int64
		for page := 0; page < maxBackfillPages; page++ {
			res, resp, err := b.api.Search.Tweets(&gotwitter.SearchTweetParams{
				Query:      q,
				Count:      searchPageSize,
				SinceID:    req.since,
				MaxID:      maxID,
				ResultType: "recent",
				TweetMode:  "extended",
				// The entities carry the addresses the t.co links stand
				// for.
				IncludeEntities: gotwitter.Bool(true),
			})
			if err := searchError(resp, err); err != nil {
				return 0, err
			}
			found = append(found, res.Statuses...)
			if len(res.Statuses) < searchPageSize {
				break
			}
			oldest := res.Statuses[0].ID
			for _, s := range res.Statuses {
				oldest = min(oldest, s.ID)
			}
			if maxID = oldest - 1; maxID <= req.since {
				break
			}
		}
	}
	now := time.Now()
	m := b.t.matcher.Load()
	var items []source.Item
	for _, tw := range sortTweets(found) {
		it, err := tweetItem(&tw, searchEngagement(&tw), m, now)
		if err != nil || len(it.Terms) == 0 {
			continue
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return 0, nil
	}
	if err := b.t.deliver(ctx, b.emit, items); err != nil {
		return 0, fmt.Errorf("twitter: unable to hand over backfilled tweets: %w", err)
	}
	return len(items), nil
}

// searchError turns go-twitter's search result into the source's errors.
func searchError(resp *http.Response, err error) error {
	if resp == nil {
		if err == nil {
			err = errors.New("no response")
		}
		return fmt.Errorf("%w: %w", errSearchNetwork, err)
	}
	status := fmt.Sprintf("%d %s", resp.StatusCode, statusText(resp.StatusCode))
	switch {
	case resp.StatusCode == 420 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%w: search answered %s", ErrRateLimited, status)
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%w: search answered %s", ErrUnauthorized, status)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%w: search answered %s", ErrStatus, status)
	case err != nil:
		return fmt.Errorf("twitter: unable to read search results: %w", err)
	}
	return nil
}
