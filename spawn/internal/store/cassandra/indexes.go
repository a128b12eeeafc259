package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/textindex"
)

// The comment row's own indexes. Storage-attached indexes (SAI) on the
// columns of comments find a comment by id (comment_id), its author by
// account id (author_id) or by handle without regard to case
// (author_key), a conversation (thread_id, set on replies only) and what
// a comment says (terms, textindex.Terms of it). A comment is written as
// one row in its day partition, batched with the partition's other rows:
// the indexes cost no other partition and no other request. Lookups by
// id, author and thread name no partition: each replica reads its indexes
// (a scatter over the cluster, not a read of the comments).
const (
	idIndex        = "comments_id_sai"
	authorIDIndex  = "comments_author_id_sai"
	authorKeyIndex = "comments_author_key_sai"
	threadIndex    = "comments_thread_sai"
	termsIndex     = "comments_terms_sai"
	// indexWait bounds how long Open waits for new indexes to become
	// queryable (an empty table's are at once; an existing table's are
	// built from its data in the background, and lookups fail and are
	// retried until they are).
	indexWait = 30 * time.Second
	// indexPoll is how often Open looks again meanwhile.
	indexPoll = 100 * time.Millisecond
	// textFromRow names store_info's row holding the first day whose rows
	// all carry search terms.
	textFromRow = "text_index_from"
	// everyDay is textFromRow's value for a keyspace whose every row
	// carries them.
	everyDay = "all"
)

// legacyTables are the index tables of earlier releases present in a
// keyspace.
type legacyTables struct {
	item, author, thread, threadOf bool
}

func (l legacyTables) any() bool { return l.item || l.author || l.thread || l.threadOf }

// schemaState is what a keyspace held before Open changed it.
type schemaState struct {
	comments bool // the comments table existed
	terms    bool // with its terms column
	writers  bool // crawler_days with its writers column
	legacy   legacyTables
}

// schemaOf reads which of the store's tables and columns the keyspace
// holds.
func (s *Store) schemaOf(ctx context.Context) (schemaState, error) {
	var st schemaState
	it := s.session.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, s.cfg.Keyspace).WithContext(ctx).Iter()
	var name string
	for it.Scan(&name) {
		switch name {
		case "comments":
			st.comments = true
		case "comments_by_item":
			st.legacy.item = true
		case "comments_by_author":
			st.legacy.author = true
		case "comments_by_thread":
			st.legacy.thread = true
		case "thread_of_comment":
			st.legacy.threadOf = true
		}
	}
	if err := it.Close(); err != nil {
		return st, fmt.Errorf("cassandra: read the schema of keyspace %s: %w", s.cfg.Keyspace, err)
	}
	if st.comments {
		for _, c := range []struct {
			table, name string
			has         *bool
		}{{"comments", "terms", &st.terms}, {"crawler_days", "writers", &st.writers}} {
			var col string
			err := s.session.Query(`SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ? AND column_name = ?`,
				s.cfg.Keyspace, c.table, c.name).WithContext(ctx).Scan(&col)
			switch {
			case err == nil:
				*c.has = true
			case !errors.Is(err, gocql.ErrNotFound):
				return st, fmt.Errorf("cassandra: read the schema of keyspace %s: %w", s.cfg.Keyspace, err)
			}
		}
	}
	return st, nil
}

// indexSchema is the idempotent CQL of the row's own columns and indexes.
func (s *Store) indexSchema() []string {
	ks := s.cfg.Keyspace
	sai := func(name, target string) string {
		return `CREATE CUSTOM INDEX IF NOT EXISTS ` + name + ` ON ` + ks + `.comments (` + target + `) USING 'StorageAttachedIndex'`
	}
	return []string{
		`ALTER TABLE ` + ks + `.comments ADD IF NOT EXISTS author_key text`,
		`ALTER TABLE ` + ks + `.comments ADD IF NOT EXISTS terms set<text>`,
		sai(idIndex, "comment_id"),
		sai(authorIDIndex, "author_id"),
		sai(authorKeyIndex, "author_key"),
		sai(threadIndex, "thread_id"),
		sai(termsIndex, "values(terms)"),
	}
}

// indexNames are the indexes Open waits for.
var indexNames = []string{idIndex, authorIDIndex, authorKeyIndex, threadIndex, termsIndex}

// waitIndexes waits until the node answering says every index of the
// comments table is queryable, at most indexWait: an index being built
// over an existing keyspace's data takes longer, and the store opens
// meanwhile (its lookups fail, and are retried, until the build ends).
func (s *Store) waitIndexes(ctx context.Context) error {
	deadline := time.Now().Add(indexWait)
	for {
		ready, err := s.indexesReady(ctx)
		if err != nil {
			return err
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			s.log.Warn("indexes of the comments are still being built; lookups by id, author and thread wait for them")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cassandra: wait for the indexes of keyspace %s: %w", s.cfg.Keyspace, ctx.Err())
		case <-time.After(indexPoll):
		}
	}
}

// indexesReady reads system_views.sai_column_indexes on the node that
// answers.
func (s *Store) indexesReady(ctx context.Context) (bool, error) {
	it := s.session.Query(`SELECT keyspace_name, index_name, is_queryable FROM system_views.sai_column_indexes`).WithContext(ctx).Iter()
	var ks, name string
	var queryable bool
	ready := map[string]bool{}
	for it.Scan(&ks, &name, &queryable) {
		if ks == s.cfg.Keyspace {
			ready[name] = queryable
		}
	}
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("cassandra: read the state of the indexes: %w", err)
	}
	for _, n := range indexNames {
		if !ready[n] {
			return false, nil
		}
	}
	return true, nil
}

// loadTextFrom reads (recording it on first use) the first day whose rows
// all carry search terms: every day for a keyspace this release created,
// else the day after this release first opened it (the rows of earlier
// days were written without terms, and are searched by reading them).
func (s *Store) loadTextFrom(ctx context.Context, before schemaState) error {
	value := everyDay
	if before.comments && !before.terms {
		value = time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1).Format(exportDayLayout)
	}
	q := s.session.Query(`INSERT INTO `+s.cfg.Keyspace+`.store_info (name, value) VALUES (?, ?) IF NOT EXISTS`, textFromRow, value).WithContext(ctx)
	_, err := q.MapScanCAS(map[string]any{})
	q.Release()
	if err != nil {
		return fmt.Errorf("cassandra: record the first day of search terms: %w", err)
	}
	var v string
	if err := s.session.Query(`SELECT value FROM `+s.cfg.Keyspace+`.store_info WHERE name = ?`, textFromRow).
		WithContext(ctx).Consistency(gocql.Consistency(gocql.Serial)).Scan(&v); err != nil {
		return fmt.Errorf("cassandra: read the first day of search terms: %w", err)
	}
	if v == everyDay {
		s.textFrom = time.Time{}
		return nil
	}
	d, err := time.Parse(exportDayLayout, v)
	if err != nil {
		return fmt.Errorf("cassandra: the first day of search terms %q is not a day", v)
	}
	s.textFrom = d
	return nil
}

// authorKeyOf is the author_key of a comment: its handle as
// textindex.AuthorKey keys it (nil, no cell, when it has none).
func authorKeyOf(c *api.Comment) any {
	if k := textindex.AuthorKey(c.Author); k != "" {
		return k
	}
	return gocql.UnsetValue
}

// rowCols are the columns a lookup reads of a comment's row: where it is
// and what a removal compares.
const rowCols = `crawler_id, day, published_at, comment_id, source, thread_id, author_id, author`

func (s *Store) scanRows(ctx context.Context, what string, q *gocql.Query, source string, fn func(storedRow)) error {
	it := q.WithContext(ctx).Idempotent(true).PageSize(5000).Iter()
	var r storedRow
	for it.Scan(&r.crawler, &r.day, &r.published, &r.id, &r.source, &r.thread, &r.authorID, &r.author) {
		s.indexRowsRead.Add(1)
		if source == "" || r.source == source {
			r.day, r.published = r.day.UTC(), r.published.UTC()
			fn(r)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra: read the comments of %s: %w", what, err)
	}
	return nil
}

// rowsOfItem calls fn with every crawler's row of a comment of source.
func (s *Store) rowsOfItem(ctx context.Context, source, id string, fn func(storedRow)) error {
	q := s.session.Query(`SELECT `+rowCols+` FROM `+s.cfg.Keyspace+`.comments WHERE comment_id = ?`, id)
	return s.scanRows(ctx, fmt.Sprintf("comment %q", id), q, source, fn)
}

// rowsOfAuthor calls fn with every row, in every crawler, of the comments
// of source whose author is author: by account id, and by handle without
// regard to case. A row may come twice (its id and handle both match).
func (s *Store) rowsOfAuthor(ctx context.Context, source, author string, fn func(storedRow)) error {
	ks := s.cfg.Keyspace
	what := fmt.Sprintf("author %q", author)
	if err := s.scanRows(ctx, what, s.session.Query(`SELECT `+rowCols+` FROM `+ks+`.comments WHERE author_id = ?`, author), source, fn); err != nil {
		return err
	}
	if err := s.scanRows(ctx, what, s.session.Query(`SELECT `+rowCols+` FROM `+ks+`.comments WHERE author_key = ?`, textindex.AuthorKey(author)), source, fn); err != nil {
		return err
	}
	if !s.legacy.author {
		return nil
	}
	// Rows an earlier release wrote carry no author_key: its author index
	// files them under the handle lower-cased.
	for _, a := range authorTargets(author) {
		it := s.session.Query(`SELECT crawler_id, published_at, comment_id, day, thread_id, author_id, author_name FROM `+ks+
			`.comments_by_author WHERE source = ? AND author = ? LIMIT ?`, source, a, maxIndexRows).
			WithContext(ctx).Idempotent(true).PageSize(5000).Iter()
		r := storedRow{source: source}
		for it.Scan(&r.crawler, &r.published, &r.id, &r.day, &r.thread, &r.authorID, &r.author) {
			s.indexRowsRead.Add(1)
			r.day, r.published = r.day.UTC(), r.published.UTC()
			fn(r)
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("cassandra: read the comments of author %q: %w", author, err)
		}
	}
	return nil
}

// authorTargets are the spellings an author given to a removal is looked
// up under in the tombstones (and an earlier release's author index): as
// given and lower-cased.
func authorTargets(author string) []string {
	if l := strings.ToLower(author); l != author {
		return []string{author, l}
	}
	return []string{author}
}

// authorKeys are the tombstone keys of a comment's author: its id, and
// its handle lower-cased when it is not the id.
func authorKeys(c *api.Comment) []string {
	var out []string
	if c.AuthorID != "" {
		out = append(out, c.AuthorID)
	}
	if c.Author != "" && c.Author != c.AuthorID {
		if l := strings.ToLower(c.Author); l != c.AuthorID && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
