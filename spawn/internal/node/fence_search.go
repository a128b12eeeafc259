package node

import (
	"context"
	"errors"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Searcher = (*FencedStore)(nil)

// Search reads from the inner store when it searches.
func (f *FencedStore) Search(ctx context.Context, crawlerID int64, q store.Search) (store.SearchPage, error) {
	if s, ok := f.inner.(store.Searcher); ok {
		return s.Search(ctx, crawlerID, q)
	}
	return store.SearchPage{}, errors.New("node: this spawn's store cannot search comments")
}
