package hackernews

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// client reads the two APIs politely: every request waits its turn on one
// pacer (at most RequestsPerSecond, evenly spaced) and one semaphore (at
// most Concurrency under way).
type client struct {
	http      *http.Client
	apiURL    string
	searchURL string
	userAgent string
	timeout   time.Duration
	pace      *pacer
	slots     chan struct{}
	requests  atomic.Int64
}

func newClient(opts Options, apiURL, searchURL string) *client {
	return &client{
		http: opts.Client, apiURL: apiURL, searchURL: searchURL, userAgent: opts.UserAgent,
		timeout: opts.RequestTimeout, pace: newPacer(opts.RequestsPerSecond),
		slots: make(chan struct{}, opts.Concurrency),
	}
}

// pacerSlack is how early a turn may be taken: timers are not finer, and
// a wait shorter than it is not worth a wake-up.
const pacerSlack = time.Millisecond

// pacer spaces request starts evenly: turns are reserved in the order
// callers come and released no closer than every to the turn before,
// however late a waiter wakes.
type pacer struct {
	mu       sync.Mutex
	every    time.Duration
	next     time.Time // the next turn to reserve
	released time.Time // when the last turn was taken
}

func newPacer(perSecond float64) *pacer {
	return &pacer{every: time.Duration(float64(time.Second) / perSecond)}
}

// wait returns at the caller's turn, or with ctx's error.
func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	at := p.next
	if now := time.Now(); at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	p.mu.Unlock()
	for {
		if d := time.Until(at); d >= pacerSlack {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		p.mu.Lock()
		now := time.Now()
		at = p.released.Add(p.every)
		if at.Sub(now) < pacerSlack {
			p.released = now
			p.mu.Unlock()
			return ctx.Err()
		}
		p.mu.Unlock()
	}
}

// get reads url into a body of at most limit bytes.
func (c *client) get(ctx context.Context, url string, limit int64) ([]byte, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.slots }()
	if err := c.pace.wait(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("hackernews: %w", err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	c.requests.Add(1)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hackernews: unable to read %s: %w", clip(url), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("hackernews: unable to read %s: %w", clip(url), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered %d: %s", ErrStatus, clip(url), resp.StatusCode, clip(string(body)))
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: %s answered more than %d bytes", ErrMalformed, clip(url), limit)
	}
	return body, nil
}

// maxItem reads the largest item id.
func (c *client) maxItem(ctx context.Context) (int64, error) {
	body, err := c.get(ctx, c.apiURL+maxItemPath, maxListBytes)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := jsonNumber(body, &n); err != nil || n < 0 {
		return 0, fmt.Errorf("%w: maxitem %q", ErrMalformed, clip(string(body)))
	}
	return n, nil
}

// item reads one item; nil when the API answers null.
func (c *client) item(ctx context.Context, id int64) (*wireItem, error) {
	body, err := c.get(ctx, c.apiURL+fmt.Sprintf(itemPath, id), maxItemBytes)
	if err != nil {
		return nil, err
	}
	it, err := decodeItem(body)
	if err != nil {
		return nil, err
	}
	if it != nil && it.ID != id {
		return nil, fmt.Errorf("%w: item %d answered as item %d", ErrMalformed, id, it.ID)
	}
	return it, nil
}

// passing reports whether err is one a retry may cure (everything but the
// caller's own cancellation).
func passing(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled)
}

// jsonNumber reads a bare JSON number.
func jsonNumber(body []byte, n *int64) error { return json.Unmarshal(body, n) }
