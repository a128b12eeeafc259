// Package store defines where a spawn writes the comments it counts, and
// chooses the implementation from the --store URI: file:// (JSON Lines on
// local disk, the embedded default) or cassandra://.
package store

import (
	"context"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Store persists comments. Implementations are safe for concurrent use.
type Store interface {
	// Write stores every comment durably, or returns an error after which
	// the caller retries the whole batch. Writing a comment whose
	// (crawler id, comment id) is already stored overwrites it, so retries
	// never make a second copy.
	Write(ctx context.Context, comments []api.Comment) error
	// Recent returns up to n of a crawler's comments, newest published first.
	Recent(ctx context.Context, crawlerID int64, n int) ([]api.Comment, error)
	// Close releases the store's resources.
	Close() error
}

// FreshWriter is a Store that can tell which comments of a batch it did not
// hold before. The spawn counts only those as usage, so a comment delivered
// again (a crawler moved to another spawn and its source re-sent an item the
// old spawn stored) costs nothing and usage stays equal to what is stored.
type FreshWriter interface {
	// WriteFresh is Write that also reports, per comment, whether this call
	// stored it for the first time. On error the flags still describe what
	// was durably written before the error, so a retry loses no count.
	WriteFresh(ctx context.Context, comments []api.Comment) ([]bool, error)
}
