package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Voices: who wrote a crawler's comments and in which language, per crawler
// hour, exact. They travel inside usage increments (api.IncrementAnalytics
// Authors and Langs) and are applied with the rest of an increment's
// analytics, once. Why per-hour author rows rather than a sketch:
// docs/decisions/0021-exact-top-authors.md.
//
// Sizes are bounded: a crawler hour keeps its maxAuthorsPerHour authors
// with the most comments, the others folded into its tail row (the empty
// key), and both tables are pruned with the hour buckets
// (analyticsRetention).
//
// The last 7 days are read often (the Listen view's widest window) and
// are the most rows to sum: author_week keeps each crawler's authors summed
// over the closed hours of the week (author_week_from: Since to before
// Until). When an hour closes it is added in one statement; when the week
// moves on, the hours that left it are subtracted; a late increment for an
// hour already added is added to the week as it is applied. A 7-day read
// takes the week's top rows (an index range) and merges in the open hours'
// authors, exactly (weekAuthors; BenchmarkListenView).
var (
	// maxAuthorsPerHour is how many authors a crawler hour keeps; a
	// crawler of a million comments a week has about 6,000 an hour, so its
	// top authors stay exact. A variable so that tests can fold small hours.
	maxAuthorsPerHour = 20000
	// compactAuthorsAt is the row count of a crawler hour that triggers
	// folding it back to maxAuthorsPerHour.
	compactAuthorsAt = maxAuthorsPerHour * 3 / 2
)

const (
	// maxVoiceKey is the longest author key, name or language kept; a
	// longer one is cut (it still counts).
	maxVoiceKey = 255
	maxLangKey  = 16
)

// tailAuthor is the key of the row that counts a crawler hour's folded
// authors.
const tailAuthor = ""

type authorCountRow struct {
	CrawlerID int64
	Bucket    time.Time
	AuthorKey string
	Author    string
	AuthorID  string
	Comments  int64
	Reposts   int64
	Likes     int64
}

func (authorCountRow) TableName() string { return "author_counts" }

type langCountRow struct {
	CrawlerID int64
	Bucket    time.Time
	Lang      string
	Comments  int64
}

func (langCountRow) TableName() string { return "lang_counts" }

type authorWeekRow struct {
	CrawlerID int64
	AuthorKey string
	Author    string
	AuthorID  string
	Comments  int64
	Reposts   int64
	Likes     int64
}

func (authorWeekRow) TableName() string { return "author_week" }

type authorWeekFromRow struct {
	ID    int64
	Since time.Time
	Until time.Time
}

func (authorWeekFromRow) TableName() string { return "author_week_from" }

// authorWeekSpan is the window author_week counts.
const authorWeekSpan = 7 * 24 * time.Hour

// weekStart is the first hour of the 7-day window read at now: the hour
// buckets from it on are the window's (as every read counts them).
func weekStart(now time.Time) time.Time {
	return dbTime(now.Add(-authorWeekSpan).Truncate(time.Hour))
}

// weekHours are the hours author_week counts: from since to before until.
type weekHours struct{ since, until time.Time }

// weekFromTx reads the hours author_week counts; lock is "" or, on
// PostgreSQL, the row lock to take ("SHARE" while adding to the week,
// "UPDATE" while moving it).
func (s *Store) weekFromTx(tx *gorm.DB, lock string) (weekHours, error) {
	q := tx.Model(&authorWeekFromRow{}).Where("id = ?", 1)
	if lock != "" && s.dialect == DialectPostgres {
		q = q.Clauses(clause.Locking{Strength: lock})
	}
	var r authorWeekFromRow
	if err := q.Take(&r).Error; err != nil {
		return weekHours{}, fmt.Errorf("read the week's hours: %w", err)
	}
	return weekHours{dbTime(r.Since), dbTime(r.Until)}, nil
}

type authorKey struct {
	bucketKey
	key string
}

type langKey struct {
	bucketKey
	lang string
}

// voices gathers the authors and languages of the increments a
// transaction applies.
type voices struct {
	authors map[authorKey]*authorCountRow
	langs   map[langKey]int64
}

func newVoices() *voices {
	return &voices{authors: map[authorKey]*authorCountRow{}, langs: map[langKey]int64{}}
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// add counts one increment's authors and languages.
func (v *voices) add(crawlerID int64, a *api.IncrementAnalytics) {
	for _, h := range a.Authors {
		at := dbTime(h.At.Truncate(time.Hour))
		for _, t := range h.Authors {
			if t.Comments <= 0 {
				continue
			}
			id := cut(t.AuthorID, maxVoiceKey)
			name := cut(t.Author, maxVoiceKey)
			k := authorKey{bucketKey{crawlerID, at}, cmp.Or(id, name)}
			r := v.authors[k]
			if r == nil {
				r = &authorCountRow{CrawlerID: crawlerID, Bucket: at, AuthorKey: k.key, AuthorID: id}
				v.authors[k] = r
			}
			if name != "" {
				r.Author = name
			}
			r.Comments += t.Comments
			r.Reposts += max(t.Reposts, 0)
			r.Likes += max(t.Likes, 0)
		}
	}
	for _, h := range a.Langs {
		at := dbTime(h.At.Truncate(time.Hour))
		for _, l := range h.Langs {
			if l.Comments > 0 {
				v.langs[langKey{bucketKey{crawlerID, at}, cut(l.Lang, maxLangKey)}] += l.Comments
			}
		}
	}
}

// applyVoicesTx adds what v gathered: rows in key order, and every crawler
// hour that grew past compactAuthorsAt folded back.
func (s *Store) applyVoicesTx(tx *gorm.DB, v *voices) error {
	if len(v.langs) > 0 {
		rows := make([]langCountRow, 0, len(v.langs))
		for k, n := range v.langs {
			rows = append(rows, langCountRow{CrawlerID: k.crawler, Bucket: k.at, Lang: k.lang, Comments: n})
		}
		slices.SortFunc(rows, func(a, b langCountRow) int {
			return cmp.Or(cmp.Compare(a.CrawlerID, b.CrawlerID), a.Bucket.Compare(b.Bucket), cmp.Compare(a.Lang, b.Lang))
		})
		upsert := clause.OnConflict{
			Columns:   []clause.Column{{Name: "crawler_id"}, {Name: "bucket"}, {Name: "lang"}},
			DoUpdates: clause.Assignments(map[string]any{"comments": gorm.Expr("lang_counts.comments + excluded.comments")}),
		}
		if err := tx.Clauses(upsert).CreateInBatches(rows, rowsPerStatement/2).Error; err != nil {
			return fmt.Errorf("add language counts: %w", err)
		}
	}
	if len(v.authors) == 0 {
		return nil
	}
	rows := make([]authorCountRow, 0, len(v.authors))
	for _, r := range v.authors {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b authorCountRow) int {
		return cmp.Or(cmp.Compare(a.CrawlerID, b.CrawlerID), a.Bucket.Compare(b.Bucket), cmp.Compare(a.AuthorKey, b.AuthorKey))
	})
	upsert := clause.OnConflict{
		Columns: []clause.Column{{Name: "crawler_id"}, {Name: "bucket"}, {Name: "author_key"}},
		DoUpdates: clause.Assignments(map[string]any{
			"comments": gorm.Expr("author_counts.comments + excluded.comments"),
			"reposts":  gorm.Expr("author_counts.reposts + excluded.reposts"),
			"likes":    gorm.Expr("author_counts.likes + excluded.likes"),
			// The newest name an author is seen under is the one shown.
			"author": gorm.Expr("CASE WHEN excluded.author <> '' THEN excluded.author ELSE author_counts.author END"),
		}),
	}
	if err := tx.Clauses(upsert).CreateInBatches(rows, rowsPerStatement/4).Error; err != nil {
		return fmt.Errorf("add author counts: %w", err)
	}
	week, err := s.weekFromTx(tx, "SHARE")
	if err != nil {
		return err
	}
	if err := addWeekTx(tx, rows, week); err != nil {
		return err
	}
	var buckets []bucketKey
	for _, r := range rows {
		k := bucketKey{r.CrawlerID, r.Bucket}
		if len(buckets) == 0 || buckets[len(buckets)-1] != k {
			buckets = append(buckets, k)
		}
	}
	// A crawler hour has at most as many authors as comments, and its
	// comments are in activity_hours (applied before): only an hour of more
	// comments than compactAuthorsAt can need folding, and only its
	// authors are counted.
	for chunk := range slices.Chunk(buckets, rowsPerStatement) {
		values := s.valuesRows(len(chunk), "BIGINT", "TIMESTAMPTZ")
		args := make([]any, 0, 2*len(chunk)+1)
		for _, b := range chunk {
			args = append(args, b.crawler, b.at)
		}
		var busy []bucketKey
		var hours []struct {
			CrawlerID int64
			Bucket    time.Time
		}
		err := tx.Raw("SELECT crawler_id, bucket FROM activity_hours WHERE (crawler_id, bucket) IN (VALUES "+values+") AND comments > ?",
			append(args, compactAuthorsAt)...).Scan(&hours).Error
		if err != nil {
			return fmt.Errorf("read the comments of %d crawler hours: %w", len(chunk), err)
		}
		for _, h := range hours {
			busy = append(busy, bucketKey{h.CrawlerID, dbTime(h.Bucket)})
		}
		if len(busy) == 0 {
			continue
		}
		values = s.valuesRows(len(busy), "BIGINT", "TIMESTAMPTZ")
		args = args[:0]
		for _, b := range busy {
			args = append(args, b.crawler, b.at)
		}
		var counts []struct {
			CrawlerID int64
			Bucket    time.Time
			N         int64
		}
		err = tx.Raw("SELECT crawler_id, bucket, COUNT(*) AS n FROM author_counts WHERE (crawler_id, bucket) IN (VALUES "+values+") GROUP BY crawler_id, bucket", args...).
			Scan(&counts).Error
		if err != nil {
			return fmt.Errorf("count authors of %d crawler hours: %w", len(chunk), err)
		}
		for _, c := range counts {
			if c.N > int64(compactAuthorsAt) {
				if err := compactAuthorsTx(tx, bucketKey{c.CrawlerID, dbTime(c.Bucket)}, week); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// weekUpsert adds a row's counts to an author's in author_week, the newest
// non-empty name and id kept.
var weekUpsert = clause.OnConflict{
	Columns: []clause.Column{{Name: "crawler_id"}, {Name: "author_key"}},
	DoUpdates: clause.Assignments(map[string]any{
		"comments":  gorm.Expr("author_week.comments + excluded.comments"),
		"reposts":   gorm.Expr("author_week.reposts + excluded.reposts"),
		"likes":     gorm.Expr("author_week.likes + excluded.likes"),
		"author":    gorm.Expr("CASE WHEN excluded.author <> '' THEN excluded.author ELSE author_week.author END"),
		"author_id": gorm.Expr("CASE WHEN excluded.author_id <> '' THEN excluded.author_id ELSE author_week.author_id END"),
	}),
}

// addWeekTx adds to author_week the author counts of hours it has added
// already (late increments: an increment is usually applied before its
// hour closes); rows are in (crawler, hour, key) order, so a later hour's
// name wins.
func addWeekTx(tx *gorm.DB, rows []authorCountRow, week weekHours) error {
	type key struct {
		crawler int64
		author  string
	}
	sums := map[key]*authorWeekRow{}
	for _, r := range rows {
		if r.Bucket.Before(week.since) || !r.Bucket.Before(week.until) {
			continue
		}
		k := key{r.CrawlerID, r.AuthorKey}
		w := sums[k]
		if w == nil {
			w = &authorWeekRow{CrawlerID: r.CrawlerID, AuthorKey: r.AuthorKey}
			sums[k] = w
		}
		w.Comments += r.Comments
		w.Reposts += r.Reposts
		w.Likes += r.Likes
		if r.Author != "" {
			w.Author = r.Author
		}
		if r.AuthorID != "" {
			w.AuthorID = r.AuthorID
		}
	}
	if len(sums) == 0 {
		return nil
	}
	out := make([]authorWeekRow, 0, len(sums))
	for _, w := range sums {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b authorWeekRow) int {
		return cmp.Or(cmp.Compare(a.CrawlerID, b.CrawlerID), cmp.Compare(a.AuthorKey, b.AuthorKey))
	})
	if err := tx.Clauses(weekUpsert).CreateInBatches(out, rowsPerStatement/4).Error; err != nil {
		return fmt.Errorf("add to the week's authors: %w", err)
	}
	return nil
}

// MoveAuthorWeek makes author_week count the hours from since to before
// until: the hours before since leave it (their counts subtracted, the
// authors left with none removed) and the closed hours before until are
// added, each in one statement. A week that already counts them is left
// alone; a week that would keep no hour starts again empty.
func (s *Store) MoveAuthorWeek(ctx context.Context, since, until time.Time) error {
	since, until = dbTime(since.Truncate(time.Hour)), dbTime(until.Truncate(time.Hour))
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		week, err := s.weekFromTx(tx, "UPDATE")
		if err != nil {
			return err
		}
		if !week.since.Before(since) && !week.until.Before(until) {
			return nil
		}
		switch {
		case !week.until.After(since):
			// Nothing it counts stays: start again.
			if err := tx.Where("1 = 1").Delete(&authorWeekRow{}).Error; err != nil {
				return fmt.Errorf("empty the week's authors: %w", err)
			}
			week = weekHours{since, since}
		case week.since.Before(since):
			err = tx.Exec(`UPDATE author_week SET comments = author_week.comments - d.comments, reposts = author_week.reposts - d.reposts,
				likes = author_week.likes - d.likes
				FROM (SELECT crawler_id, author_key, SUM(comments) AS comments, SUM(reposts) AS reposts, SUM(likes) AS likes
					FROM author_counts WHERE bucket >= ? AND bucket < ? GROUP BY crawler_id, author_key) AS d
				WHERE author_week.crawler_id = d.crawler_id AND author_week.author_key = d.author_key`, week.since, since).Error
			if err != nil {
				return fmt.Errorf("subtract the hours that left the week: %w", err)
			}
			if err := tx.Where("comments <= 0").Delete(&authorWeekRow{}).Error; err != nil {
				return fmt.Errorf("remove the authors who left the week: %w", err)
			}
			week.since = since
		}
		if week.until.Before(until) {
			err = tx.Exec(`INSERT INTO author_week (crawler_id, author_key, author, author_id, comments, reposts, likes)
				SELECT crawler_id, author_key, MAX(author), MAX(author_id), SUM(comments), SUM(reposts), SUM(likes)
				FROM author_counts WHERE bucket >= ? AND bucket < ? GROUP BY crawler_id, author_key
				ON CONFLICT (crawler_id, author_key) DO UPDATE SET comments = author_week.comments + excluded.comments,
					reposts = author_week.reposts + excluded.reposts, likes = author_week.likes + excluded.likes,
					author = CASE WHEN excluded.author <> '' THEN excluded.author ELSE author_week.author END,
					author_id = CASE WHEN excluded.author_id <> '' THEN excluded.author_id ELSE author_week.author_id END`,
				week.until, until).Error
			if err != nil {
				return fmt.Errorf("add the hours that closed to the week: %w", err)
			}
			week.until = until
		}
		return tx.Model(&authorWeekFromRow{}).Where("id = ?", 1).Updates(map[string]any{"since": week.since, "until": week.until}).Error
	})
	if err != nil {
		return fmt.Errorf("sqlstore: unable to move the week's authors to %s–%s: %w", since.Format(time.RFC3339), until.Format(time.RFC3339), err)
	}
	return nil
}

// compactAuthorsTx keeps a crawler hour's maxAuthorsPerHour authors with
// the most comments (ties: the smaller key) and folds the others into its
// tail row, in author_week too when the week has added the hour.
func compactAuthorsTx(tx *gorm.DB, b bucketKey, week weekHours) error {
	var keep []string
	err := tx.Model(&authorCountRow{}).Where("crawler_id = ? AND bucket = ? AND author_key <> ?", b.crawler, b.at, tailAuthor).
		Order("comments DESC, author_key").Limit(maxAuthorsPerHour).Pluck("author_key", &keep).Error
	if err != nil {
		return fmt.Errorf("read authors of crawler %d: %w", b.crawler, err)
	}
	if len(keep) < maxAuthorsPerHour {
		return nil
	}
	var last authorCountRow
	if err := tx.Where("crawler_id = ? AND bucket = ? AND author_key = ?", b.crawler, b.at, keep[len(keep)-1]).Take(&last).Error; err != nil {
		return fmt.Errorf("read authors of crawler %d: %w", b.crawler, err)
	}
	// The folded rows: fewer comments than the last kept, or as many and a
	// greater key.
	fold := tx.Model(&authorCountRow{}).Where("crawler_id = ? AND bucket = ? AND author_key <> ?", b.crawler, b.at, tailAuthor).
		Where("comments < ? OR (comments = ? AND author_key > ?)", last.Comments, last.Comments, last.AuthorKey)
	var sum struct{ Comments, Reposts, Likes int64 }
	if err := fold.Session(&gorm.Session{}).Select("COALESCE(SUM(comments), 0) AS comments, COALESCE(SUM(reposts), 0) AS reposts, COALESCE(SUM(likes), 0) AS likes").
		Scan(&sum).Error; err != nil {
		return fmt.Errorf("fold authors of crawler %d: %w", b.crawler, err)
	}
	if sum.Comments == 0 {
		return nil
	}
	if !b.at.Before(week.since) && b.at.Before(week.until) {
		err := tx.Exec(`UPDATE author_week SET comments = author_week.comments - f.comments, reposts = author_week.reposts - f.reposts,
			likes = author_week.likes - f.likes
			FROM (SELECT author_key, comments, reposts, likes FROM author_counts
				WHERE crawler_id = ? AND bucket = ? AND author_key <> ? AND (comments < ? OR (comments = ? AND author_key > ?))) AS f
			WHERE author_week.crawler_id = ? AND author_week.author_key = f.author_key`,
			b.crawler, b.at, tailAuthor, last.Comments, last.Comments, last.AuthorKey, b.crawler).Error
		if err != nil {
			return fmt.Errorf("fold the week's authors of crawler %d: %w", b.crawler, err)
		}
		if err := tx.Where("crawler_id = ? AND comments <= 0", b.crawler).Delete(&authorWeekRow{}).Error; err != nil {
			return fmt.Errorf("fold the week's authors of crawler %d: %w", b.crawler, err)
		}
		tail := authorWeekRow{CrawlerID: b.crawler, AuthorKey: tailAuthor, Comments: sum.Comments, Reposts: sum.Reposts, Likes: sum.Likes}
		if err := tx.Clauses(weekUpsert).Create(&tail).Error; err != nil {
			return fmt.Errorf("fold the week's authors of crawler %d: %w", b.crawler, err)
		}
	}
	if err := fold.Session(&gorm.Session{}).Delete(&authorCountRow{}).Error; err != nil {
		return fmt.Errorf("fold authors of crawler %d: %w", b.crawler, err)
	}
	upsert := clause.OnConflict{
		Columns: []clause.Column{{Name: "crawler_id"}, {Name: "bucket"}, {Name: "author_key"}},
		DoUpdates: clause.Assignments(map[string]any{
			"comments": gorm.Expr("author_counts.comments + excluded.comments"),
			"reposts":  gorm.Expr("author_counts.reposts + excluded.reposts"),
			"likes":    gorm.Expr("author_counts.likes + excluded.likes"),
		}),
	}
	tail := authorCountRow{CrawlerID: b.crawler, Bucket: b.at, AuthorKey: tailAuthor, Comments: sum.Comments, Reposts: sum.Reposts, Likes: sum.Likes}
	if err := tx.Clauses(upsert).Create(&tail).Error; err != nil {
		return fmt.Errorf("fold authors of crawler %d: %w", b.crawler, err)
	}
	return nil
}
