package cassandra

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.ThreadReader = (*Store)(nil)

// Conversations. A reply's row holds its thread (thread_id, the thread's
// first comment) and the thread index finds every reply of a thread; the
// id index finds the comment asked for and the thread's first comment.
// Both are the comment row's own indexes: a conversation costs the write
// nothing but the thread_id cell of a reply.

// Thread reads a comment's conversation: the comment (for its thread
// id: none, it starts its thread), then the thread's first comment and
// replies, by published time (then id), at most store.MaxThread.
func (s *Store) Thread(ctx context.Context, crawlerID int64, commentID string) (string, []api.Comment, error) {
	ks := s.cfg.Keyspace
	const cols = `SELECT comment_id, published_at, thread_id, ` + bodyCols + ` FROM `
	var self []api.Comment
	if err := s.threadRows(ctx, crawlerID, cols+ks+`.comments WHERE comment_id = ? AND crawler_id = ? ALLOW FILTERING`, commentID, &self); err != nil {
		return "", nil, fmt.Errorf("cassandra: comment %q of crawler %d: %w", commentID, crawlerID, err)
	}
	if len(self) == 0 {
		return "", nil, fmt.Errorf("cassandra: comment %q of crawler %d: %w", commentID, crawlerID, store.ErrNotFound)
	}
	threadID := store.ThreadOf(&self[0])
	var out []api.Comment
	if threadID == commentID {
		out = self
	} else if err := s.threadRows(ctx, crawlerID, cols+ks+`.comments WHERE comment_id = ? AND crawler_id = ? ALLOW FILTERING`, threadID, &out); err != nil {
		return "", nil, fmt.Errorf("cassandra: thread %q of crawler %d: %w", threadID, crawlerID, err)
	}
	if err := s.threadRows(ctx, crawlerID, cols+ks+`.comments WHERE thread_id = ? AND crawler_id = ? ALLOW FILTERING`, threadID, &out); err != nil {
		return "", nil, fmt.Errorf("cassandra: thread %q of crawler %d: %w", threadID, crawlerID, err)
	}
	slices.SortStableFunc(out, func(a, b api.Comment) int {
		return cmp.Or(a.PublishedAt.Compare(b.PublishedAt), cmp.Compare(a.ID, b.ID))
	})
	out = slices.CompactFunc(out, func(a, b api.Comment) bool { return a.ID == b.ID && a.PublishedAt.Equal(b.PublishedAt) })
	if len(out) > store.MaxThread {
		out = out[:store.MaxThread]
	}
	for i := range out {
		if out[i].ID == threadID {
			out[i].ThreadID = ""
		} else {
			out[i].ThreadID = threadID
		}
	}
	return threadID, out, nil
}

// threadRows appends the crawler's rows stmt finds (bound to id and the
// crawler) to out; when out grows past twice store.MaxThread it keeps the
// earliest store.MaxThread, so a long thread is read in bounded memory.
func (s *Store) threadRows(ctx context.Context, crawlerID int64, stmt, id string, out *[]api.Comment) error {
	q := s.session.Query(stmt, id, crawlerID).WithContext(ctx).Idempotent(true).PageSize(500)
	defer q.Release()
	it := q.Iter()
	for {
		c := api.Comment{CrawlerID: crawlerID}
		if !scanComment(it, &c, true) {
			break
		}
		*out = append(*out, c)
		if len(*out) > 2*store.MaxThread {
			slices.SortFunc(*out, func(a, b api.Comment) int {
				return cmp.Or(a.PublishedAt.Compare(b.PublishedAt), cmp.Compare(a.ID, b.ID))
			})
			*out = (*out)[:store.MaxThread]
		}
	}
	return it.Close()
}
