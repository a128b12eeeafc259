package store

import (
	"context"
	"errors"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// MaxThread bounds the comments a conversation read returns: the first
// ones by published time.
const MaxThread = 1000

// ErrNotFound is wrapped by a ThreadReader's error for a comment it does
// not hold.
var ErrNotFound = errors.New("store: comment not found")

// ThreadReader is a Store that reads conversations: a comment's thread is
// the comments whose ThreadID is the thread's first comment, and that
// comment itself (a comment without ThreadID starts its own).
type ThreadReader interface {
	// Thread returns the thread of a crawler's comment, by published time
	// (then id), at most MaxThread comments, and the thread's id.
	Thread(ctx context.Context, crawlerID int64, commentID string) (threadID string, comments []api.Comment, err error)
}

// ThreadOf is the thread id a comment belongs to.
func ThreadOf(c *api.Comment) string {
	if c.ThreadID != "" {
		return c.ThreadID
	}
	return c.ID
}
