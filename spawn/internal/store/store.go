// Package store defines where a spawn writes the comments it counts, and
// chooses the implementation from the --store URI: file:// (JSON Lines on
// local disk, the embedded default) or cassandra://.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Store persists comments. Implementations are safe for concurrent use.
type Store interface {
	// Write stores every comment durably, or returns an error after which
	// the caller retries the whole batch. Writing a comment whose
	// (crawler id, comment id) is already stored overwrites it, so retries
	// never make a second copy. The slice is the caller's again once Write
	// returns: a store keeps copies, never the slice.
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

// Intent announces a usage increment before its comments are written: the
// node and sequence number it will be reported under, and where its
// comments go.
type Intent struct {
	NodeID    string
	Seq       uint64
	CrawlerID int64
	UserID    int64
	Instance  uint64
	LeaseSeq  uint64
	// Days are the UTC days (of published time) of the comments.
	Days []time.Time
}

// UsageJournal is a Store that can give back the usage a spawn counted but
// never reported. A spawn records its increments' intents before writing
// their comments, and writes each new comment with the increment it counts
// under (api.Comment.NodeID and IncSeq). When the spawn dies, any spawn can
// read back, from the comments actually stored, exactly how many each
// increment holds.
type UsageJournal interface {
	// Intend durably records the intents. Recording one again is harmless.
	Intend(ctx context.Context, intents []Intent) error
	// Recover counts, for every intent of node after afterSeq, the comments
	// stored under it.
	Recover(ctx context.Context, nodeID string, afterSeq uint64) ([]api.Increment, error)
}

// Range bounds an export by published time: Since inclusive, Until
// exclusive; a zero time leaves that side open.
type Range struct {
	Since, Until time.Time
}

// Contains reports whether t falls in the range.
func (r Range) Contains(t time.Time) bool {
	return (r.Since.IsZero() || !t.Before(r.Since)) && (r.Until.IsZero() || t.Before(r.Until))
}

// Page is one page of an export: the comments, and the cursor of the next
// page, empty when the export is complete.
type Page struct {
	Comments []api.Comment
	Next     string
}

// Exporter is a Store that reads all of a crawler's comments page by page,
// day by day from the oldest, holding no more than one page in memory.
// Within a day comments come in the store's own order. A cursor is opaque to
// callers and valid with the same crawler and range on any spawn sharing
// the store.
type Exporter interface {
	// Export returns up to limit comments of a crawler in r, starting at
	// cursor (empty: the beginning). A malformed cursor wraps ErrCursor.
	Export(ctx context.Context, crawlerID int64, r Range, cursor string, limit int) (Page, error)
}

// ErrCursor is wrapped by the error an Exporter returns for a cursor it did
// not make.
var ErrCursor = errors.New("store: invalid cursor")

// Amendment changes a stored comment in place with what its source learned
// after it was stored (for now its author's name). CrawlerID, CommentID,
// PublishedAt (its day) and ThreadID (its conversation; "" when it starts
// one) find the comment.
type Amendment struct {
	CrawlerID   int64
	CommentID   string
	PublishedAt time.Time
	ThreadID    string
	// Author, when not empty, replaces the comment's author.
	Author string
}

// Amender is a Store that can change stored comments in place. Amending a
// comment the store does not hold (never written, or removed since)
// changes nothing and is no error: an amendment never makes a comment.
// Amendments are not new comments, so they are never counted as usage.
type Amender interface {
	Amend(ctx context.Context, amendments []Amendment) error
}
