package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Paths of comment search.
const (
	// PathUserComments searches the comments of every crawler of a user
	// (GET ?q=&since=&until=&cursor=&limit=). A crawler's comments are
	// searched at PathComments with q.
	PathUserComments = "/v1/users/{id}/comments"
	// PathNodeSearch is where the hub searches a crawler's stored comments
	// through a spawn (GET ?crawler_id=ID&q=&since=&until=&cursor=&limit=).
	PathNodeSearch = "/v1/comments/search"
	// MaxSearchQueryBytes caps the q of a search.
	MaxSearchQueryBytes = 4096
)

// SearchQuery is one page of a comment search: the comments the query
// (the query language of crawlers; empty matches every comment) matches,
// in the range and from the cursor of ExportQuery.
type SearchQuery struct {
	ExportQuery
	Q string
}

// values are q as URL parameters; q is always sent, so the hub answers a
// search even for an empty query.
func (q SearchQuery) values() url.Values {
	v := q.ExportQuery.values()
	v.Set("q", q.Q)
	return v
}

// SearchPage is one page of a comment search, newest first within each
// crawler: the matches, the cursor of the next page (empty when the
// search is complete) and how many stored comments were read for it. A
// page stops at a bound on what one request may read, so it can hold
// fewer matches than asked, or none, and still have a next page.
type SearchPage struct {
	Comments   []Comment `json:"comments"`
	NextCursor string    `json:"next_cursor"`
	Scanned    int64     `json:"scanned"`
	// Frontier, with a next cursor, bounds what the search has left to
	// read: nothing published after it. A merge of several crawlers'
	// searches by time emits nothing older than it before reading on.
	Frontier *time.Time `json:"frontier,omitempty"`
}

// ParseSearchQuery reads q, since, until, cursor and limit as the hub and
// the spawn both accept them (see ParseExportQuery). The query's syntax is
// checked by its parser, not here.
func ParseSearchQuery(v url.Values) (SearchQuery, error) {
	eq, err := ParseExportQuery(v)
	if err != nil {
		return SearchQuery{}, err
	}
	q := SearchQuery{ExportQuery: eq, Q: strings.TrimSpace(v.Get("q"))}
	if len(q.Q) > MaxSearchQueryBytes {
		return SearchQuery{}, fmt.Errorf("q is %d bytes long, at most %d allowed", len(q.Q), MaxSearchQueryBytes)
	}
	return q, nil
}

// SearchComments reads one page of a search over a crawler's stored
// comments (GET /v1/crawlers/{id}/comments with q).
func (c *Client) SearchComments(ctx context.Context, crawlerID int64, q SearchQuery) (SearchPage, error) {
	return c.search(ctx, pathWithID(PathComments, crawlerID), q)
}

// SearchUserComments reads one page of a search over the stored comments
// of every crawler of a user (GET /v1/users/{id}/comments).
func (c *Client) SearchUserComments(ctx context.Context, userID int64, q SearchQuery) (SearchPage, error) {
	return c.search(ctx, pathWithID(PathUserComments, userID), q)
}

func (c *Client) search(ctx context.Context, path string, q SearchQuery) (SearchPage, error) {
	var out SearchPage
	if err := c.do(ctx, http.MethodGet, path, q.values(), nil, &out); err != nil {
		return SearchPage{}, err
	}
	out.Comments = orEmpty(out.Comments)
	return out, nil
}

// SearchComments searches one page of a crawler's stored comments through
// the spawn (GET /v1/comments/search).
func (c *NodeClient) SearchComments(ctx context.Context, crawlerID int64, q SearchQuery) (SearchPage, error) {
	v := q.values()
	v.Set("crawler_id", strconv.FormatInt(crawlerID, 10))
	var out SearchPage
	if err := c.do(ctx, c.opts.Timeouts.Comments, http.MethodGet, PathNodeSearch, v, nil, &out); err != nil {
		return SearchPage{}, err
	}
	out.Comments = orEmpty(out.Comments)
	return out, nil
}
