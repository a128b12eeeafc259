package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// UserCrawlerIDs lists the ids of a user's crawlers, in order. A user
// without crawlers has none; an unknown user is ErrNotFound.
func (s *Store) UserCrawlerIDs(ctx context.Context, userID int64) ([]int64, error) {
	if _, err := s.GetUser(ctx, userID); err != nil {
		return nil, err
	}
	ids := []int64{}
	if err := s.db.WithContext(ctx).Model(&Crawler{}).Where("user_id = ?", userID).Order("id").Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list the crawlers of user %d: %w", userID, err)
	}
	return ids, nil
}

// hashtagAsWord is the SQL expression of a term with a hashtag's '#'
// dropped, so "#weather" and "weather" count as one.
const hashtagAsWord = "CASE WHEN term LIKE '#%' THEN SUBSTR(term, 2) ELSE term END"

// MergedTermsSince is TermsSince with each hashtag counted with the word it
// spells ("#weather" and "weather" as "weather").
func (s *Store) MergedTermsSince(ctx context.Context, crawlerID int64, since time.Time, n int) ([]api.TermCount, error) {
	return s.mergedTerms(ctx, "crawler_id = ?", crawlerID, since, n)
}

// MergedUserTermsSince is MergedTermsSince summed over every crawler of a
// user.
func (s *Store) MergedUserTermsSince(ctx context.Context, userID int64, since time.Time, n int) ([]api.TermCount, error) {
	return s.mergedTerms(ctx, "crawler_id IN (?)", s.db.Model(&Crawler{}).Select("id").Where("user_id = ?", userID), since, n)
}

func (s *Store) mergedTerms(ctx context.Context, where string, arg any, since time.Time, n int) ([]api.TermCount, error) {
	var rows []struct {
		Term  string
		Total int64
	}
	err := s.db.WithContext(ctx).Model(&termCountRow{}).Select(hashtagAsWord+" AS term, SUM(count) AS total").
		Where(where, arg).Where("bucket >= ? AND term <> ?", dbTime(since.Truncate(time.Hour)), tailTerm).
		Group(hashtagAsWord).Order("total DESC, term").Limit(n).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read merged top terms: %w", err)
	}
	out := make([]api.TermCount, len(rows))
	for i, r := range rows {
		out[i] = api.TermCount{Term: r.Term, Count: r.Total}
	}
	return out, nil
}

// TermActivity returns how many of a crawler's comments carried any of
// terms in each hour of [since, until), oldest first, empty hours
// included: the per-hour term counts the hub keeps (kept for
// analyticsRetention). A term cut off from an hour's top terms counts 0
// there.
func (s *Store) TermActivity(ctx context.Context, crawlerID int64, terms []string, since, until time.Time) ([]api.TermStep, error) {
	start := since.UTC().Truncate(time.Hour)
	count := int((until.Sub(start) + time.Hour - 1) / time.Hour)
	if count > maxActivitySteps {
		return nil, fmt.Errorf("%w: %d hours, at most %d", ErrInvalid, count, maxActivitySteps)
	}
	var rows []struct {
		Bucket time.Time
		Total  int64
	}
	err := s.db.WithContext(ctx).Model(&termCountRow{}).Select("bucket, SUM(count) AS total").
		Where("crawler_id = ? AND bucket >= ? AND bucket < ? AND term IN ?", crawlerID, dbTime(start), dbTime(until), terms).
		Group("bucket").Order("bucket").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read the activity of terms %v of crawler %d: %w", terms, crawlerID, err)
	}
	steps := make([]api.TermStep, max(count, 0))
	for i := range steps {
		steps[i].At = start.Add(time.Duration(i) * time.Hour)
	}
	for _, r := range rows {
		if i := int(r.Bucket.UTC().Sub(start) / time.Hour); i >= 0 && i < len(steps) {
			steps[i].Count += r.Total
		}
	}
	return steps, nil
}

// CrawlerCountsByUser counts each user's crawlers; a user without any is
// absent.
func (s *Store) CrawlerCountsByUser(ctx context.Context) (map[int64]int64, error) {
	var rows []struct {
		UserID int64
		N      int64
	}
	if err := s.db.WithContext(ctx).Model(&Crawler{}).Select("user_id, COUNT(*) AS n").Group("user_id").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to count crawlers by user: %w", err)
	}
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		out[r.UserID] = r.N
	}
	return out, nil
}

// CountUserCrawlers counts one user's crawlers.
func (s *Store) CountUserCrawlers(ctx context.Context, userID int64) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&Crawler{}).Where("user_id = ?", userID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("sqlstore: unable to count the crawlers of user %d: %w", userID, err)
	}
	return n, nil
}
