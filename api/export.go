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

// Paths of the comment export and query validation.
const (
	// PathNodeExport is where the hub reads a page of a crawler's stored
	// comments from a spawn (GET ?crawler_id=ID&since=&until=&cursor=&limit=).
	PathNodeExport = "/v1/comments/export"
	// PathValidateQuery checks a crawler query as creating the crawler
	// would, and stores nothing.
	PathValidateQuery = "/v1/queries/validate"
)

// Export page sizes: the hub's default and the most one page may hold.
const (
	DefaultExportLimit = 500
	MaxExportLimit     = 1000
)

// ExportQuery selects the comments of a paged read of
// GET /v1/crawlers/{id}/comments: published at or after Since and before
// Until (zero: open), from Cursor (empty: the first page).
type ExportQuery struct {
	Since, Until time.Time
	Cursor       string
	// Limit is the page size; zero leaves it to the hub.
	Limit int
}

// values are q as URL parameters. A paged read always names its limit, so
// the hub answers the paged form even for a first page with no bounds.
func (q ExportQuery) values() url.Values {
	v := url.Values{}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultExportLimit
	}
	v.Set("limit", strconv.Itoa(limit))
	return v
}

// CommentPage is one page of a crawler's stored comments. NextCursor is
// empty on the last page; otherwise it is passed back as cursor for the
// next one. Comments come day by day, oldest day first.
type CommentPage struct {
	Comments   []Comment `json:"comments"`
	NextCursor string    `json:"next_cursor"`
}

// QueryValidate is the body of POST /v1/queries/validate: what a crawler
// would be created with. Query is one string (a comma list is OR); for rss
// it is the feed URLs and Keywords the filter.
type QueryValidate struct {
	// Source is the crawler's kind; empty checks a query of the language
	// alone (an alert's match rule).
	Source   string `json:"source,omitempty"`
	Query    string `json:"query"`
	Keywords string `json:"keywords,omitempty"`
}

// QueryValidation is the answer to a valid query: its canonical form (for
// rss, the feed URLs joined by commas), the canonical filter, and the uuid
// that places it on a node.
type QueryValidation struct {
	Canonical         string `json:"canonical"`
	KeywordsCanonical string `json:"keywords_canonical,omitempty"`
	QueryUUID         string `json:"query_uuid"`
}

// ExportComments reads one page of a crawler's stored comments (GET
// /v1/crawlers/{id}/comments with since, until, cursor and limit).
func (c *Client) ExportComments(ctx context.Context, crawlerID int64, q ExportQuery) (CommentPage, error) {
	var out CommentPage
	path := strings.Replace(PathComments, "{id}", strconv.FormatInt(crawlerID, 10), 1)
	if err := c.do(ctx, http.MethodGet, path, q.values(), nil, &out); err != nil {
		return CommentPage{}, err
	}
	out.Comments = orEmpty(out.Comments)
	return out, nil
}

// ValidateQuery checks a crawler query (POST /v1/queries/validate).
func (c *Client) ValidateQuery(ctx context.Context, in QueryValidate) (QueryValidation, error) {
	var out QueryValidation
	err := c.do(ctx, http.MethodPost, PathValidateQuery, nil, in, &out)
	return out, err
}

// ExportComments reads one page of a crawler's comments from the store
// through the spawn (GET /v1/comments/export).
func (c *NodeClient) ExportComments(ctx context.Context, crawlerID int64, q ExportQuery) (CommentPage, error) {
	v := q.values()
	v.Set("crawler_id", strconv.FormatInt(crawlerID, 10))
	var out CommentPage
	if err := c.do(ctx, c.opts.Timeouts.Comments, http.MethodGet, PathNodeExport, v, nil, &out); err != nil {
		return CommentPage{}, err
	}
	out.Comments = orEmpty(out.Comments)
	return out, nil
}

// ParseExportQuery reads since, until, cursor and limit from a request's
// parameters, as the hub and the spawn both accept them: RFC 3339 times,
// since before until, and a limit between 1 and MaxExportLimit (absent:
// DefaultExportLimit).
func ParseExportQuery(v url.Values) (ExportQuery, error) {
	q := ExportQuery{Cursor: v.Get("cursor"), Limit: DefaultExportLimit}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return ExportQuery{}, fmt.Errorf("%s must be an RFC 3339 time like 2024-05-01T00:00:00Z, got %q", p.name, s)
		}
		*p.to = t.UTC()
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return ExportQuery{}, fmt.Errorf("since (%s) must be before until (%s)", v.Get("since"), v.Get("until"))
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxExportLimit {
			return ExportQuery{}, fmt.Errorf("limit must be between 1 and %d, got %q", MaxExportLimit, s)
		}
		q.Limit = n
	}
	return q, nil
}
