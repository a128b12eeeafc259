package file

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Thread reads a comment's conversation by scanning the crawler's day
// files twice: once for the comment (its thread id), once for the thread.
// The embedded store keeps no index, so this costs a read of the crawler's
// comments.
func (s *Store) Thread(ctx context.Context, crawlerID int64, commentID string) (string, []api.Comment, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return "", nil, ErrClosed
	}
	dir := s.crawlerDir(crawlerID)
	names, err := dayFiles(dir)
	if err != nil {
		return "", nil, err
	}
	scan := func(fn func(c *api.Comment) bool) error {
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return err
			}
			stop := false
			_, err := scanLines(filepath.Join(dir, name), 0, func(line []byte) {
				var c api.Comment
				if stop || json.Unmarshal(line, &c) != nil || s.tombs.coversNow(&c) {
					return
				}
				stop = fn(&c)
			})
			if err != nil || stop {
				return err
			}
		}
		return nil
	}
	threadID := ""
	if err := scan(func(c *api.Comment) bool {
		if c.ID == commentID {
			threadID = store.ThreadOf(c)
			return true
		}
		return false
	}); err != nil {
		return "", nil, err
	}
	if threadID == "" {
		return "", nil, fmt.Errorf("file: comment %q of crawler %d: %w", commentID, crawlerID, store.ErrNotFound)
	}
	seen := map[string]bool{}
	var out []api.Comment
	if err := scan(func(c *api.Comment) bool {
		if (c.ID == threadID || c.ThreadID == threadID) && !seen[c.ID] {
			seen[c.ID] = true
			out = append(out, *c)
		}
		return false
	}); err != nil {
		return "", nil, err
	}
	sortThread(out)
	return threadID, out[:min(len(out), store.MaxThread)], nil
}

func sortThread(cs []api.Comment) {
	slices.SortFunc(cs, func(a, b api.Comment) int {
		return cmp.Or(a.PublishedAt.Compare(b.PublishedAt), cmp.Compare(a.ID, b.ID))
	})
}
