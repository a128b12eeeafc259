package api

import (
	"context"
	"net/http"
	"time"
)

// Paths of the voices and breakdowns of a crawler or a user.
const (
	// PathCrawlerAuthors and PathUserAuthors list the authors with the most
	// comments over a window (GET ?window=1h|24h|7d&n=N).
	PathCrawlerAuthors = "/v1/crawlers/{id}/authors"
	PathUserAuthors    = "/v1/users/{id}/authors"
	// PathCrawlerBreakdown and PathUserBreakdown split the comments of a
	// window by source kind and by language (GET ?window=).
	PathCrawlerBreakdown = "/v1/crawlers/{id}/breakdown"
	PathUserBreakdown    = "/v1/users/{id}/breakdown"
)

// AuthorCount is one author's comments over a window and the engagement
// those comments had when they were fetched (summed; zero for sources that
// report none).
type AuthorCount struct {
	// Author is the name people know the author by (the newest seen);
	// AuthorID is the service's stable id of the account when the source
	// has one.
	Author     string     `json:"author"`
	AuthorID   string     `json:"author_id"`
	Comments   int64      `json:"comments"`
	Engagement Engagement `json:"engagement"`
}

// Authors is the answer of GET /v1/crawlers/{id}/authors and
// GET /v1/users/{id}/authors: the authors with the most comments first,
// counted exactly from every comment stored in the window.
type Authors struct {
	Window  string        `json:"window"`
	Authors []AuthorCount `json:"authors"`
	// Folded counts the comments of authors a crawler hour of the window
	// folded away (it kept its 20,000 authors with the most comments); 0,
	// the usual case, means the list is exact.
	Folded int64 `json:"folded,omitempty"`
}

// ShareCount is one part of a breakdown: its comments and their share of
// the window's comments.
type ShareCount struct {
	// Key is the source kind or the language (a BCP 47 primary subtag);
	// the empty language counts comments whose language is not known.
	Key      string  `json:"key"`
	Comments int64   `json:"comments"`
	Share    float64 `json:"share"`
}

// Breakdown is the answer of GET /v1/crawlers/{id}/breakdown and
// GET /v1/users/{id}/breakdown: a window's comments by source kind and by
// language, most comments first.
type Breakdown struct {
	Window    string       `json:"window"`
	Comments  int64        `json:"comments"`
	Sources   []ShareCount `json:"sources"`
	Languages []ShareCount `json:"languages"`
}

// HourAuthors is the comments of one hour of an increment by author
// (IncrementAnalytics.Authors).
type HourAuthors struct {
	At      time.Time     `json:"at"`
	Authors []AuthorTally `json:"authors"`
}

// AuthorTally is one author's comments within an increment's hour, and
// the reposts and likes they had.
type AuthorTally struct {
	Author   string `json:"author,omitempty"`
	AuthorID string `json:"author_id,omitempty"`
	Comments int64  `json:"comments"`
	Reposts  int64  `json:"reposts,omitempty"`
	Likes    int64  `json:"likes,omitempty"`
}

// HourLangs is the comments of one hour of an increment by language
// (IncrementAnalytics.Langs); the empty language is "not known".
type HourLangs struct {
	At    time.Time   `json:"at"`
	Langs []LangTally `json:"langs"`
}

// LangTally is one language's comments within an increment's hour.
type LangTally struct {
	Lang     string `json:"lang,omitempty"`
	Comments int64  `json:"comments"`
}

// CrawlerAuthors reads a crawler's top authors; an empty window and n 0
// leave them to the hub.
func (c *Client) CrawlerAuthors(ctx context.Context, id int64, window string, n int) (Authors, error) {
	var out Authors
	err := c.do(ctx, http.MethodGet, pathWithID(PathCrawlerAuthors, id), windowValues(window, n), nil, &out)
	out.Authors = orEmpty(out.Authors)
	return out, err
}

// UserAuthors reads the top authors of all of a user's crawlers.
func (c *Client) UserAuthors(ctx context.Context, id int64, window string, n int) (Authors, error) {
	var out Authors
	err := c.do(ctx, http.MethodGet, pathWithID(PathUserAuthors, id), windowValues(window, n), nil, &out)
	out.Authors = orEmpty(out.Authors)
	return out, err
}

// CrawlerBreakdown reads a crawler's comments by source and language.
func (c *Client) CrawlerBreakdown(ctx context.Context, id int64, window string) (Breakdown, error) {
	var out Breakdown
	err := c.do(ctx, http.MethodGet, pathWithID(PathCrawlerBreakdown, id), windowValues(window, 0), nil, &out)
	out.Sources, out.Languages = orEmpty(out.Sources), orEmpty(out.Languages)
	return out, err
}

// UserBreakdown reads a user's comments by source and language.
func (c *Client) UserBreakdown(ctx context.Context, id int64, window string) (Breakdown, error) {
	var out Breakdown
	err := c.do(ctx, http.MethodGet, pathWithID(PathUserBreakdown, id), windowValues(window, 0), nil, &out)
	out.Sources, out.Languages = orEmpty(out.Sources), orEmpty(out.Languages)
	return out, err
}
