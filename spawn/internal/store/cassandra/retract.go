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
)

// Taking comments back (store.Retractor). Two indexes are kept in step
// with every write and removal, each row with the comment's TTL:
// comments_by_item finds every crawler's row of a post by its id, and
// comments_by_author every comment of an author, by author id and by
// lower-cased handle. A removal reads one of them (one partition) and
// deletes by primary key; it never scans the comments.
//
// Tombstones live in tombstones, spread over tombBuckets partitions by a
// hash of their key, with a TTL of their lifetime. The order of the
// operations makes a removal exact against a concurrent write on another
// spawn: a write lands its rows and indexes first and then reads the
// tombstones of what it wrote; a removal writes its tombstones first and
// then reads the indexes. Whichever reads second sees what the other
// wrote, at consistencies whose reads and writes overlap (QUORUM, or ONE
// on one replica): either the write finds the tombstone and deletes its
// own rows, or the removal finds the rows.
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

// retractSchema is the idempotent CQL of the indexes, the tombstones and
// the store's own facts.
func (s *Store) retractSchema() []string {
	ks := s.cfg.Keyspace
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + ks + `.comments_by_item (
			source text,
			comment_id text,
			crawler_id bigint,
			day date,
			published_at timestamp,
			thread_id text,
			author_id text,
			author text,
			PRIMARY KEY ((source, comment_id), crawler_id)
		)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.comments_by_author (
			source text,
			author text,
			crawler_id bigint,
			published_at timestamp,
			comment_id text,
			day date,
			thread_id text,
			author_id text,
			author_name text,
			PRIMARY KEY ((source, author), crawler_id, published_at, comment_id)
		)`,
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

// deleteRows deletes comments' rows from every table, by primary key.
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
		thread := r.thread
		if thread == "" {
			thread = r.id
		}
		pub := ms(r.published)
		exec(`DELETE FROM `+ks+`.comments WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ?`, r.crawler, r.day, pub, r.id)
		exec(`DELETE FROM `+ks+`.comments_by_thread WHERE crawler_id = ? AND thread_id = ? AND published_at = ? AND comment_id = ?`, r.crawler, thread, pub, r.id)
		if r.thread != "" && r.thread != r.id {
			exec(`DELETE FROM `+ks+`.thread_of_comment WHERE crawler_id = ? AND comment_id = ?`, r.crawler, r.id)
		}
		exec(`DELETE FROM `+ks+`.comments_by_item WHERE source = ? AND comment_id = ? AND crawler_id = ?`, r.source, r.id, r.crawler)
		for _, a := range authorKeys(&api.Comment{Author: r.author, AuthorID: r.authorID}) {
			exec(`DELETE FROM `+ks+`.comments_by_author WHERE source = ? AND author = ? AND crawler_id = ? AND published_at = ? AND comment_id = ?`,
				r.source, a, r.crawler, pub, r.id)
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
			for _, a := range authorTargets(ts.Author) {
				g.Go(func() error {
					return s.rowsOfAuthor(gctx, ts.Source, a, func(r storedRow) {
						if ts.Before.IsZero() || r.published.Before(ts.Before) {
							add(r)
						}
					})
				})
			}
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

// Edit finds the edited comments through comments_by_item and changes
// each row that holds an older version: a compare-and-set on edited_at
// (IF edited_at = the value read), so neither an older edit nor a removal
// racing it makes the row hold the wrong text or come back.
func (s *Store) Edit(ctx context.Context, edits []store.Edit) (int, error) {
	ks := s.cfg.Keyspace
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
				changed, err := s.editRow(gctx, ks, r, e)
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

// editRow applies an edit to one crawler's row of a comment and to its
// row in the thread table.
func (s *Store) editRow(ctx context.Context, ks string, r storedRow, e store.Edit) (bool, error) {
	pub := ms(r.published)
	var current *time.Time
	err := s.session.Query(`SELECT edited_at FROM `+ks+`.comments WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ?`,
		r.crawler, r.day, pub, r.id).WithContext(ctx).Idempotent(true).Scan(&current)
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
	applied, err := s.session.Query(`UPDATE `+ks+`.comments SET text = ?, links = ?, edited_at = ?
		WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ? IF edited_at = ?`,
		e.Text, frozenList(e.Links), ms(e.EditedAt), r.crawler, r.day, pub, r.id, cond).
		WithContext(ctx).Idempotent(true).MapScanCAS(map[string]any{})
	if err != nil || !applied {
		return false, err
	}
	thread := r.thread
	if thread == "" {
		thread = r.id
	}
	q := s.session.Query(`UPDATE `+ks+`.comments_by_thread SET text = ?, links = ?, edited_at = ?
		WHERE crawler_id = ? AND thread_id = ? AND published_at = ? AND comment_id = ? IF EXISTS`,
		e.Text, frozenList(e.Links), ms(e.EditedAt), r.crawler, thread, pub, r.id).WithContext(ctx).Idempotent(true)
	defer q.Release()
	if _, err := q.MapScanCAS(map[string]any{}); err != nil {
		return true, err
	}
	return true, nil
}
