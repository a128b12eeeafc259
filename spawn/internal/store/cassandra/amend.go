package cassandra

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Amender = (*Store)(nil)

// Amend changes stored comments in place, in comments and in
// comments_by_thread. Each update is conditional (IF EXISTS), so an
// amendment of a comment that is not stored — never written, or removed —
// never makes a row of it; the condition costs a Paxos round, which
// amendments (rare: most names are known before the write) can afford.
func (s *Store) Amend(ctx context.Context, amendments []store.Amendment) error {
	ks := s.cfg.Keyspace
	updateDay := `UPDATE ` + ks + `.comments SET author = ? WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id = ? IF EXISTS`
	updateThread := `UPDATE ` + ks + `.comments_by_thread SET author = ? WHERE crawler_id = ? AND thread_id = ? AND published_at = ? AND comment_id = ? IF EXISTS`
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, a := range amendments {
		if a.CommentID == "" || a.Author == "" {
			continue
		}
		thread := a.ThreadID
		if thread == "" {
			thread = a.CommentID
		}
		pub := ms(a.PublishedAt)
		for _, u := range []struct {
			stmt string
			key  any
		}{{updateDay, utcDay(a.PublishedAt)}, {updateThread, thread}} {
			g.Go(func() error {
				q := s.session.Query(u.stmt, a.Author, a.CrawlerID, u.key, pub, a.CommentID).WithContext(gctx).Idempotent(true)
				defer q.Release()
				// MapScanCAS reads the condition's result; applied is
				// false for a row that does not exist.
				if _, err := q.MapScanCAS(map[string]any{}); err != nil {
					return fmt.Errorf("cassandra: unable to amend comment %q of crawler %d: %w", a.CommentID, a.CrawlerID, err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}
