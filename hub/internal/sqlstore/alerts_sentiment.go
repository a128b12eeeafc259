package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// ShareCount is a bucket's comments and, of them, the negative ones.
type ShareCount struct {
	Comments, Negative int64
}

// MinuteShares returns, per crawler, the comments and negative comments of
// each minute bucket in [from, to), for the crawlers listed (all when ids
// is empty): what sentiment rules read.
func (s *Store) MinuteShares(ctx context.Context, ids []int64, from, to time.Time) (map[int64]map[time.Time]ShareCount, error) {
	return s.bucketShares(ctx, "activity_minutes", ids, from, to)
}

// HourShares is MinuteShares over hour buckets.
func (s *Store) HourShares(ctx context.Context, ids []int64, from, to time.Time) (map[int64]map[time.Time]ShareCount, error) {
	return s.bucketShares(ctx, "activity_hours", ids, from, to)
}

// bucketShares reads a table of activity buckets, summing what several
// rows of one crawler and bucket hold.
func (s *Store) bucketShares(ctx context.Context, table string, ids []int64, from, to time.Time) (map[int64]map[time.Time]ShareCount, error) {
	out := map[int64]map[time.Time]ShareCount{}
	read := func(chunk []int64) error {
		var rows []struct {
			CrawlerID int64
			Bucket    time.Time
			Comments  int64
			Negative  int64
		}
		q := s.db.WithContext(ctx).Table(table).Select("crawler_id, bucket, comments, negative").
			Where("bucket >= ? AND bucket < ?", dbTime(from), dbTime(to))
		if chunk != nil {
			q = q.Where("crawler_id IN ?", chunk)
		}
		if err := q.Scan(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			m := out[r.CrawlerID]
			if m == nil {
				m = map[time.Time]ShareCount{}
				out[r.CrawlerID] = m
			}
			at := dbTime(r.Bucket)
			c := m[at]
			c.Comments += r.Comments
			c.Negative += r.Negative
			m[at] = c
		}
		return nil
	}
	var err error
	if len(ids) == 0 {
		err = read(nil)
	} else {
		for i := 0; i < len(ids) && err == nil; i += maxIDsPerQuery {
			err = read(ids[i:min(len(ids), i+maxIDsPerQuery)])
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read %s: %w", table, err)
	}
	return out, nil
}
