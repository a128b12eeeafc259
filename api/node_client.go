package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// PathNodeComments is where the hub reads a crawler's latest comments from a
// spawn (GET ?crawler_id=ID&n=N); spawns share the comment store.
const PathNodeComments = "/v1/comments"

// PathHealthz answers 200 on both servers while they live.
const PathHealthz = "/healthz"

// MaxNodeAnswerBytes is the default cap on one spawn answer a NodeClient
// reads: a poll of a node running thousands of subscribers stays far below
// it, and a misbehaving spawn cannot exhaust the hub's memory.
const MaxNodeAnswerBytes = 16 << 20

// NodeTimeouts bounds each kind of call a NodeClient makes. The caller picks
// them: a poll is bounded by how often nodes are polled, while a request
// that makes a spawn read the comment store is not. A zero timeout leaves
// the call to its context's deadline.
type NodeTimeouts struct {
	// Poll bounds the batched status poll.
	Poll time.Duration
	// Subscribers bounds subscriber upserts and removals.
	Subscribers time.Duration
	// Recover bounds reading a lost node's usage back from the store.
	Recover time.Duration
	// Comments bounds reading a crawler's latest comments from the store.
	Comments time.Duration
}

// NodeOptions configure a NodeClient.
type NodeOptions struct {
	// Token is the shared node token, sent as "Authorization: Bearer
	// <token>" (nothing when empty).
	Token string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	Timeouts   NodeTimeouts
	// MaxAnswerBytes caps an answer; zero means MaxNodeAnswerBytes.
	MaxAnswerBytes int64
}

// NodeClient calls one spawn's node API: it is how the hub polls a spawn,
// sends it subscribers and asks it to read the shared store. The epoch and
// sequence number travel in each request, as the spawn expects them; a
// non-2xx answer becomes a *StatusError (a spawn refuses a request from an
// epoch or sequence it does not serve with 409 Conflict). It is safe for
// concurrent use.
type NodeClient struct {
	baseURL string
	opts    NodeOptions
}

// NewNodeClient returns a client of the spawn at baseURL (e.g.
// "http://10.0.0.5:8701").
func NewNodeClient(baseURL string, opts NodeOptions) *NodeClient {
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.MaxAnswerBytes <= 0 {
		opts.MaxAnswerBytes = MaxNodeAnswerBytes
	}
	return &NodeClient{baseURL: strings.TrimRight(baseURL, "/"), opts: opts}
}

// BaseURL is the spawn URL the client talks to.
func (c *NodeClient) BaseURL() string { return c.baseURL }

// Poll sends the hub's batched poll (POST /v1/poll) and returns the spawn's
// statuses and usage increments.
func (c *NodeClient) Poll(ctx context.Context, req PollRequest) (PollResponse, error) {
	var out PollResponse
	err := c.do(ctx, c.opts.Timeouts.Poll, http.MethodPost, PathPoll, nil, req, &out)
	return out, err
}

// UpsertSubscribers creates or updates subscribers on the spawn (PUT
// /v1/subscribers); the answer has one result per subscriber.
func (c *NodeClient) UpsertSubscribers(ctx context.Context, req SubscribersRequest) (SubscribersResponse, error) {
	var out SubscribersResponse
	err := c.do(ctx, c.opts.Timeouts.Subscribers, http.MethodPut, PathSubscribers, nil, req, &out)
	return out, err
}

// RemoveSubscribers stops subscribers on the spawn (POST
// /v1/subscribers/remove).
func (c *NodeClient) RemoveSubscribers(ctx context.Context, req RemoveRequest) error {
	return c.do(ctx, c.opts.Timeouts.Subscribers, http.MethodPost, PathSubscribersRemove, nil, req, nil)
}

// RecoverUsage asks the spawn to read a lost node's unreported usage back
// from the shared store (POST /v1/usage/recover). A spawn whose store keeps
// no journal answers 501 Not Implemented.
func (c *NodeClient) RecoverUsage(ctx context.Context, req RecoverRequest) (RecoverResponse, error) {
	var out RecoverResponse
	err := c.do(ctx, c.opts.Timeouts.Recover, http.MethodPost, PathRecover, nil, req, &out)
	return out, err
}

// Retract hands the spawn retractions to apply to its store now (POST
// /v1/retractions) and returns what its store removed, per crawler. A
// spawn whose store cannot remove comments answers 501 Not Implemented.
func (c *NodeClient) Retract(ctx context.Context, req RetractRequest) (RetractResponse, error) {
	var out RetractResponse
	err := c.do(ctx, c.opts.Timeouts.Recover, http.MethodPost, PathNodeRetract, nil, req, &out)
	return out, err
}

// Compliance asks the spawn to check X crawlers' stored posts with X's
// batch compliance API (POST /v1/compliance); it lasts as long as the job
// at X, bounded by ctx. A spawn without X API v2 credentials answers 501.
func (c *NodeClient) Compliance(ctx context.Context, req ComplianceRequest) (ComplianceResult, error) {
	var out ComplianceResult
	err := c.do(ctx, 0, http.MethodPost, PathNodeCompliance, nil, req, &out)
	return out, err
}

// RecentComments reads a crawler's latest n comments, newest first, from
// the store through the spawn (GET /v1/comments?crawler_id=ID&n=N).
func (c *NodeClient) RecentComments(ctx context.Context, crawlerID int64, n int) ([]Comment, error) {
	q := url.Values{"crawler_id": {strconv.FormatInt(crawlerID, 10)}, "n": {strconv.Itoa(n)}}
	var out []Comment
	if err := c.do(ctx, c.opts.Timeouts.Comments, http.MethodGet, PathNodeComments, q, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Probe checks that the spawn answers at all (GET /healthz): it is how the
// hub tells a dead or unreachable spawn quickly from one whose poll failed
// once. The context bounds it.
func (c *NodeClient) Probe(ctx context.Context) error {
	return c.do(ctx, 0, http.MethodGet, PathHealthz, nil, nil, nil)
}

// do sends one request, bounded by timeout when it is positive, with in as
// its JSON body (none when nil), and decodes a 2xx answer into out (when not
// nil; the answer is otherwise read and dropped, so the connection is
// reused). Errors name the method and URL and wrap the cause, so errors.Is
// and errors.As see context, net and *StatusError values.
func (c *NodeClient) do(ctx context.Context, timeout time.Duration, method, path string, query url.Values, in, out any) error {
	target := c.baseURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("api: unable to encode %s %s: %w", method, target, err)
		}
		body = bytes.NewReader(b)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return fmt.Errorf("api: unable to build %s %s: %w", method, target, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("api: %s %s: %w", method, target, ErrorFromResponse(resp))
	}
	answer := io.LimitReader(resp.Body, c.opts.MaxAnswerBytes+1)
	if out == nil {
		_, _ = io.Copy(io.Discard, answer)
		return nil
	}
	b, err := io.ReadAll(answer)
	if err != nil {
		return fmt.Errorf("api: unable to read the answer to %s %s: %w", method, target, err)
	}
	if int64(len(b)) > c.opts.MaxAnswerBytes {
		return fmt.Errorf("api: answer to %s %s is larger than %d bytes", method, target, c.opts.MaxAnswerBytes)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("api: unable to decode the answer to %s %s: %w", method, target, err)
	}
	return nil
}
