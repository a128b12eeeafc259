package store

import (
	"context"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Search bounds: what one request may cost a store at most, whatever it
// asks for. A search that reaches a bound answers with the matches it has
// and a cursor to go on from.
const (
	// DefaultSearchScan is how many stored comments one search page reads
	// at most.
	DefaultSearchScan = 200_000
	// DefaultSearchBudget is how long one search page reads at most.
	DefaultSearchBudget = 3 * time.Second
)

// Search is one page of a search over a crawler's comments.
type Search struct {
	// Match tells the comments wanted; nil wants every comment.
	Match func(*api.Comment) bool
	// Query, when set, is the query of the language Match evaluates: a
	// store with a search index reads only the comments the index finds
	// for it (textindex.PlanOf), which Match then checks. Nil reads every
	// comment.
	Query *query.Query
	// Range bounds the comments by published time.
	Range Range
	// Cursor is where the search goes on (empty: the newest comment).
	Cursor string
	// Limit is how many matches a page holds at most.
	Limit int
	// MaxScan and Budget bound the comments read and the time spent on
	// this page (zero: DefaultSearchScan, DefaultSearchBudget).
	MaxScan int
	Budget  time.Duration
}

// SearchPage is one page of a search: the matches, newest day first,
// the cursor of the next page (empty when the search is complete) and how
// many stored comments this page read. A page may hold fewer than Limit
// matches, or none, and still have a next page: it stopped at a bound.
// With a next page, Frontier bounds what is left: no comment the search
// has yet to read was published after it (a merge of several crawlers'
// searches by time waits for nothing newer).
type SearchPage struct {
	Comments []api.Comment
	Next     string
	Scanned  int
	Frontier time.Time
}

// Searcher is a Store that searches a crawler's comments, newest day
// first, holding no more than one page of matches in memory. A cursor is
// opaque to callers and valid with the same crawler, range and query on
// any spawn sharing the store.
type Searcher interface {
	// Search returns the next page of s. A malformed cursor wraps
	// ErrCursor.
	Search(ctx context.Context, crawlerID int64, s Search) (SearchPage, error)
}

// Bounds returns s's scan bound and the time the page must answer by.
func (s Search) Bounds(now time.Time) (maxScan int, deadline time.Time) {
	maxScan, budget := s.MaxScan, s.Budget
	if maxScan <= 0 {
		maxScan = DefaultSearchScan
	}
	if budget <= 0 {
		budget = DefaultSearchBudget
	}
	return maxScan, now.Add(budget)
}

// Matches reports whether c is wanted by s.
func (s Search) Matches(c *api.Comment) bool {
	return s.Match == nil || s.Match(c)
}
