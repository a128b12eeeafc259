package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Paths of the analyst's reads: a term's curve, comparison, and export of a
// search.
const (
	// PathTermActivity is a term's comments per hour in a crawler
	// (GET ?window=&merge=).
	PathTermActivity = "/v1/crawlers/{id}/terms/{term}/activity"
	// PathCompare compares the volumes of crawlers or users
	// (GET ?crawlers=1,2,3|users=1,2&window=&step=).
	PathCompare = "/v1/compare"
	// PathCrawlerExport and PathUserExport stream every comment a search
	// matches (GET ?q=&since=&until=&format=jsonl|csv).
	PathCrawlerExport = "/v1/crawlers/{id}/comments/export"
	PathUserExport    = "/v1/users/{id}/comments/export"
	// MaxCompared is how many crawlers or users one comparison holds.
	MaxCompared = 10
)

// TermStep is how many comments carried a term in one hour.
type TermStep struct {
	At    time.Time `json:"at"`
	Count int64     `json:"count"`
}

// TermActivity is the answer of GET /v1/crawlers/{id}/terms/{term}/activity:
// the term's comments per hour over the window, oldest first. Merged is
// set when a hashtag and the word it spells were counted together; Terms
// lists the spellings counted.
type TermActivity struct {
	Term   string     `json:"term"`
	Terms  []string   `json:"terms"`
	Merged bool       `json:"merged"`
	Window string     `json:"window"`
	Step   string     `json:"step"`
	Steps  []TermStep `json:"steps"`
}

// CompareStep is one step of one compared crawler or user: its comments
// and their share of all the compared comments in that step (0 when there
// were none).
type CompareStep struct {
	At       time.Time `json:"at"`
	Comments int64     `json:"comments"`
	Share    float64   `json:"share"`
	// Positive, Neutral and Negative split Comments by sentiment label, as
	// in an activity step.
	Positive int64 `json:"positive"`
	Neutral  int64 `json:"neutral"`
	Negative int64 `json:"negative"`
}

// CompareSeries is one compared crawler or user.
type CompareSeries struct {
	CrawlerID int64         `json:"crawler_id,omitempty"`
	UserID    int64         `json:"user_id,omitempty"`
	Label     string        `json:"label"`
	Total     int64         `json:"total"`
	Share     float64       `json:"share"`
	Steps     []CompareStep `json:"steps"`
}

// Comparison is the answer of GET /v1/compare: share of voice, each
// series' comments per step and its share of all compared comments.
type Comparison struct {
	Window string          `json:"window"`
	Step   string          `json:"step"`
	Series []CompareSeries `json:"series"`
}

// TermActivity reads a term's comments per hour in a crawler; merge counts
// a hashtag and the word it spells together.
func (c *Client) TermActivity(ctx context.Context, crawlerID int64, term, window string, merge bool) (TermActivity, error) {
	path := strings.Replace(pathWithID(PathTermActivity, crawlerID), "{term}", url.PathEscape(term), 1)
	v := url.Values{}
	if window != "" {
		v.Set("window", window)
	}
	if merge {
		v.Set("merge", "true")
	}
	var out TermActivity
	err := c.do(ctx, http.MethodGet, path, v, nil, &out)
	return out, err
}

// Compare reads the volumes of crawlers (or, with users set, of users)
// side by side.
func (c *Client) Compare(ctx context.Context, ids []int64, users bool, window, step string) (Comparison, error) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	v := url.Values{}
	if users {
		v.Set("users", strings.Join(parts, ","))
	} else {
		v.Set("crawlers", strings.Join(parts, ","))
	}
	if window != "" {
		v.Set("window", window)
	}
	if step != "" {
		v.Set("step", step)
	}
	var out Comparison
	err := c.do(ctx, http.MethodGet, PathCompare, v, nil, &out)
	return out, err
}

// PathCrawlerHistories reads the rate histories of several crawlers at
// once (GET ?ids=1,2,3), and the rate of all crawlers together.
const PathCrawlerHistories = "/v1/crawlers/history"

// MaxHistoryIDs is how many crawlers one GET /v1/crawlers/history names.
const MaxHistoryIDs = 500

// CrawlerHistories is the answer of GET /v1/crawlers/history: the
// histories of the crawlers asked for, in the order asked, and Total, the
// comments per minute of every crawler together (its crawler_id is 0).
type CrawlerHistories struct {
	Histories []CrawlerHistory `json:"histories"`
	Total     CrawlerHistory   `json:"total"`
}

// CrawlerHistories reads several crawlers' rate histories in one request.
func (c *Client) CrawlerHistories(ctx context.Context, ids []int64) (CrawlerHistories, error) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	v := url.Values{}
	if len(parts) > 0 {
		v.Set("ids", strings.Join(parts, ","))
	}
	var out CrawlerHistories
	err := c.do(ctx, http.MethodGet, PathCrawlerHistories, v, nil, &out)
	return out, err
}
