package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Response limits of the client.
const (
	// MaxResponseBytes caps a response body the client reads, so a
	// misbehaving server cannot exhaust the caller's memory.
	MaxResponseBytes = 32 << 20
	// maxErrorBytes caps the body of an error answer.
	maxErrorBytes = 64 << 10
)

// StatusError is a non-2xx answer of a Black Widow server: the HTTP status
// and the server's message (the "error" field of its Error body).
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Client calls the hub's admin API. It is what bwctl uses; it is safe for
// concurrent use. Deadlines come from the context of each call.
//
// Several hubs may share one database: one leads, the others stand by and
// answer with a redirect to the leader, or 503 while none leads. The client
// follows the redirect itself (resending its token only to the hub a hub
// named), remembers the leader, and tries the next hub it was given when a
// hub cannot be reached at all or has no leader to name.
type Client struct {
	hubs  []string
	token string
	http  *http.Client

	mu      sync.Mutex
	current string // the hub answered last (the leader, once found)
}

// maxRedirects bounds the standby redirects one call follows.
const maxRedirects = 3

// NewClient returns a client of the hub at baseURL (e.g.
// "http://127.0.0.1:8700"; several hubs comma-separated) that sends token
// as "Authorization: Bearer <token>" (none when empty). A nil httpClient
// means http.DefaultClient.
func NewClient(baseURL, token string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	var hubs []string
	for _, u := range strings.Split(baseURL, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			hubs = append(hubs, u)
		}
	}
	if len(hubs) == 0 {
		hubs = []string{""}
	}
	noFollow := *httpClient
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{hubs: hubs, token: token, http: &noFollow, current: hubs[0]}
}

// BaseURL is the hub URL the client talks to now: the leader once a
// standby named it.
func (c *Client) BaseURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// order lists the hubs to try: the current one first.
func (c *Client) order() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []string{c.current}
	for _, h := range c.hubs {
		if h != c.current {
			out = append(out, h)
		}
	}
	return out
}

// CreateUser adds a user (POST /v1/users).
func (c *Client) CreateUser(ctx context.Context, in UserCreate) (User, error) {
	var out User
	err := c.do(ctx, http.MethodPost, PathUsers, nil, in, &out)
	return out, err
}

// ListUsers lists every user (GET /v1/users).
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	var out []User
	if err := c.do(ctx, http.MethodGet, PathUsers, nil, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// GetUser reads one user (GET /v1/users/{id}).
func (c *Client) GetUser(ctx context.Context, id int64) (User, error) {
	var out User
	err := c.do(ctx, http.MethodGet, idPath(PathUsers, id), nil, nil, &out)
	return out, err
}

// UpdateUser changes a user (PATCH /v1/users/{id}).
func (c *Client) UpdateUser(ctx context.Context, id int64, in UserUpdate) (User, error) {
	var out User
	err := c.do(ctx, http.MethodPatch, idPath(PathUsers, id), nil, in, &out)
	return out, err
}

// CreateCrawler adds a crawler (POST /v1/crawlers).
func (c *Client) CreateCrawler(ctx context.Context, in CrawlerCreate) (Crawler, error) {
	var out Crawler
	err := c.do(ctx, http.MethodPost, PathCrawlers, nil, in, &out)
	return out, err
}

// ListCrawlers lists every crawler with its live state (GET /v1/crawlers).
func (c *Client) ListCrawlers(ctx context.Context) ([]Crawler, error) {
	var out []Crawler
	if err := c.do(ctx, http.MethodGet, PathCrawlers, nil, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// ListCrawlersAfter reads one page of the crawlers: up to limit whose id is
// above after, by id (GET /v1/crawlers?after=A&limit=N). An empty page ends
// the list.
func (c *Client) ListCrawlersAfter(ctx context.Context, after int64, limit int) ([]Crawler, error) {
	var out []Crawler
	q := url.Values{"after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(limit)}}
	if err := c.do(ctx, http.MethodGet, PathCrawlers, q, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// GetCrawler reads one crawler with its live state (GET /v1/crawlers/{id}).
func (c *Client) GetCrawler(ctx context.Context, id int64) (Crawler, error) {
	var out Crawler
	err := c.do(ctx, http.MethodGet, idPath(PathCrawlers, id), nil, nil, &out)
	return out, err
}

// UpdateCrawler changes a crawler (PATCH /v1/crawlers/{id}). Fields left nil
// keep their value. A non-nil empty Keywords clears the keyword filter: the
// body is written so that it survives CrawlerUpdate's omitempty.
func (c *Client) UpdateCrawler(ctx context.Context, id int64, in CrawlerUpdate) (Crawler, error) {
	body := map[string]any{}
	if in.Name != nil {
		body["name"] = *in.Name
	}
	if in.Query != nil {
		body["query"] = in.Query
	}
	if in.Keywords != nil {
		body["keywords"] = in.Keywords
	}
	if in.CommentLimit != nil {
		body["comment_limit"] = *in.CommentLimit
	}
	if in.Enabled != nil {
		body["enabled"] = *in.Enabled
	}
	if in.Retention != nil {
		body["retention"] = *in.Retention
	}
	var out Crawler
	err := c.do(ctx, http.MethodPatch, idPath(PathCrawlers, id), nil, body, &out)
	return out, err
}

// ComplianceRuns lists the latest X compliance checks (GET
// /v1/compliance/runs).
func (c *Client) ComplianceRuns(ctx context.Context) ([]ComplianceRun, error) {
	var out []ComplianceRun
	err := c.do(ctx, http.MethodGet, PathComplianceRuns, nil, nil, &out)
	return out, err
}

// RunCompliance runs an X compliance check now and returns its record when
// the job at X ends (POST /v1/compliance/runs).
func (c *Client) RunCompliance(ctx context.Context) (ComplianceRun, error) {
	var out ComplianceRun
	err := c.do(ctx, http.MethodPost, PathComplianceRuns, nil, nil, &out)
	return out, err
}

// Forget removes every comment of an author (an author_id or a handle) in
// every crawler of a source and keeps them from being stored again (POST
// /v1/forget); the answer counts the comments removed, per crawler.
func (c *Client) Forget(ctx context.Context, source, author string) (ForgetResult, error) {
	var out ForgetResult
	err := c.do(ctx, http.MethodPost, PathForget, nil, Forget{Source: source, Author: author}, &out)
	return out, err
}

// DeleteUser removes a user who has no crawlers left (DELETE
// /v1/users/{id}).
func (c *Client) DeleteUser(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, idPath(PathUsers, id), nil, nil, nil)
}

// DeleteCrawler removes a crawler (DELETE /v1/crawlers/{id}).
func (c *Client) DeleteCrawler(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, idPath(PathCrawlers, id), nil, nil, nil)
}

// ListNodes lists the live spawn nodes (GET /v1/nodes).
func (c *Client) ListNodes(ctx context.Context) ([]Node, error) {
	var out []Node
	if err := c.do(ctx, http.MethodGet, PathNodes, nil, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// DrainNode drains a spawn without stopping it (POST
// /v1/nodes/{id}/drain): the hub moves its crawlers to other spawns, make
// before break, and routes nothing to it any more. It returns the node,
// now draining.
func (c *Client) DrainNode(ctx context.Context, id string) (Node, error) {
	var out Node
	err := c.do(ctx, http.MethodPost, PathNodes+"/"+url.PathEscape(id)+"/drain", nil, struct{}{}, &out)
	return out, err
}

// Events lists the hub's recent events, oldest first (GET /v1/events).
func (c *Client) Events(ctx context.Context) ([]Event, error) {
	var out []Event
	if err := c.do(ctx, http.MethodGet, "/v1/events", nil, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// Reload asks the hub for a "hard" or "soft" reload (POST /v1/reload).
func (c *Client) Reload(ctx context.Context, kind string) (ReloadResponse, error) {
	var out ReloadResponse
	err := c.do(ctx, http.MethodPost, PathReload, nil, ReloadRequest{Kind: kind}, &out)
	return out, err
}

// RecentComments reads a crawler's latest n comments, newest first (GET
// /v1/crawlers/{id}/comments?n=N). n <= 0 leaves the count to the hub.
func (c *Client) RecentComments(ctx context.Context, crawlerID int64, n int) ([]Comment, error) {
	var q url.Values
	if n > 0 {
		q = url.Values{"n": {strconv.Itoa(n)}}
	}
	var out []Comment
	path := strings.Replace(PathComments, "{id}", strconv.FormatInt(crawlerID, 10), 1)
	if err := c.do(ctx, http.MethodGet, path, q, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// Health reads the hub's health document (GET /v1/health).
func (c *Client) Health(ctx context.Context) (HubHealth, error) {
	var out HubHealth
	err := c.do(ctx, http.MethodGet, PathHealth, nil, nil, &out)
	return out, err
}

func idPath(base string, id int64) string { return base + "/" + strconv.FormatInt(id, 10) }

// orEmpty turns a missing list (JSON null) into an empty one.
func orEmpty[T any](out []T) []T {
	if out == nil {
		return []T{}
	}
	return out
}

// do sends one request and decodes a 2xx answer into out (when not nil). A
// non-2xx answer becomes a *StatusError; transport failures are returned
// wrapped, so errors.Is and errors.As see the net and context errors.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("api: unable to encode %s %s: %w", method, path, err)
		}
		body = b
	}
	suffix := path
	if len(query) > 0 {
		suffix += "?" + query.Encode()
	}
	var lastErr error
	for _, hub := range c.order() {
		u, err := url.Parse(hub)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("api: hub URL %q must look like http://host:port", hub)
		}
		resp, err := c.send(ctx, hub, method, suffix, body, in != nil)
		if err != nil {
			var op *net.OpError
			if ctx.Err() == nil && (errors.As(err, &op) && op.Op == "dial" || method == http.MethodGet) {
				// Nothing reached this hub, or a read broke on the way
				// (repeating a read changes nothing): another may serve
				// the call. A write that may have reached a hub is not
				// sent to another.
				lastErr = err
				continue
			}
			return err
		}
		if resp.StatusCode == http.StatusServiceUnavailable && len(c.hubs) > 1 {
			lastErr = ErrorFromResponse(resp)
			resp.Body.Close()
			continue
		}
		return c.decode(resp, method, path, out)
	}
	return lastErr
}

// send makes one call to hub, following a standby's redirects to the
// leader, whom it remembers. A redirect from https to http is refused.
func (c *Client) send(ctx context.Context, hub, method, suffix string, body []byte, hasBody bool) (*http.Response, error) {
	for hop := 0; ; hop++ {
		var rd io.Reader
		if hasBody {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, hub+suffix, rd)
		if err != nil {
			return nil, fmt.Errorf("api: unable to build %s %s: %w", method, suffix, err)
		}
		req.Header.Set("Accept", "application/json")
		if hasBody {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("api: %s %s: %w", method, suffix, err)
		}
		if resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusPermanentRedirect {
			c.mu.Lock()
			c.current = hub
			c.mu.Unlock()
			return resp, nil
		}
		loc := resp.Header.Get("Location")
		next, ok := strings.CutSuffix(loc, suffix)
		if hop >= maxRedirects || !ok || next == "" || (strings.HasPrefix(hub, "https://") && !strings.HasPrefix(next, "https://")) {
			return resp, nil // decoded as the error it is
		}
		resp.Body.Close()
		hub = strings.TrimRight(next, "/")
	}
}

// decode reads an answer: a 2xx one into out (when not nil), any other as a
// *StatusError.
func (c *Client) decode(resp *http.Response, method, path string, out any) error {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return ErrorFromResponse(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes))
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("api: unable to read the answer to %s %s: %w", method, path, err)
	}
	if len(b) > MaxResponseBytes {
		return fmt.Errorf("api: answer to %s %s is larger than %d bytes", method, path, MaxResponseBytes)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("api: unable to decode the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// ErrorFromResponse reads an Error body (or, from something that is not a
// Black Widow server, plain text) from a non-2xx answer.
func ErrorFromResponse(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	var e Error
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return &StatusError{Code: resp.StatusCode, Message: e.Error}
	}
	msg := strings.TrimSpace(string(b))
	if msg == "" || strings.HasPrefix(msg, "<") {
		msg = http.StatusText(resp.StatusCode)
	}
	return &StatusError{Code: resp.StatusCode, Message: msg}
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

// Sources reads the source kinds' declarations the hub knows (GET
// /v1/sources).
func (c *Client) Sources(ctx context.Context) ([]SourceInfo, error) {
	var out []SourceInfo
	err := c.do(ctx, http.MethodGet, PathSources, nil, nil, &out)
	return out, err
}

// Scaling reads the hub's autoscaling signal (GET /v1/scaling).
func (c *Client) Scaling(ctx context.Context) (Scaling, error) {
	var out Scaling
	err := c.do(ctx, http.MethodGet, PathScaling, nil, nil, &out)
	return out, err
}

// CrawlerHistory reads a crawler's recent comments per minute (GET
// /v1/crawlers/{id}/history).
func (c *Client) CrawlerHistory(ctx context.Context, crawlerID int64) (CrawlerHistory, error) {
	var out CrawlerHistory
	path := strings.Replace(PathCrawlerHistory, "{id}", strconv.FormatInt(crawlerID, 10), 1)
	if err := c.do(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
		return CrawlerHistory{}, err
	}
	out.CommentsPerMinute = orEmpty(out.CommentsPerMinute)
	return out, nil
}
