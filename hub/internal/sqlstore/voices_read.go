package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"gorm.io/gorm"
)

// TopAuthors returns the n authors with the most comments in a crawler's
// hour buckets from since's hour on (ties by key), and the comments of
// authors folded away in those hours (0 while every hour kept all of
// them: the list is then exact). The last 7 days are read from
// author_week.
func (s *Store) TopAuthors(ctx context.Context, crawlerID int64, since time.Time, n int) ([]api.AuthorCount, int64, error) {
	if out, folded, ok, err := s.weekAuthors(ctx, "crawler_id = ?", crawlerID, since, n, false); ok || err != nil {
		return out, folded, err
	}
	return s.topAuthors(ctx, "crawler_id = ?", crawlerID, since, n)
}

// UserTopAuthors is TopAuthors over every crawler of a user.
func (s *Store) UserTopAuthors(ctx context.Context, userID int64, since time.Time, n int) ([]api.AuthorCount, int64, error) {
	crawlers := s.db.Model(&Crawler{}).Select("id").Where("user_id = ?", userID)
	if out, folded, ok, err := s.weekAuthors(ctx, "crawler_id IN (?)", crawlers, since, n, true); ok || err != nil {
		return out, folded, err
	}
	return s.topAuthors(ctx, "crawler_id IN (?)", crawlers, since, n)
}

// authorRow is an author's counts as the reads sum them.
type authorRow struct {
	AuthorKey string
	Author    string
	AuthorID  string
	Comments  int64
	Reposts   int64
	Likes     int64
}

func authorCounts(rows []authorRow) []api.AuthorCount {
	out := make([]api.AuthorCount, len(rows))
	for i, r := range rows {
		out[i] = api.AuthorCount{Author: cmp.Or(r.Author, r.AuthorKey), AuthorID: r.AuthorID, Comments: r.Comments,
			Engagement: api.Engagement{Reposts: r.Reposts, Likes: r.Likes}}
	}
	return out
}

// weekAuthors reads the top authors of a 7-day window (ok) from
// author_week, moving the week on first when it lags, and merges in the
// authors of the open hours it has not added yet. Exact: an author outside
// the week's top n (and its ties) and without a comment in the open hours
// has at most the n-th count of the week, which each of the top n reach
// already. A week that moved while it was read (at an hour's turn) is not
// used: the caller sums the hours instead.
func (s *Store) weekAuthors(ctx context.Context, where string, arg any, since time.Time, n int, group bool) ([]api.AuthorCount, int64, bool, error) {
	from := dbTime(since.Truncate(time.Hour))
	t := now()
	if from.After(weekStart(t)) || from.Before(weekStart(t).Add(-time.Hour)) {
		return nil, 0, false, nil // not a 7-day window
	}
	db := s.db.WithContext(ctx)
	week, err := s.weekFromTx(db, "")
	if err != nil {
		return nil, 0, false, fmt.Errorf("sqlstore: %w", err)
	}
	open := dbTime(t.Truncate(time.Hour))
	if !week.since.Equal(from) || week.until.Before(open) {
		if err := s.MoveAuthorWeek(ctx, from, open); err != nil {
			return nil, 0, false, err
		}
		if week, err = s.weekFromTx(db, ""); err != nil {
			return nil, 0, false, fmt.Errorf("sqlstore: %w", err)
		}
	}
	if !week.since.Equal(from) {
		return nil, 0, false, nil
	}
	sums := "author_key, MAX(author) AS author, MAX(author_id) AS author_id, SUM(comments) AS comments, SUM(reposts) AS reposts, SUM(likes) AS likes"
	// The open hours: every author of them.
	var recent []authorRow
	err = db.Model(&authorCountRow{}).Select(sums).Where(where, arg).Where("bucket >= ?", week.until).Group("author_key").Scan(&recent).Error
	if err != nil {
		return nil, 0, false, fmt.Errorf("sqlstore: unable to read the open hours' authors: %w", err)
	}
	// The week's top n, and any tied with the n-th.
	top := func(q *gorm.DB) *gorm.DB {
		q = q.Where(where, arg).Where("author_key <> ?", tailAuthor)
		if group {
			return q.Select(sums).Group("author_key")
		}
		return q.Select("author_key, author, author_id, comments, reposts, likes")
	}
	var best []authorRow
	if err := top(db.Model(&authorWeekRow{})).Order("comments DESC, author_key").Limit(n).Scan(&best).Error; err != nil {
		return nil, 0, false, fmt.Errorf("sqlstore: unable to read the week's top authors: %w", err)
	}
	if len(best) == n {
		var ties []authorRow
		nth := best[n-1].Comments
		q := top(db.Model(&authorWeekRow{}))
		if group {
			q = q.Having("SUM(comments) = ?", nth)
		} else {
			q = q.Where("comments = ?", nth)
		}
		if err := q.Scan(&ties).Error; err != nil {
			return nil, 0, false, fmt.Errorf("sqlstore: unable to read the week's top authors: %w", err)
		}
		best = append(best, ties...)
	}
	merged := map[string]*authorRow{}
	for i := range best {
		merged[best[i].AuthorKey] = &best[i]
	}
	// The week's counts of the open hours' authors it did not list.
	var missing []string
	for _, r := range recent {
		if _, ok := merged[r.AuthorKey]; !ok && r.AuthorKey != tailAuthor {
			missing = append(missing, r.AuthorKey)
		}
	}
	for chunk := range slices.Chunk(missing, maxIDsPerQuery) {
		var rows []authorRow
		q := db.Model(&authorWeekRow{}).Where(where, arg).Where("author_key IN ?", chunk)
		if group {
			q = q.Select(sums).Group("author_key")
		} else {
			q = q.Select("author_key, author, author_id, comments, reposts, likes")
		}
		if err := q.Scan(&rows).Error; err != nil {
			return nil, 0, false, fmt.Errorf("sqlstore: unable to read the week's authors: %w", err)
		}
		for i := range rows {
			merged[rows[i].AuthorKey] = &rows[i]
		}
	}
	var folded int64
	for _, r := range recent {
		if r.AuthorKey == tailAuthor {
			folded += r.Comments
			continue
		}
		m := merged[r.AuthorKey]
		if m == nil {
			c := r
			merged[r.AuthorKey] = &c
			continue
		}
		m.Comments += r.Comments
		m.Reposts += r.Reposts
		m.Likes += r.Likes
		if r.Author != "" {
			m.Author = r.Author
		}
		if r.AuthorID != "" {
			m.AuthorID = r.AuthorID
		}
	}
	var weekFolded int64
	err = db.Model(&authorWeekRow{}).Select("COALESCE(SUM(comments), 0)").Where(where, arg).Where("author_key = ?", tailAuthor).Scan(&weekFolded).Error
	if err != nil {
		return nil, 0, false, fmt.Errorf("sqlstore: unable to read the week's top authors: %w", err)
	}
	again, err := s.weekFromTx(db, "")
	if err != nil || again != week {
		return nil, 0, false, err
	}
	rows := make([]authorRow, 0, len(merged))
	for _, r := range merged {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b authorRow) int {
		return cmp.Or(cmp.Compare(b.Comments, a.Comments), cmp.Compare(a.AuthorKey, b.AuthorKey))
	})
	return authorCounts(rows[:min(n, len(rows))]), folded + weekFolded, true, nil
}

func (s *Store) topAuthors(ctx context.Context, where string, arg any, since time.Time, n int) ([]api.AuthorCount, int64, error) {
	from := dbTime(since.Truncate(time.Hour))
	var rows []authorRow
	db := s.db.WithContext(ctx)
	err := db.Model(&authorCountRow{}).
		Select("author_key, MAX(author) AS author, MAX(author_id) AS author_id, SUM(comments) AS comments, SUM(reposts) AS reposts, SUM(likes) AS likes").
		Where(where, arg).Where("bucket >= ? AND author_key <> ?", from, tailAuthor).
		Group("author_key").Order("comments DESC, author_key").Limit(n).Scan(&rows).Error
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: unable to read top authors: %w", err)
	}
	var folded int64
	err = db.Model(&authorCountRow{}).Select("COALESCE(SUM(comments), 0)").
		Where(where, arg).Where("bucket >= ? AND author_key = ?", from, tailAuthor).Scan(&folded).Error
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: unable to read top authors: %w", err)
	}
	return authorCounts(rows), folded, nil
}

// Breakdown returns a crawler's comments from since's hour on by source
// kind and by language.
func (s *Store) Breakdown(ctx context.Context, crawlerID int64, since time.Time) (api.Breakdown, error) {
	return s.breakdown(ctx, "crawler_id = ?", crawlerID, since)
}

// UserBreakdown is Breakdown over every crawler of a user.
func (s *Store) UserBreakdown(ctx context.Context, userID int64, since time.Time) (api.Breakdown, error) {
	return s.breakdown(ctx, "crawler_id IN (?)", s.db.Model(&Crawler{}).Select("id").Where("user_id = ?", userID), since)
}

// breakdown reads the hour buckets: activity_hours joined with the
// crawlers' source kinds, and lang_counts. A share is of the part's own
// total, so both lists sum to 1 whatever comments predate the language
// counts.
func (s *Store) breakdown(ctx context.Context, where string, arg any, since time.Time) (api.Breakdown, error) {
	from := dbTime(since.Truncate(time.Hour))
	db := s.db.WithContext(ctx)
	var sources []struct {
		Key      string
		Comments int64
	}
	err := db.Table("activity_hours").Select("crawlers.source AS key, SUM(activity_hours.comments) AS comments").
		Joins("JOIN crawlers ON crawlers.id = activity_hours.crawler_id").
		Where("activity_hours."+where, arg).Where("activity_hours.bucket >= ?", from).
		Group("crawlers.source").Order("comments DESC, key").Scan(&sources).Error
	if err != nil {
		return api.Breakdown{}, fmt.Errorf("sqlstore: unable to read the sources breakdown: %w", err)
	}
	var langs []struct {
		Key      string
		Comments int64
	}
	err = db.Model(&langCountRow{}).Select("lang AS key, SUM(comments) AS comments").
		Where(where, arg).Where("bucket >= ?", from).
		Group("lang").Order("comments DESC, key").Scan(&langs).Error
	if err != nil {
		return api.Breakdown{}, fmt.Errorf("sqlstore: unable to read the languages breakdown: %w", err)
	}
	out := api.Breakdown{Sources: []api.ShareCount{}, Languages: []api.ShareCount{}}
	var total, langTotal int64
	for _, r := range sources {
		total += r.Comments
	}
	for _, r := range langs {
		langTotal += r.Comments
	}
	out.Comments = total
	for _, r := range sources {
		out.Sources = append(out.Sources, api.ShareCount{Key: r.Key, Comments: r.Comments, Share: share(r.Comments, total)})
	}
	for _, r := range langs {
		out.Languages = append(out.Languages, api.ShareCount{Key: r.Key, Comments: r.Comments, Share: share(r.Comments, langTotal)})
	}
	return out, nil
}

func share(n, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(n) / float64(total)
}
