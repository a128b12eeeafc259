package queue

import (
	"context"
	"errors"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// errNoSearch is returned by Search when the inner store cannot search.
var errNoSearch = errors.New("queue: the store cannot search comments")

// Search reads from the inner store when it searches (store.Searcher).
func (d *decorated) Search(ctx context.Context, crawlerID int64, q store.Search) (store.SearchPage, error) {
	s, ok := d.inner.(store.Searcher)
	if !ok {
		return store.SearchPage{}, errNoSearch
	}
	return s.Search(ctx, crawlerID, q)
}
