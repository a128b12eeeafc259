package queue

import (
	"context"
	"errors"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// errNoExport is returned by Export when the inner store cannot export.
var errNoExport = errors.New("queue: the store cannot export comments")

// Export reads from the inner store when it exports (store.Exporter).
func (d *decorated) Export(ctx context.Context, crawlerID int64, r store.Range, cursor string, limit int) (store.Page, error) {
	ex, ok := d.inner.(store.Exporter)
	if !ok {
		return store.Page{}, errNoExport
	}
	return ex.Export(ctx, crawlerID, r, cursor, limit)
}
