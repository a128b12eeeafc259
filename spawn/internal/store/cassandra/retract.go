package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/textindex"
)

// Taking comments back (store.Retractor). A removal finds every crawler's
// row of a post, or every row of an author, through the comment row's own
// indexes (indexes.go) and deletes by primary key; it never scans the
// comments.
//
// Tombstones live in tombstones, spread over tombBuckets partitions by a
// hash of their key, with a TTL of their lifetime. The order of the
// operations makes a removal exact against a concurrent write on another
// spawn: a write lands its rows first and then reads the tombstones of
// what it wrote; a removal writes its tombstones first and then reads the
// indexes. Whichever reads second sees what the other wrote, at
// consistencies whose reads and writes overlap (QUORUM, or ONE on one
// replica): either the write finds the tombstone and deletes its own rows,
// or the removal finds the rows.
const (
	// tombBuckets spreads the tombstones over partitions: a batch's check
	// reads at most this many, each for the keys of its bucket.
	tombBuckets = 16
	// maxIndexRows bounds the rows one removal reads from an index
	// partition (an author with more comments is removed in several
	// passes by the retries of the caller).
	maxIndexRows = 1_000_000
	// appliedRow and idRow name store_info's rows.
	appliedRow = "retractions_applied"
	idRow      = "store_id"
)

var _ store.Retractor = (*Store)(nil)

// retractSchema is the idempotent CQL of the tombstones and the store's
// own facts.
func (s *Store) retractSchema() []string {
	ks := s.cfg.Keyspace
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + ks + `.tombstones (
			bucket int,
			key text,
			before timestamp,
			PRIMARY KEY (bucket, key)
		)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.store_info (
			name text PRIMARY KEY,
			value text
		)`,
	}
}

// ttlSeconds is the TTL a comment's rows are written with at now: 0 for
// none.
func ttlSeconds(c *api.Comment, now time.Time) int {
	d := store.TTLFor(c, now)
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

// storedRow is where one crawler's copy of a comment lives, as an index
// gives it.
type storedRow struct {
	crawler   int64
	id        string
	source    string
	day       time.Time
	published time.Time
	thread    string
	authorID  string
	author    string
}

// deleteRows deletes comments' rows, by primary key, and their rows in an
// earlier release's index tables while the keyspace holds them.
func (s *Store) deleteRows(ctx context.Context, rows []storedRow) error {
	ks := s.cfg.Keyspace
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	exec := func(stmt string, args ...any) {
		g.Go(func() error {
			q := s.session.Query(stmt, args...).WithContext(gctx).Idempotent(true)
			err := q.Exec()
			q.Release()
			return err
		})
	}
	for _, r := range rows {
		pub := ms(r.published)
		exec(`DELETE FROM `+ks+`.comments WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ?`, r.crawler, r.day, pub, r.id)
		if s.legacy.thread {
			thread := r.thread
			if thread == "" {
				thread = r.id
			}
			exec(`DELETE FROM `+ks+`.comments_by_thread WHERE crawler_id = ? AND thread_id = ? AND published_at = ? AND comment_id = ?`, r.crawler, thread, pub, r.id)
		}
		if s.legacy.threadOf && r.thread != "" && r.thread != r.id {
			exec(`DELETE FROM `+ks+`.thread_of_comment WHERE crawler_id = ? AND comment_id = ?`, r.crawler, r.id)
		}
		if s.legacy.item {
			exec(`DELETE FROM `+ks+`.comments_by_item WHERE source = ? AND comment_id = ? AND crawler_id = ?`, r.source, r.id, r.crawler)
		}
		if s.legacy.author {
			for _, a := range authorKeys(&api.Comment{Author: r.author, AuthorID: r.authorID}) {
				exec(`DELETE FROM `+ks+`.comments_by_author WHERE source = ? AND author = ? AND crawler_id = ? AND published_at = ? AND comment_id = ?`,
					r.source, a, r.crawler, pub, r.id)
			}
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cassandra: delete %d comments: %w", len(rows), err)
	}
	return nil
}

// Bury writes the tombstones, then reads the indexes and deletes every
// row they cover.
func (s *Store) Bury(ctx context.Context, tombstones []store.Tombstone) ([]store.Removed, error) {
	if err := s.writeTombstones(ctx, tombstones); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	found := map[[2]string]storedRow{} // (crawler, id) → row
	add := func(r storedRow) {
		mu.Lock()
		found[[2]string{strconv.FormatInt(r.crawler, 10), r.id}] = r
		mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, ts := range tombstones {
		switch {
		case ts.Source == "":
		case ts.CommentID != "":
			g.Go(func() error { return s.rowsOfItem(gctx, ts.Source, ts.CommentID, add) })
		case ts.Author != "":
			g.Go(func() error {
				return s.rowsOfAuthor(gctx, ts.Source, ts.Author, func(r storedRow) {
					if (ts.Before.IsZero() || r.published.Before(ts.Before)) && store.SameAuthor(ts.Author, &api.Comment{Author: r.author, AuthorID: r.authorID}) {
						add(r)
					}
				})
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rows := make([]storedRow, 0, len(found))
	removed := make([]store.Removed, 0, len(found))
	for _, r := range found {
		rows = append(rows, r)
		removed = append(removed, store.Removed{CrawlerID: r.crawler, CommentID: r.id})
	}
	if err := s.deleteRows(ctx, rows); err != nil {
		return nil, err
	}
	return removed, nil
}

// settle removes, after a write, the written comments a tombstone covers
// (a removal that ran while they were written), and reports them.
func (s *Store) settle(ctx context.Context, parts []*part) (map[rowKey]bool, error) {
	var cs []*api.Comment
	for _, p := range parts {
		cs = append(cs, p.rows...)
	}
	if len(cs) == 0 {
		return nil, nil
	}
	hit, err := s.buried(ctx, cs)
	if err != nil || len(hit) == 0 {
		return nil, err
	}
	rows := make([]storedRow, 0, len(hit))
	out := make(map[rowKey]bool, len(hit))
	for i := range hit {
		c := cs[i]
		day := utcDay(c.PublishedAt)
		rows = append(rows, storedRow{crawler: c.CrawlerID, id: c.ID, source: c.Source, day: day, published: c.PublishedAt,
			thread: c.ThreadID, authorID: c.AuthorID, author: c.Author})
		out[rowKey{partKey{c.CrawlerID, day.Unix()}, c.PublishedAt.UnixMilli(), c.ID}] = true
	}
	return out, s.deleteRows(ctx, rows)
}

// Sweep has nothing to do: Bury finds every covered row through the
// indexes at once.
func (s *Store) Sweep(context.Context) ([]store.Removed, error) { return nil, nil }

// Edit finds the edited comments through the id index and changes each
// row that holds an older version: a compare-and-set on edited_at (IF
// edited_at = the value read), so neither an older edit nor a removal
// racing it makes the row hold the wrong text or come back. The row's
// search terms become the new text's, and its cells keep the row's TTL.
func (s *Store) Edit(ctx context.Context, edits []store.Edit) (int, error) {
	var mu sync.Mutex
	n := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, e := range edits {
		if e.Source == "" || e.CommentID == "" || e.EditedAt.IsZero() {
			continue
		}
		g.Go(func() error {
			var rows []storedRow
			if err := s.rowsOfItem(gctx, e.Source, e.CommentID, func(r storedRow) { rows = append(rows, r) }); err != nil {
				return err
			}
			for _, r := range rows {
				changed, err := s.editRow(gctx, r, e)
				if err != nil {
					return err
				}
				if changed {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return n, fmt.Errorf("cassandra: edit comments: %w", err)
	}
	return n, nil
}

// editRow applies an edit to one crawler's row of a comment.
func (s *Store) editRow(ctx context.Context, r storedRow, e store.Edit) (bool, error) {
	ks := s.cfg.Keyspace
	pub := ms(r.published)
	var current *time.Time
	var ttl *int
	var c api.Comment
	err := s.session.Query(`SELECT edited_at, TTL(source), author, author_id, lang FROM `+ks+`.comments WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ?`,
		r.crawler, r.day, pub, r.id).WithContext(ctx).Idempotent(true).Scan(&current, &ttl, &c.Author, &c.AuthorID, &c.Lang)
	if errors.Is(err, gocql.ErrNotFound) {
		return false, nil // removed meanwhile
	}
	if err != nil {
		return false, err
	}
	if current != nil && !current.IsZero() && !e.EditedAt.After(*current) {
		return false, nil // as new or newer already
	}
	var cond any // IF edited_at = null for a row never edited
	if current != nil && !current.IsZero() {
		cond = *current
	}
	keep := 0
	if ttl != nil {
		keep = *ttl
	}
	c.Text = e.Text
	q := s.session.Query(`UPDATE `+ks+`.comments USING TTL ? SET text = ?, links = ?, edited_at = ?, terms = ?
		WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ? IF edited_at = ?`,
		keep, e.Text, frozenList(e.Links), ms(e.EditedAt), textindex.Terms(&c), r.crawler, r.day, pub, r.id, cond).
		WithContext(ctx).Idempotent(true)
	defer q.Release()
	applied, err := q.MapScanCAS(map[string]any{})
	if err != nil || !applied {
		return false, err
	}
	if s.legacy.thread {
		thread := r.thread
		if thread == "" {
			thread = r.id
		}
		lq := s.session.Query(`UPDATE `+ks+`.comments_by_thread USING TTL ? SET text = ?, links = ?, edited_at = ?
			WHERE crawler_id = ? AND thread_id = ? AND published_at = ? AND comment_id = ? IF EXISTS`,
			keep, e.Text, frozenList(e.Links), ms(e.EditedAt), r.crawler, thread, pub, r.id).WithContext(ctx).Idempotent(true)
		defer lq.Release()
		if _, err := lq.MapScanCAS(map[string]any{}); err != nil {
			return true, err
		}
	}
	return true, nil
}
