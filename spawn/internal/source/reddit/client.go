package reddit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The budget. Every request of the spawn, token requests included, waits
// for its turn: turns are at least 60 s / RequestsPerMinute apart, so no
// minute holds more. Each answer's X-Ratelimit-Remaining and -Reset (the
// requests the client id has left in Reddit's window and the seconds until
// it ends, whoever spent them) spread the remaining turns over what is left
// of the window when that is slower; none left, or a 429, stops every
// request until the window ends (retry-after when Reddit sends one).
// Re-checks take a turn only when no poll is waiting for one.

// budget spaces the spawn's requests to Reddit.
type budget struct {
	mu       sync.Mutex
	every    time.Duration
	next     time.Time // the earliest next turn
	until    time.Time // no turn before (window spent, 429)
	waiting  int       // polls waiting for a turn
	released time.Time // when the last turn was taken
	fallback time.Duration
}

func newBudget(perMinute float64, fallback time.Duration) *budget {
	return &budget{every: time.Duration(float64(time.Minute) / perMinute), fallback: fallback}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// take waits for a turn; a low-priority caller (a re-check) yields to any
// poll waiting. Turns are reserved in the order callers come (fair among
// the listings) and released no closer than every to the turn before and
// not before a stop the headers or a 429 set since, however late a
// waiter wakes.
func (b *budget) take(ctx context.Context, low bool) error {
	b.mu.Lock()
	for low && b.waiting > 0 {
		every := b.every
		b.mu.Unlock()
		if err := sleep(ctx, every); err != nil {
			return err
		}
		b.mu.Lock()
	}
	at := later(later(b.next, b.until), time.Now())
	b.next = at.Add(b.every)
	if !low {
		b.waiting++
		defer func() {
			b.mu.Lock()
			b.waiting--
			b.mu.Unlock()
		}()
	}
	b.mu.Unlock()
	for {
		if err := sleep(ctx, time.Until(at)); err != nil {
			return err
		}
		b.mu.Lock()
		now := time.Now()
		at = later(b.until, b.released.Add(b.every))
		if !at.After(now) {
			b.released = now
			b.mu.Unlock()
			return nil
		}
		b.mu.Unlock()
	}
}

// observe reads an answer's rate-limit headers.
func (b *budget) observe(h http.Header, status int) {
	now := time.Now()
	remaining, okR := headerFloat(h, "X-Ratelimit-Remaining")
	reset, okS := headerFloat(h, "X-Ratelimit-Reset")
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case status == http.StatusTooManyRequests:
		wait := b.fallback
		if ra, ok := headerFloat(h, "Retry-After"); ok && ra > 0 {
			wait = time.Duration(ra * float64(time.Second))
		} else if okS && reset > 0 {
			wait = time.Duration(reset * float64(time.Second))
		}
		b.until = later(b.until, now.Add(wait))
	case okR && okS && remaining < 1:
		b.until = later(b.until, now.Add(time.Duration(reset*float64(time.Second))))
	case okR && okS:
		if spread := time.Duration(reset / remaining * float64(time.Second)); spread > b.every {
			b.next = later(b.next, now.Add(spread))
		}
	}
}

func headerFloat(h http.Header, name string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(h.Get(name)), 64)
	return v, err == nil && v >= 0
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// client is the spawn's one session with Reddit: the token, the budget
// and the counters every reddit data source shares.
type client struct {
	opts    Options
	apiURL  string
	authURL string
	budget  *budget

	mu      sync.Mutex
	token   string
	expires time.Time
	refused error     // the credentials were refused: ErrCredentialsRefused
	retryAt time.Time // when to ask for a token again after a refusal

	requests atomic.Int64
	limited  atomic.Int64
}

func newClient(opts Options, apiURL, authURL string) *client {
	return &client{opts: opts, apiURL: apiURL, authURL: authURL, budget: newBudget(opts.RequestsPerMinute, opts.RateLimitWait)}
}

// credentialsErr is the lasting error of refused credentials, nil while
// they are not.
func (c *client) credentialsErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// bearer returns a live token, asking for one when needed.
func (c *client) bearer(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.token != "" && time.Until(c.expires) > tokenMargin {
		t := c.token
		c.mu.Unlock()
		return t, nil
	}
	if c.refused != nil && time.Now().Before(c.retryAt) {
		err := c.refused
		c.mu.Unlock()
		return "", err
	}
	c.mu.Unlock()
	token, life, err := c.fetchToken(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case errors.Is(err, ErrCredentialsRefused):
		c.refused, c.retryAt, c.token = err, time.Now().Add(c.opts.AuthBackoff), ""
		return "", err
	case err != nil:
		return "", err
	}
	c.token, c.expires, c.refused = token, time.Now().Add(life), nil
	return token, nil
}

// dropToken forgets a token the API refused.
func (c *client) dropToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token = ""
	}
}

// fetchToken asks the token endpoint for a client-credentials token.
func (c *client) fetchToken(ctx context.Context) (string, time.Duration, error) {
	if err := c.budget.take(ctx, false); err != nil {
		return "", 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	endpoint := c.authURL + tokenPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint,
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("reddit: %w", err)
	}
	req.SetBasicAuth(c.opts.ClientID, c.opts.ClientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	c.requests.Add(1)
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("reddit: unable to reach %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	c.budget.observe(resp.Header, resp.StatusCode)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxTokenBytes))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return "", 0, fmt.Errorf("%w by %s (%s: %s): check BW_REDDIT_CLIENT_ID and BW_REDDIT_CLIENT_SECRET",
			ErrCredentialsRefused, endpoint, resp.Status, clip(string(body)))
	case http.StatusTooManyRequests:
		c.limited.Add(1)
		return "", 0, fmt.Errorf("%w: %s answered 429", ErrRateLimited, endpoint)
	default:
		return "", 0, fmt.Errorf("%w: %s answered %s: %s", ErrStatus, endpoint, resp.Status, clip(string(body)))
	}
	var tok struct {
		AccessToken string  `json:"access_token"`
		TokenType   string  `json:"token_type"`
		ExpiresIn   float64 `json:"expires_in"`
		Error       string  `json:"error"`
	}
	if err := json.Unmarshal(body, &tok); err != nil {
		return "", 0, fmt.Errorf("%w: token answer: %v", ErrMalformed, err)
	}
	if tok.Error != "" {
		// Reddit answers a grant it refuses with 200 and an error.
		return "", 0, fmt.Errorf("%w by %s (%s): check BW_REDDIT_CLIENT_ID and BW_REDDIT_CLIENT_SECRET",
			ErrCredentialsRefused, endpoint, clip(tok.Error))
	}
	if tok.AccessToken == "" || !strings.EqualFold(tok.TokenType, "bearer") || tok.ExpiresIn <= 0 {
		return "", 0, fmt.Errorf("%w: token answer without a bearer token: %s", ErrMalformed, clip(string(body)))
	}
	return tok.AccessToken, time.Duration(tok.ExpiresIn * float64(time.Second)), nil
}

// get reads an API path (with its query) into out, taking a turn of the
// budget (low for re-checks). A refused token is replaced once.
func (c *client) get(ctx context.Context, pathQuery string, low bool, out any) error {
	for attempt := 0; ; attempt++ {
		token, err := c.bearer(ctx)
		if err != nil {
			return err
		}
		if err := c.budget.take(ctx, low); err != nil {
			return err
		}
		status, err := c.do(ctx, token, pathQuery, out)
		if status == http.StatusUnauthorized && attempt == 0 {
			c.dropToken(token)
			continue
		}
		return err
	}
}

func (c *client) do(ctx context.Context, token, pathQuery string, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	u := c.apiURL + pathQuery
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("reddit: %w", err)
	}
	req.Header.Set("Authorization", "bearer "+token)
	req.Header.Set("User-Agent", c.opts.UserAgent)
	c.requests.Add(1)
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reddit: unable to read %s: %w", clip(pathQuery), err)
	}
	defer resp.Body.Close()
	c.budget.observe(resp.Header, resp.StatusCode)
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListingBytes+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reddit: unable to read %s: %w", clip(pathQuery), err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		c.limited.Add(1)
		return resp.StatusCode, fmt.Errorf("%w: %s (retry-after %s)", ErrRateLimited, clip(pathQuery), resp.Header.Get("Retry-After"))
	case resp.StatusCode != http.StatusOK:
		return resp.StatusCode, fmt.Errorf("%w: %s answered %s: %s", ErrStatus, clip(pathQuery), resp.Status, clip(string(body)))
	case len(body) > maxListingBytes:
		return resp.StatusCode, fmt.Errorf("%w: %s answered more than %d bytes", ErrMalformed, clip(pathQuery), maxListingBytes)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return resp.StatusCode, fmt.Errorf("%w: %s: %v", ErrMalformed, clip(pathQuery), err)
	}
	return resp.StatusCode, nil
}
