package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Analytics windows and steps the hub serves.
const (
	Window1h  = "1h"
	Window24h = "24h"
	Window7d  = "7d"
)

// Windows maps every window name to its length.
var Windows = map[string]time.Duration{Window1h: time.Hour, Window24h: 24 * time.Hour, Window7d: 7 * 24 * time.Hour}

// Paths of the analytics and conversation reads.
const (
	PathCrawlerTerms    = "/v1/crawlers/{id}/terms"
	PathUserTerms       = "/v1/users/{id}/terms"
	PathCrawlerActivity = "/v1/crawlers/{id}/activity"
	PathSuggestions     = "/v1/crawlers/{id}/suggestions"
	PathThread          = "/v1/crawlers/{id}/threads/{comment_id}"
	// PathNodeThread is where the hub reads a conversation from a spawn's
	// store (GET ?crawler_id=ID&comment_id=ID).
	PathNodeThread = "/v1/comments/thread"
)

// TermCount is a term and how many comments carried it.
type TermCount struct {
	Term  string `json:"term"`
	Count int64  `json:"count"`
}

// Terms is the answer of GET /v1/crawlers/{id}/terms and
// GET /v1/users/{id}/terms: the most frequent terms of the window first.
type Terms struct {
	Window string      `json:"window"`
	Terms  []TermCount `json:"terms"`
}

// ActivityStep is one step of a crawler's activity: comments counted in
// [At, At+step) and an estimate of their distinct authors.
type ActivityStep struct {
	At       time.Time `json:"at"`
	Comments int64     `json:"comments"`
	Authors  int64     `json:"authors"`
	// Positive, Neutral and Negative split Comments by sentiment label;
	// they sum to Comments: a comment in a language the product does not
	// score counts as neutral.
	Positive int64 `json:"positive"`
	Neutral  int64 `json:"neutral"`
	Negative int64 `json:"negative"`
}

// Activity is the answer of GET /v1/crawlers/{id}/activity, oldest step
// first.
type Activity struct {
	Window string         `json:"window"`
	Step   string         `json:"step"`
	Steps  []ActivityStep `json:"steps"`
}

// Suggestion is a candidate query term for a crawler: a hashtag or phrase
// that co-occurs with its matches. Score sums the engagement scores of its
// sightings (each in (0,1), 0.5 when the source gives no engagement), so it
// grows with frequency and engagement.
type Suggestion struct {
	Term  string  `json:"term"`
	Score float64 `json:"score"`
	Count int64   `json:"count"`
}

// Suggestions is the answer of GET /v1/crawlers/{id}/suggestions, best
// first.
type Suggestions struct {
	CrawlerID int64        `json:"crawler_id"`
	Terms     []Suggestion `json:"terms"`
}

// Thread is the answer of GET /v1/crawlers/{id}/threads/{comment_id}: the
// conversation a comment belongs to, by published time.
type Thread struct {
	ThreadID string    `json:"thread_id"`
	Comments []Comment `json:"comments"`
}

// IncrementAnalytics travels inside a usage increment (Increment.Analytics)
// and describes the same comments, so the hub applies it exactly when it
// applies their usage: once.
type IncrementAnalytics struct {
	// Minutes count the comments per minute of their fetch time, with a
	// sketch of their authors.
	Minutes []MinuteActivity `json:"minutes,omitempty"`
	// Terms are the comments' term counts per hour of their fetch time.
	Terms []HourTerms `json:"terms,omitempty"`
	// Candidates are terms not in the crawler's query that co-occur with
	// its matches, best first.
	Candidates []Suggestion `json:"candidates,omitempty"`
	// Authors are the comments per hour of their fetch time by author,
	// every author of them (exact top authors are summed from these).
	Authors []HourAuthors `json:"authors,omitempty"`
	// Langs are the comments per hour of their fetch time by language.
	Langs []HourLangs `json:"langs,omitempty"`
}

// MinuteActivity is the comments of one minute.
type MinuteActivity struct {
	At       time.Time `json:"at"`
	Comments int64     `json:"comments"`
	// Authors is a HyperLogLog sketch (github.com/axiomhq/hyperloglog
	// binary form) of the comments' authors.
	Authors []byte `json:"authors,omitempty"`
	// Positive and Negative count the comments of each sentiment label;
	// the rest of Comments (neutral, and those without a sentiment) are
	// neutral.
	Positive int64 `json:"positive,omitempty"`
	Negative int64 `json:"negative,omitempty"`
}

// HourTerms is the term counts of one hour: the top terms and, in Other,
// the occurrences of the terms cut off.
type HourTerms struct {
	At    time.Time   `json:"at"`
	Terms []TermCount `json:"terms"`
	Other int64       `json:"other,omitempty"`
}

func pathWithID(pattern string, id int64) string {
	return strings.Replace(pattern, "{id}", strconv.FormatInt(id, 10), 1)
}

func windowValues(window string, n int) url.Values {
	v := url.Values{}
	if window != "" {
		v.Set("window", window)
	}
	if n > 0 {
		v.Set("n", strconv.Itoa(n))
	}
	return v
}

// CrawlerTerms reads a crawler's top terms (GET /v1/crawlers/{id}/terms);
// an empty window and n 0 leave them to the hub.
func (c *Client) CrawlerTerms(ctx context.Context, id int64, window string, n int) (Terms, error) {
	var out Terms
	err := c.do(ctx, http.MethodGet, pathWithID(PathCrawlerTerms, id), windowValues(window, n), nil, &out)
	out.Terms = orEmpty(out.Terms)
	return out, err
}

// UserTerms reads the top terms of all of a user's crawlers.
func (c *Client) UserTerms(ctx context.Context, id int64, window string, n int) (Terms, error) {
	var out Terms
	err := c.do(ctx, http.MethodGet, pathWithID(PathUserTerms, id), windowValues(window, n), nil, &out)
	out.Terms = orEmpty(out.Terms)
	return out, err
}

// CrawlerActivity reads a crawler's comments and authors per step.
func (c *Client) CrawlerActivity(ctx context.Context, id int64, window, step string) (Activity, error) {
	v := windowValues(window, 0)
	if step != "" {
		v.Set("step", step)
	}
	var out Activity
	err := c.do(ctx, http.MethodGet, pathWithID(PathCrawlerActivity, id), v, nil, &out)
	out.Steps = orEmpty(out.Steps)
	return out, err
}

// CrawlerSuggestions reads the candidate query terms of a crawler.
func (c *Client) CrawlerSuggestions(ctx context.Context, id int64) (Suggestions, error) {
	var out Suggestions
	err := c.do(ctx, http.MethodGet, pathWithID(PathSuggestions, id), nil, nil, &out)
	out.Terms = orEmpty(out.Terms)
	return out, err
}

// Thread reads the conversation of one of a crawler's comments.
func (c *Client) Thread(ctx context.Context, crawlerID int64, commentID string) (Thread, error) {
	path := strings.Replace(pathWithID(PathThread, crawlerID), "{comment_id}", url.PathEscape(commentID), 1)
	var out Thread
	err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	out.Comments = orEmpty(out.Comments)
	return out, err
}

// Thread reads a conversation from the spawn's store (GET
// /v1/comments/thread).
func (c *NodeClient) Thread(ctx context.Context, crawlerID int64, commentID string) (Thread, error) {
	v := url.Values{}
	v.Set("crawler_id", strconv.FormatInt(crawlerID, 10))
	v.Set("comment_id", commentID)
	var out Thread
	if err := c.do(ctx, c.opts.Timeouts.Comments, http.MethodGet, PathNodeThread, v, nil, &out); err != nil {
		return Thread{}, err
	}
	out.Comments = orEmpty(out.Comments)
	return out, nil
}
