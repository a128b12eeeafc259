package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/textindex"
)

var _ store.Amender = (*Store)(nil)

// Amend changes stored comments in place: the author, the key its handle
// is looked up by, and its from: search term (the earlier handle's stays
// among the terms, which only narrow). Each update is conditional (IF
// EXISTS), so an amendment of a comment that is not stored — never
// written, or removed — never makes a row of it; the condition costs a
// Paxos round, which amendments (rare: most names are known before the
// write) can afford. The new cells keep the row's TTL.
func (s *Store) Amend(ctx context.Context, amendments []store.Amendment) error {
	ks := s.cfg.Keyspace
	readTTL := `SELECT TTL(source) FROM ` + ks + `.comments WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ?`
	update := `UPDATE ` + ks + `.comments USING TTL ? SET author = ?, author_key = ?, terms = terms + ?
		WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ? IF EXISTS`
	updateThread := `UPDATE ` + ks + `.comments_by_thread USING TTL ? SET author = ? WHERE crawler_id = ? AND thread_id = ? AND published_at = ? AND comment_id = ? IF EXISTS`
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, a := range amendments {
		if a.CommentID == "" || a.Author == "" {
			continue
		}
		g.Go(func() error {
			day, pub := utcDay(a.PublishedAt), ms(a.PublishedAt)
			var ttl *int
			err := s.session.Query(readTTL, a.CrawlerID, day, pub, a.CommentID).WithContext(gctx).Idempotent(true).Scan(&ttl)
			if errors.Is(err, gocql.ErrNotFound) {
				return nil // not stored: nothing to amend
			}
			if err != nil {
				return fmt.Errorf("cassandra: unable to amend comment %q of crawler %d: %w", a.CommentID, a.CrawlerID, err)
			}
			keep := 0
			if ttl != nil {
				keep = *ttl
			}
			from := textindex.Terms(&api.Comment{Author: a.Author})
			q := s.session.Query(update, keep, a.Author, authorKeyOf(&api.Comment{Author: a.Author}), from, a.CrawlerID, day, pub, a.CommentID).
				WithContext(gctx).Idempotent(true)
			defer q.Release()
			// MapScanCAS reads the condition's result; applied is false
			// for a row removed since.
			if _, err := q.MapScanCAS(map[string]any{}); err != nil {
				return fmt.Errorf("cassandra: unable to amend comment %q of crawler %d: %w", a.CommentID, a.CrawlerID, err)
			}
			if !s.legacy.thread {
				return nil
			}
			thread := a.ThreadID
			if thread == "" {
				thread = a.CommentID
			}
			tq := s.session.Query(updateThread, keep, a.Author, a.CrawlerID, thread, pub, a.CommentID).WithContext(gctx).Idempotent(true)
			defer tq.Release()
			if _, err := tq.MapScanCAS(map[string]any{}); err != nil {
				return fmt.Errorf("cassandra: unable to amend comment %q of crawler %d: %w", a.CommentID, a.CrawlerID, err)
			}
			return nil
		})
	}
	return g.Wait()
}
