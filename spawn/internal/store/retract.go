package store

import (
	"context"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Taking back. A source may take back what it said (a post deleted, an
// account deleted or taken down) and an operator may ask to forget an
// author; the store then removes the comments, in every crawler that
// stored them, and keeps a tombstone so that no replay, cursor rewind,
// crawler move or backfill stores them again until the tombstone expires.
// Edits replace a stored comment's text in place.

// Tombstone keeps comments from being stored (again) until Until: one
// comment of a source (CommentID), or every comment of an author (Author:
// the author's id or handle), those published before Before when it is
// set (a forget) or all of them (an inactive account, Account).
type Tombstone struct {
	Source    string
	CommentID string
	Author    string
	Before    time.Time
	// Account marks the tombstone of an inactive account: an account
	// active again lifts it (Lift), and only it.
	Account bool
	Until   time.Time
	// Exact asks Bury to remove every comment the tombstone covers before
	// it returns, whatever that costs (a forget, whose answer counts
	// them), rather than leave some to Sweep.
	Exact bool
}

// Covers reports whether the tombstone covers comment c (of its source).
// Authors compare by id, and by handle without regard to case.
func (t Tombstone) Covers(c *api.Comment) bool {
	if t.Source != c.Source {
		return false
	}
	if t.CommentID != "" {
		return t.CommentID == c.ID
	}
	if !SameAuthor(t.Author, c) {
		return false
	}
	return t.Before.IsZero() || c.PublishedAt.Before(t.Before)
}

// SameAuthor reports whether author (an id or a handle) names c's author.
func SameAuthor(author string, c *api.Comment) bool {
	return author != "" && (author == c.AuthorID || strings.EqualFold(author, c.Author))
}

// Edit replaces a stored comment's text and links (an edited post) in
// every crawler that stored it, and sets its EditedAt. An edit older than
// the stored comment's EditedAt changes nothing.
type Edit struct {
	Source    string
	CommentID string
	Text      string
	Links     []string
	EditedAt  time.Time
}

// Removed is one comment a store removed: a post stored by two crawlers
// is two.
type Removed struct {
	CrawlerID int64
	CommentID string
}

// Retractor is a Store that takes comments back. A spawn applies every
// retraction it learns, or the hub hands it, to its store; stores several
// spawns share see each one several times, so every method is idempotent.
type Retractor interface {
	// Bury writes the tombstones, then removes the stored comments they
	// cover, in every crawler, and returns those it removed. A comment
	// written while a Bury runs is never left stored: whichever of the
	// write and the Bury comes second sees the first (a write checks the
	// tombstones after it lands, and removes what they cover). A store may
	// leave to Sweep what is costly to find at once (unless the tombstone
	// is Exact); no read shows a covered comment meanwhile.
	Bury(ctx context.Context, tombstones []Tombstone) ([]Removed, error)
	// Sweep removes the covered comments Bury left, and returns them.
	Sweep(ctx context.Context) ([]Removed, error)
	// Lift removes the account tombstones of the given authors (an account
	// active again): their new comments are stored again. Comments already
	// removed stay removed.
	Lift(ctx context.Context, source string, authors []string) error
	// Edit applies edits to the stored comments and returns how many
	// comments (per crawler) changed.
	Edit(ctx context.Context, edits []Edit) (int, error)
	// Applied is the hub log's highest retraction the store has applied
	// (with every one before it), 0 when none; SetApplied records it.
	Applied(ctx context.Context) (uint64, error)
	SetApplied(ctx context.Context, seq uint64) error
	// ID names the store: the same for every spawn that shares it.
	ID() string
}

// Expirer is a Store that drops comments past their retention by itself
// when asked (the file store drops whole day files); a store that expires
// them as it goes (Cassandra's TTL) need not be one.
type Expirer interface {
	// Expire drops what is past its retention at now and returns how many
	// comments it dropped.
	Expire(ctx context.Context, now time.Time) (int, error)
}

// TTLFor is how long a comment is still to be kept at now under its
// retention: 0 when it is kept for good, negative when it is already past.
func TTLFor(c *api.Comment, now time.Time) time.Duration {
	if c.Retention <= 0 {
		return 0
	}
	left := c.PublishedAt.Add(c.Retention).Sub(now)
	if left <= 0 {
		return -1
	}
	return left
}
