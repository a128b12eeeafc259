package cassandra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
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

// Tombstone keys, as the file store spells them: c|source|comment id,
// a|source|author (an inactive account), f|source|author (a forget).
func tombKey(kind, source, target string) string { return kind + "|" + source + "|" + target }

func bucketOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % tombBuckets)
}

// authorKeys are the index keys of a comment's author: its id, and its
// handle lower-cased when it is not the id.
func authorKeys(c *api.Comment) []string {
	var out []string
	if c.AuthorID != "" {
		out = append(out, c.AuthorID)
	}
	if c.Author != "" && c.Author != c.AuthorID {
		if l := strings.ToLower(c.Author); l != c.AuthorID {
			out = append(out, l)
		}
	}
	return out
}

// authorTargets are the spellings an author given to a removal is looked
// up under: as given and lower-cased.
func authorTargets(author string) []string {
	if l := strings.ToLower(author); l != author {
		return []string{author, l}
	}
	return []string{author}
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

// indexBatch is how many index rows one unlogged batch carries. The rows
// are of different partitions, so the coordinator sends each on; a batch
// saves the client a request per row, which on a loaded client costs more
// than the coordinator's hop.
const indexBatch = 32

// writeIndexes writes the parts' rows of comments_by_item and
// comments_by_author.
func (s *Store) writeIndexes(ctx context.Context, parts []*part, now time.Time) error {
	ks := s.cfg.Keyspace
	insertItem := `INSERT INTO ` + ks + `.comments_by_item (source, comment_id, crawler_id, day, published_at, thread_id, author_id, author)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?`
	insertAuthor := `INSERT INTO ` + ks + `.comments_by_author (source, author, crawler_id, published_at, comment_id, day, thread_id, author_id, author_name)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?`
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	var entries []gocql.BatchEntry
	flush := func() {
		if len(entries) == 0 {
			return
		}
		batch := entries
		entries = nil
		g.Go(func() error {
			b := s.session.NewBatch(gocql.UnloggedBatch).WithContext(gctx)
			b.Entries = batch
			return s.session.ExecuteBatch(b)
		})
	}
	add := func(stmt string, args ...any) {
		entries = append(entries, gocql.BatchEntry{Stmt: stmt, Args: args, Idempotent: true})
		if len(entries) >= indexBatch {
			flush()
		}
	}
	for _, p := range parts {
		for _, c := range p.rows {
			ttl := ttlSeconds(c, now)
			add(insertItem, c.Source, c.ID, c.CrawlerID, p.day, ms(c.PublishedAt), c.ThreadID, c.AuthorID, c.Author, ttl)
			for _, a := range authorKeys(c) {
				add(insertAuthor, c.Source, a, c.CrawlerID, ms(c.PublishedAt), c.ID, p.day, c.ThreadID, c.AuthorID, c.Author, ttl)
			}
		}
	}
	flush()
	if err := g.Wait(); err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	return nil
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

// writeTombstones writes tombstones with their lifetime as TTL.
func (s *Store) writeTombstones(ctx context.Context, tombstones []store.Tombstone) error {
	ks := s.cfg.Keyspace
	insert := `INSERT INTO ` + ks + `.tombstones (bucket, key, before) VALUES (?, ?, ?) USING TTL ?`
	now := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, ts := range tombstones {
		ttl := int(math.Ceil(ts.Until.Sub(now).Seconds()))
		if ts.Source == "" || ttl <= 0 {
			continue
		}
		var keys []string
		var before any = gocql.UnsetValue
		switch {
		case ts.CommentID != "":
			keys = []string{tombKey("c", ts.Source, ts.CommentID)}
		case ts.Account:
			for _, a := range authorTargets(ts.Author) {
				keys = append(keys, tombKey("a", ts.Source, a))
			}
		case ts.Author != "":
			for _, a := range authorTargets(ts.Author) {
				keys = append(keys, tombKey("f", ts.Source, a))
			}
			if !ts.Before.IsZero() {
				before = ms(ts.Before)
			}
		}
		for _, k := range keys {
			g.Go(func() error {
				q := s.session.Query(insert, bucketOf(k), k, before, ttl).WithContext(gctx).Idempotent(true)
				err := q.Exec()
				q.Release()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cassandra: write tombstones: %w", err)
	}
	return nil
}

// rowsOfItem calls fn with every crawler's row of a comment.
func (s *Store) rowsOfItem(ctx context.Context, source, id string, fn func(storedRow)) error {
	it := s.session.Query(`SELECT crawler_id, day, published_at, thread_id, author_id, author FROM `+s.cfg.Keyspace+
		`.comments_by_item WHERE source = ? AND comment_id = ?`, source, id).WithContext(ctx).Idempotent(true).Iter()
	r := storedRow{id: id, source: source}
	for it.Scan(&r.crawler, &r.day, &r.published, &r.thread, &r.authorID, &r.author) {
		s.indexRowsRead.Add(1)
		fn(r)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra: read the crawlers of comment %q: %w", id, err)
	}
	return nil
}

// rowsOfAuthor calls fn with every row of an author's comments, in every
// crawler.
func (s *Store) rowsOfAuthor(ctx context.Context, source, author string, fn func(storedRow)) error {
	it := s.session.Query(`SELECT crawler_id, published_at, comment_id, day, thread_id, author_id, author_name FROM `+s.cfg.Keyspace+
		`.comments_by_author WHERE source = ? AND author = ? LIMIT ?`, source, author, maxIndexRows).
		WithContext(ctx).Idempotent(true).PageSize(5000).Iter()
	r := storedRow{source: source}
	for it.Scan(&r.crawler, &r.published, &r.id, &r.day, &r.thread, &r.authorID, &r.author) {
		s.indexRowsRead.Add(1)
		fn(r)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra: read the comments of author %q: %w", author, err)
	}
	return nil
}

// buried reads which of the comments a tombstone covers (their indexes in
// cs), reading each bucket's keys of the batch in one query.
func (s *Store) buried(ctx context.Context, cs []*api.Comment) (map[int]bool, error) {
	type want struct {
		i     int
		kind  string
		check bool // an author key: compare published time with before
	}
	keys := map[string][]want{}
	byBucket := map[int][]string{}
	addKey := func(k string, w want) {
		if _, ok := keys[k]; !ok {
			byBucket[bucketOf(k)] = append(byBucket[bucketOf(k)], k)
		}
		keys[k] = append(keys[k], w)
	}
	for i, c := range cs {
		addKey(tombKey("c", c.Source, c.ID), want{i: i, kind: "c"})
		for _, a := range authorKeys(c) {
			addKey(tombKey("a", c.Source, a), want{i: i, kind: "a"})
			addKey(tombKey("f", c.Source, a), want{i: i, kind: "f", check: true})
		}
	}
	var mu sync.Mutex
	out := map[int]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for bucket, ks := range byBucket {
		g.Go(func() error {
			it := s.session.Query(`SELECT key, before FROM `+s.cfg.Keyspace+`.tombstones WHERE bucket = ? AND key IN ?`, bucket, ks).
				WithContext(gctx).Idempotent(true).Iter()
			var key string
			var before *time.Time
			for it.Scan(&key, &before) {
				mu.Lock()
				for _, w := range keys[key] {
					if !w.check || before == nil || before.IsZero() || cs[w.i].PublishedAt.Before(*before) {
						out[w.i] = true
					}
				}
				mu.Unlock()
				before = nil
			}
			return it.Close()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("cassandra: read tombstones: %w", err)
	}
	return out, nil
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

// Lift deletes the account tombstones of the authors.
func (s *Store) Lift(ctx context.Context, source string, authors []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, a := range authors {
		for _, target := range authorTargets(a) {
			k := tombKey("a", source, target)
			g.Go(func() error {
				q := s.session.Query(`DELETE FROM `+s.cfg.Keyspace+`.tombstones WHERE bucket = ? AND key = ?`, bucketOf(k), k).
					WithContext(gctx).Idempotent(true)
				err := q.Exec()
				q.Release()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cassandra: lift account tombstones: %w", err)
	}
	return nil
}

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

// Applied reads the hub log's highest retraction applied to the keyspace.
func (s *Store) Applied(ctx context.Context) (uint64, error) {
	var v string
	err := s.session.Query(`SELECT value FROM `+s.cfg.Keyspace+`.store_info WHERE name = ?`, appliedRow).
		WithContext(ctx).Idempotent(true).Scan(&v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cassandra: read the applied mark: %w", err)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cassandra: the applied mark %q is not a number", v)
	}
	return n, nil
}

// SetApplied raises the applied mark to seq. Two spawns raising it at
// once may leave the lower of their marks: the retractions between are
// then applied again, which changes nothing.
func (s *Store) SetApplied(ctx context.Context, seq uint64) error {
	cur, err := s.Applied(ctx)
	if err != nil || cur >= seq {
		return err
	}
	q := s.session.Query(`INSERT INTO `+s.cfg.Keyspace+`.store_info (name, value) VALUES (?, ?)`, appliedRow, strconv.FormatUint(seq, 10)).
		WithContext(ctx).Idempotent(true)
	defer q.Release()
	if err := q.Exec(); err != nil {
		return fmt.Errorf("cassandra: write the applied mark: %w", err)
	}
	return nil
}

// ID names the keyspace's store for the hub.
func (s *Store) ID() string { return s.id }

// loadID reads the keyspace's id, making it on first use (the first spawn
// to insert it wins).
func (s *Store) loadID(ctx context.Context) error {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("cassandra: make a store id: %w", err)
	}
	q := s.session.Query(`INSERT INTO `+s.cfg.Keyspace+`.store_info (name, value) VALUES (?, ?) IF NOT EXISTS`, idRow, hex.EncodeToString(raw[:])).
		WithContext(ctx)
	if _, err := q.MapScanCAS(map[string]any{}); err != nil {
		q.Release()
		return fmt.Errorf("cassandra: record the store id: %w", err)
	}
	q.Release()
	var v string
	if err := s.session.Query(`SELECT value FROM `+s.cfg.Keyspace+`.store_info WHERE name = ?`, idRow).
		WithContext(ctx).Consistency(gocql.Consistency(gocql.Serial)).Scan(&v); err != nil {
		return fmt.Errorf("cassandra: read the store id: %w", err)
	}
	s.id = "cassandra:" + s.cfg.Keyspace + ":" + v
	return nil
}
