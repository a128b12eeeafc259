package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// maxActivitySteps bounds the steps of one activity read.
const maxActivitySteps = 1500

// TermsSince returns the n most frequent terms of a crawler's hour buckets
// from since's hour on, most frequent first (ties by term).
func (s *Store) TermsSince(ctx context.Context, crawlerID int64, since time.Time, n int) ([]api.TermCount, error) {
	return s.topTerms(ctx, "crawler_id = ?", crawlerID, since, n)
}

// UserTermsSince is TermsSince summed over every crawler of a user.
func (s *Store) UserTermsSince(ctx context.Context, userID int64, since time.Time, n int) ([]api.TermCount, error) {
	return s.topTerms(ctx, "crawler_id IN (?)", s.db.Model(&Crawler{}).Select("id").Where("user_id = ?", userID), since, n)
}

func (s *Store) topTerms(ctx context.Context, where string, arg any, since time.Time, n int) ([]api.TermCount, error) {
	var rows []struct {
		Term  string
		Total int64
	}
	err := s.db.WithContext(ctx).Model(&termCountRow{}).Select("term, SUM(count) AS total").
		Where(where, arg).Where("bucket >= ? AND term <> ?", dbTime(since.Truncate(time.Hour)), tailTerm).
		Group("term").Order("total DESC, term").Limit(n).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read top terms: %w", err)
	}
	out := make([]api.TermCount, len(rows))
	for i, r := range rows {
		out[i] = api.TermCount{Term: r.Term, Count: r.Total}
	}
	return out, nil
}

// Activity returns a crawler's comments and distinct authors per step in
// [since, until), oldest first, with empty steps included. Steps start at
// since truncated to step (UTC). A step under an hour reads minute buckets,
// which cover the last minuteRetention; longer steps, whole hours, read
// hour buckets.
func (s *Store) Activity(ctx context.Context, crawlerID int64, since, until time.Time, step time.Duration) ([]api.ActivityStep, error) {
	table := "activity_hours"
	switch {
	case step < time.Minute || step%time.Minute != 0:
		return nil, fmt.Errorf("%w: step must be a whole number of minutes, got %s", ErrInvalid, step)
	case step < time.Hour:
		table = "activity_minutes"
		if until.Sub(since) > minuteRetention-time.Hour {
			return nil, fmt.Errorf("%w: steps under 1h cover at most the last 24h", ErrInvalid)
		}
	case step%time.Hour != 0:
		return nil, fmt.Errorf("%w: a step of 1h or more must be a whole number of hours, got %s", ErrInvalid, step)
	}
	start := since.UTC().Truncate(step)
	count := int((until.Sub(start) + step - 1) / step)
	if count > maxActivitySteps {
		return nil, fmt.Errorf("%w: %d steps, at most %d: choose a longer step", ErrInvalid, count, maxActivitySteps)
	}
	var rows []activityRow
	err := s.db.WithContext(ctx).Table(table).Where("crawler_id = ? AND bucket >= ? AND bucket < ?", crawlerID, dbTime(start), dbTime(until)).
		Order("bucket").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read activity of crawler %d: %w", crawlerID, err)
	}
	steps := make([]api.ActivityStep, max(count, 0))
	sketches := make([][]byte, len(steps))
	for i := range steps {
		steps[i].At = start.Add(time.Duration(i) * step)
	}
	for _, r := range rows {
		i := int(r.Bucket.Sub(start) / step)
		if i < 0 || i >= len(steps) {
			continue
		}
		steps[i].Comments += r.Comments
		steps[i].Positive += r.Positive
		steps[i].Negative += r.Negative
		sketches[i] = mergeSketch(sketches[i], r.Authors)
	}
	for i := range steps {
		steps[i].Authors = sketchEstimate(sketches[i])
		// Neutral is the rest: comments without a sentiment count as
		// neutral, so the three sum to Comments.
		steps[i].Neutral = steps[i].Comments - steps[i].Positive - steps[i].Negative
	}
	return steps, nil
}

// Suggestions returns a crawler's candidate query terms, best first.
func (s *Store) Suggestions(ctx context.Context, crawlerID int64, n int) ([]api.Suggestion, error) {
	var rows []suggestionRow
	err := s.db.WithContext(ctx).Where("crawler_id = ?", crawlerID).Order("score DESC, count DESC, term").Limit(n).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read suggestions of crawler %d: %w", crawlerID, err)
	}
	out := make([]api.Suggestion, len(rows))
	for i, r := range rows {
		out[i] = api.Suggestion{Term: r.Term, Score: r.Score, Count: r.Count}
	}
	return out, nil
}

// RemoveSuggestions drops terms from a crawler's suggestions (they were
// added to its query).
func (s *Store) RemoveSuggestions(ctx context.Context, crawlerID int64, terms []string) error {
	if len(terms) == 0 {
		return nil
	}
	err := s.db.WithContext(ctx).Where("crawler_id = ? AND term IN ?", crawlerID, terms).Delete(&suggestionRow{}).Error
	if err != nil {
		return fmt.Errorf("sqlstore: unable to remove suggestions of crawler %d: %w", crawlerID, err)
	}
	return nil
}

// PruneAnalytics deletes minute buckets older than minuteRetention and
// hour buckets and term counts older than analyticsRetention, before now.
func (s *Store) PruneAnalytics(ctx context.Context, now time.Time) error {
	db := s.db.WithContext(ctx)
	// The week's authors leave the hours about to be pruned first, and
	// take in the hours that closed.
	if err := s.MoveAuthorWeek(ctx, weekStart(now), now); err != nil {
		return err
	}
	for _, p := range []struct {
		table  string
		before time.Time
	}{
		{"activity_minutes", now.Add(-minuteRetention)},
		{"activity_hours", now.Add(-analyticsRetention)},
		{"term_counts", now.Add(-analyticsRetention)},
		{"author_counts", now.Add(-analyticsRetention)},
		{"lang_counts", now.Add(-analyticsRetention)},
	} {
		if err := db.Exec("DELETE FROM "+p.table+" WHERE bucket < ?", dbTime(p.before)).Error; err != nil {
			return fmt.Errorf("sqlstore: unable to prune %s: %w", p.table, err)
		}
	}
	return nil
}

// pruneAnalyticsSometimes runs PruneAnalytics at most every
// analyticsPruneEvery, after an apply; a failure is logged and retried
// next time.
func (s *Store) pruneAnalyticsSometimes(ctx context.Context) {
	t := now()
	s.prune.mu.Lock()
	due := t.Sub(s.prune.last) >= analyticsPruneEvery
	if due {
		s.prune.last = t
	}
	s.prune.mu.Unlock()
	if !due {
		return
	}
	if err := s.PruneAnalytics(ctx, t); err != nil {
		s.logger.Warn("analytics prune failed", "err", err)
	}
}
