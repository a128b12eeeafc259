package cassandra

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Conversations. Every comment is also written to comments_by_thread, in
// the partition of its thread (its ThreadID, or its own id when it starts
// one), clustered by published time; a reply's thread is also recorded in
// thread_of_comment under its own id, so any comment of a conversation
// finds the whole of it with two single-partition reads. Both writes are
// idempotent like the comment's own: a rewrite overwrites itself.

// threadSchema is the idempotent CQL of the conversation tables.
func (s *Store) threadSchema() []string {
	ks := s.cfg.Keyspace
	return append([]string{
		`CREATE TABLE IF NOT EXISTS ` + ks + `.comments_by_thread (
			crawler_id bigint,
			thread_id text,
			published_at timestamp,
			comment_id text,
			source text,
			author text,
			text text,
			url text,
			fetched_at timestamp,
			matched frozen<list<text>>,
			lang text,
			reply_to text,
			reposts bigint,
			likes bigint,
			PRIMARY KEY ((crawler_id, thread_id), published_at, comment_id)
		) WITH CLUSTERING ORDER BY (published_at ASC, comment_id ASC)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.thread_of_comment (
			crawler_id bigint,
			comment_id text,
			thread_id text,
			PRIMARY KEY ((crawler_id, comment_id))
		)`,
	}, addColumns(ks+".comments_by_thread")...)
}

type threadKey struct {
	crawler int64
	thread  string
}

// writeThreads writes the parts' comments into their threads: one unlogged
// single-partition batch per thread, and one row per reply into
// thread_of_comment.
func (s *Store) writeThreads(ctx context.Context, parts []*part) error {
	ks := s.cfg.Keyspace
	insertThread := `INSERT INTO ` + ks + `.comments_by_thread (crawler_id, thread_id, published_at, comment_id,
		` + bodyCols + `) VALUES (?, ?, ?, ?, ` + placeholders(bodyCols) + `) USING TTL ?`
	insertOf := `INSERT INTO ` + ks + `.thread_of_comment (crawler_id, comment_id, thread_id) VALUES (?, ?, ?) USING TTL ?`
	now := time.Now()
	threads := map[threadKey][]*api.Comment{}
	var order []threadKey
	for _, p := range parts {
		for _, c := range p.rows {
			k := threadKey{c.CrawlerID, store.ThreadOf(c)}
			if _, ok := threads[k]; !ok {
				order = append(order, k)
			}
			threads[k] = append(threads[k], c)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, k := range order {
		rows := threads[k]
		g.Go(func() error {
			b := s.session.NewBatch(gocql.UnloggedBatch).WithContext(gctx)
			for _, c := range rows {
				b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: insertThread, Idempotent: true,
					Args: append(append([]any{c.CrawlerID, k.thread, ms(c.PublishedAt), c.ID}, bodyArgs(c)...), ttlSeconds(c, now))})
			}
			return s.session.ExecuteBatch(b)
		})
		for _, c := range rows {
			if c.ThreadID == "" || c.ThreadID == c.ID {
				continue
			}
			g.Go(func() error {
				q := s.session.Query(insertOf, c.CrawlerID, c.ID, c.ThreadID, ttlSeconds(c, now)).WithContext(gctx).Idempotent(true)
				err := q.Exec()
				q.Release()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("threads: %w", err)
	}
	return nil
}

// Thread reads a comment's conversation: its thread id from
// thread_of_comment (none: the comment starts its thread), then the
// thread's partition.
func (s *Store) Thread(ctx context.Context, crawlerID int64, commentID string) (string, []api.Comment, error) {
	ks := s.cfg.Keyspace
	threadID := commentID
	var tid string
	err := s.session.Query(`SELECT thread_id FROM `+ks+`.thread_of_comment WHERE crawler_id = ? AND comment_id = ?`, crawlerID, commentID).
		WithContext(ctx).Idempotent(true).Scan(&tid)
	switch {
	case err == nil:
		threadID = tid
	case err != gocql.ErrNotFound:
		return "", nil, fmt.Errorf("cassandra: thread of comment %q: %w", commentID, err)
	}
	it := s.session.Query(`SELECT comment_id, published_at, `+bodyCols+` FROM `+ks+`.comments_by_thread WHERE crawler_id = ? AND thread_id = ? LIMIT ?`, crawlerID, threadID, store.MaxThread).
		WithContext(ctx).Idempotent(true).PageSize(500).Iter()
	var out []api.Comment
	for {
		c := api.Comment{CrawlerID: crawlerID}
		if !scanComment(it, &c, false) {
			break
		}
		if c.ID != threadID {
			c.ThreadID = threadID
		}
		out = append(out, c)
	}
	if err := it.Close(); err != nil {
		return "", nil, fmt.Errorf("cassandra: thread %q of crawler %d: %w", threadID, crawlerID, err)
	}
	if !slices.ContainsFunc(out, func(c api.Comment) bool { return c.ID == commentID }) {
		return "", nil, fmt.Errorf("cassandra: comment %q of crawler %d: %w", commentID, crawlerID, store.ErrNotFound)
	}
	slices.SortStableFunc(out, func(a, b api.Comment) int {
		return cmp.Or(a.PublishedAt.Compare(b.PublishedAt), cmp.Compare(a.ID, b.ID))
	})
	return threadID, out, nil
}
