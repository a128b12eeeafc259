package cassandra

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"
)

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
