package cassandra

import (
	"context"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Recent returns up to n of a crawler's comments, newest published first.
func (s *Store) Recent(ctx context.Context, crawlerID int64, n int) ([]api.Comment, error) {
	if n <= 0 {
		return nil, nil
	}
	days := s.session.Query(s.selectDays, crawlerID).WithContext(ctx).PageSize(64).Iter()
	out := make([]api.Comment, 0, min(n, 1024))
	var day time.Time
	for len(out) < n && days.Scan(&day) {
		var err error
		if out, err = s.readDay(ctx, crawlerID, day, n-len(out), out); err != nil {
			days.Close()
			return nil, fmt.Errorf("cassandra: recent comments of crawler %d: %w", crawlerID, err)
		}
	}
	if err := days.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: recent comments of crawler %d: days: %w", crawlerID, err)
	}
	return out, nil
}

func (s *Store) readDay(ctx context.Context, crawlerID int64, day time.Time, limit int, out []api.Comment) ([]api.Comment, error) {
	q := s.session.Query(s.selectDay, crawlerID, day, limit).WithContext(ctx)
	if limit < 5000 {
		q = q.PageSize(limit)
	}
	it := q.Iter()
	for {
		c := api.Comment{CrawlerID: crawlerID}
		if !scanComment(it, &c, true) {
			break
		}
		out = append(out, c)
	}
	err := it.Close()
	q.Release()
	return out, err
}
