package sqlstore

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/axiomhq/hyperloglog"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/termq"
)

// Analytics: term counts, activity and query suggestions per crawler.
//
// They travel inside usage increments (api.Increment.Analytics) and are
// applied by ApplyIncrements in the transaction that applies the usage, so
// an increment's analytics are applied once, as its usage is, whatever
// polls are lost, repeated or reordered
// (docs/decisions/0003-usage-increments-applied-once.md). applied_increments.analytics records it; it is set by a
// conditional UPDATE, so a copy that arrives later, in this transaction or
// a concurrent one, finds it set and adds nothing. Usage recovered from the
// store for a lost node carries no analytics; if the node reports the
// increment later, its analytics are applied then.
//
// Sizes are bounded: a crawler hour keeps its top maxTermsPerHour terms
// (the rest is folded into the row with the empty term, the tail), minute
// buckets live minuteRetention and hour buckets and terms
// analyticsRetention, and a crawler keeps maxSuggestions candidates.
const (
	// maxTermsPerHour is how many terms a crawler hour keeps.
	maxTermsPerHour = 200
	// compactTermsAt is the row count of a crawler hour that triggers
	// folding it back to maxTermsPerHour: compacting at every apply would
	// rewrite the bucket each time.
	compactTermsAt = maxTermsPerHour * 3 / 2
	// maxSuggestions is how many candidate terms the hub keeps per crawler.
	maxSuggestions = 100
	// minuteRetention is how long minute buckets are kept.
	minuteRetention = 25 * time.Hour
	// analyticsRetention is how long hour buckets are kept.
	analyticsRetention = 8 * 24 * time.Hour
	// analyticsPruneEvery is how often old buckets are deleted.
	analyticsPruneEvery = 10 * time.Minute
	// sketchPrecision matches the spawns' author sketches.
	sketchPrecision = 12
)

// tailTerm is the term of the row that counts a crawler hour's cut-off
// terms.
const tailTerm = ""

type termCountRow struct {
	CrawlerID int64
	Bucket    time.Time
	Term      string
	Count     int64
}

func (termCountRow) TableName() string { return "term_counts" }

type activityRow struct {
	CrawlerID int64
	Bucket    time.Time
	Comments  int64
	Authors   []byte
	// Positive and Negative count the bucket's comments of each
	// sentiment; the rest are neutral.
	Positive int64
	Negative int64
}

type suggestionRow struct {
	CrawlerID int64
	Term      string
	Score     float64
	Count     int64
}

func (suggestionRow) TableName() string { return "crawler_suggestions" }

// analyticsPrune remembers when old buckets were last deleted.
type analyticsPrune struct {
	mu   sync.Mutex
	last time.Time
}

type bucketKey struct {
	crawler int64
	at      time.Time
}

type termKey struct {
	bucketKey
	term string
}

// applyAnalyticsTx applies the analytics of the increments not applied
// before; order lists incs by id, the order their rows are locked in.
// inserted marks the increments recorded by this transaction, whose
// analytics the insert marked applied already; an increment recorded
// before (its usage recovered from the store) has them marked here, by a
// conditional UPDATE that only one copy can win.
func (s *Store) applyAnalyticsTx(tx *gorm.DB, incs []api.Increment, order []int, inserted []bool) error {
	terms := map[termKey]int64{}
	minutes := map[bucketKey]*activityRow{}
	hours := map[bucketKey]*activityRow{}
	cands := map[int64][]api.Suggestion{}
	voices := newVoices()
	for _, i := range order {
		inc := incs[i]
		a := inc.Analytics
		if a == nil {
			continue
		}
		if !inserted[i] {
			res := tx.Model(&AppliedIncrement{}).Where("node_id = ? AND seq = ? AND analytics = ?", inc.NodeID, inc.Seq, false).
				UpdateColumn("analytics", true)
			if res.Error != nil {
				return fmt.Errorf("mark analytics of increment %s/%d: %w", inc.NodeID, inc.Seq, res.Error)
			}
			if res.RowsAffected != 1 {
				continue // applied before
			}
		}
		for _, h := range a.Terms {
			at := dbTime(h.At.Truncate(time.Hour))
			for _, t := range h.Terms {
				if t.Count > 0 && t.Term != tailTerm && len(t.Term) <= 130 {
					terms[termKey{bucketKey{inc.CrawlerID, at}, t.Term}] += t.Count
				}
			}
			if h.Other > 0 {
				terms[termKey{bucketKey{inc.CrawlerID, at}, tailTerm}] += h.Other
			}
		}
		for _, m := range a.Minutes {
			if m.Comments <= 0 {
				continue
			}
			addActivity(minutes, bucketKey{inc.CrawlerID, dbTime(m.At.Truncate(time.Minute))}, m)
			addActivity(hours, bucketKey{inc.CrawlerID, dbTime(m.At.Truncate(time.Hour))}, m)
		}
		cands[inc.CrawlerID] = append(cands[inc.CrawlerID], a.Candidates...)
		voices.add(inc.CrawlerID, a)
	}
	if err := s.addTermsTx(tx, terms); err != nil {
		return err
	}
	if err := s.addActivityTx(tx, "activity_minutes", minutes); err != nil {
		return err
	}
	if err := s.addActivityTx(tx, "activity_hours", hours); err != nil {
		return err
	}
	// After the hours: their comments bound the authors of each hour.
	if err := s.applyVoicesTx(tx, voices); err != nil {
		return err
	}
	return s.addSuggestionsTx(tx, cands)
}

// addActivity merges one minute's activity into a bucket.
func addActivity(into map[bucketKey]*activityRow, k bucketKey, m api.MinuteActivity) {
	r := into[k]
	if r == nil {
		r = &activityRow{CrawlerID: k.crawler, Bucket: k.at}
		into[k] = r
	}
	r.Comments += m.Comments
	// A spawn never counts more of a label than comments; a bad
	// increment is held to that, so the neutral rest is never negative.
	pos := min(max(m.Positive, 0), m.Comments)
	r.Positive += pos
	r.Negative += min(max(m.Negative, 0), m.Comments-pos)
	r.Authors = mergeSketch(r.Authors, m.Authors)
}

// mergeSketch returns the union of two author sketches; an unreadable one
// counts as empty (it can only lower the author estimate).
func mergeSketch(a, b []byte) []byte {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	var x, y hyperloglog.Sketch
	if x.UnmarshalBinary(a) != nil {
		return b
	}
	if y.UnmarshalBinary(b) != nil || x.Merge(&y) != nil {
		return a
	}
	out, err := x.MarshalBinary()
	if err != nil {
		return a
	}
	return out
}

// sketchEstimate is the number of distinct authors a sketch holds.
func sketchEstimate(b []byte) int64 {
	if len(b) == 0 {
		return 0
	}
	var sk hyperloglog.Sketch
	if sk.UnmarshalBinary(b) != nil {
		return 0
	}
	return int64(sk.Estimate())
}

// addTermsTx adds term counts, rows in key order, and folds every crawler
// hour that grew past compactTermsAt back to its top terms.
func (s *Store) addTermsTx(tx *gorm.DB, terms map[termKey]int64) error {
	if len(terms) == 0 {
		return nil
	}
	rows := make([]termCountRow, 0, len(terms))
	for k, n := range terms {
		rows = append(rows, termCountRow{CrawlerID: k.crawler, Bucket: k.at, Term: k.term, Count: n})
	}
	slices.SortFunc(rows, func(a, b termCountRow) int {
		return cmp.Or(cmp.Compare(a.CrawlerID, b.CrawlerID), a.Bucket.Compare(b.Bucket), cmp.Compare(a.Term, b.Term))
	})
	upsert := clause.OnConflict{
		Columns:   []clause.Column{{Name: "crawler_id"}, {Name: "bucket"}, {Name: "term"}},
		DoUpdates: clause.Assignments(map[string]any{"count": gorm.Expr("term_counts.count + excluded.count")}),
	}
	if err := tx.Clauses(upsert).CreateInBatches(rows, 200).Error; err != nil {
		return fmt.Errorf("add term counts: %w", err)
	}
	var buckets []bucketKey
	for _, r := range rows {
		k := bucketKey{r.CrawlerID, r.Bucket}
		if len(buckets) == 0 || buckets[len(buckets)-1] != k {
			buckets = append(buckets, k)
		}
	}
	// The crawler hours are named as row values, so both databases look
	// each one up by the primary key's prefix, whatever else an hour holds.
	for chunk := range slices.Chunk(buckets, rowsPerStatement) {
		values := s.valuesRows(len(chunk), "BIGINT", "TIMESTAMPTZ")
		args := make([]any, 0, 2*len(chunk))
		for _, b := range chunk {
			args = append(args, b.crawler, b.at)
		}
		var counts []struct {
			CrawlerID int64
			Bucket    time.Time
			N         int64
		}
		err := tx.Raw("SELECT crawler_id, bucket, COUNT(*) AS n FROM term_counts WHERE (crawler_id, bucket) IN (VALUES "+values+") GROUP BY crawler_id, bucket", args...).
			Scan(&counts).Error
		if err != nil {
			return fmt.Errorf("count terms of %d crawler hours: %w", len(chunk), err)
		}
		for _, c := range counts {
			b := bucketKey{c.CrawlerID, dbTime(c.Bucket)}
			if c.N > compactTermsAt {
				if err := compactTermsTx(tx, b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// bucketLists splits bucket keys into the distinct crawlers and times a
// query selects by: a superset of the keys, which the caller filters.
func bucketLists(keys []bucketKey) ([]int64, []time.Time) {
	var crawlers []int64
	var ats []time.Time
	for _, k := range keys {
		if !slices.Contains(crawlers, k.crawler) {
			crawlers = append(crawlers, k.crawler)
		}
		if !slices.ContainsFunc(ats, k.at.Equal) {
			ats = append(ats, k.at)
		}
	}
	return crawlers, ats
}

// compactTermsTx keeps a crawler hour's top maxTermsPerHour terms and
// folds the others' counts into its tail row.
func compactTermsTx(tx *gorm.DB, b bucketKey) error {
	var rows []termCountRow
	if err := tx.Where("crawler_id = ? AND bucket = ?", b.crawler, b.at).Find(&rows).Error; err != nil {
		return fmt.Errorf("read terms of crawler %d: %w", b.crawler, err)
	}
	q := termq.New(maxTermsPerHour)
	var cut []string
	var folded int64
	for _, r := range rows {
		if r.Term == tailTerm {
			continue
		}
		if d, ok := q.Add(r.Term, float64(r.Count), r.Count); ok {
			cut = append(cut, d.Term)
			folded += d.Count
		}
	}
	if len(cut) == 0 {
		return nil
	}
	slices.Sort(cut)
	for chunk := range slices.Chunk(cut, maxIDsPerQuery) {
		if err := tx.Where("crawler_id = ? AND bucket = ? AND term IN ?", b.crawler, b.at, chunk).Delete(&termCountRow{}).Error; err != nil {
			return fmt.Errorf("fold terms of crawler %d: %w", b.crawler, err)
		}
	}
	upsert := clause.OnConflict{
		Columns:   []clause.Column{{Name: "crawler_id"}, {Name: "bucket"}, {Name: "term"}},
		DoUpdates: clause.Assignments(map[string]any{"count": gorm.Expr("term_counts.count + excluded.count")}),
	}
	tail := termCountRow{CrawlerID: b.crawler, Bucket: b.at, Term: tailTerm, Count: folded}
	if err := tx.Clauses(upsert).Create(&tail).Error; err != nil {
		return fmt.Errorf("fold terms of crawler %d: %w", b.crawler, err)
	}
	return nil
}

// addActivityTx merges activity into table's buckets, a few hundred
// buckets a step: the missing ones are created empty, all are read (under
// a row lock on PostgreSQL, in key order; SQLite transactions are serial
// already), the sketches merged in Go, and the merged rows written back in
// one statement.
func (s *Store) addActivityTx(tx *gorm.DB, table string, buckets map[bucketKey]*activityRow) error {
	keys := make([]bucketKey, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b bucketKey) int {
		return cmp.Or(cmp.Compare(a.crawler, b.crawler), a.at.Compare(b.at))
	})
	for chunk := range slices.Chunk(keys, rowsPerStatement) {
		empty := make([]activityRow, len(chunk))
		for i, k := range chunk {
			empty[i] = activityRow{CrawlerID: k.crawler, Bucket: k.at}
		}
		if err := tx.Table(table).Clauses(clause.OnConflict{DoNothing: true}).Create(&empty).Error; err != nil {
			return fmt.Errorf("add %s of %d crawlers: %w", table, len(chunk), err)
		}
		crawlers, ats := bucketLists(chunk)
		read := tx.Table(table).Where("crawler_id IN ? AND bucket IN ?", crawlers, ats).Order("crawler_id, bucket")
		if s.dialect == DialectPostgres {
			read = read.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		var cur []activityRow
		if err := read.Find(&cur).Error; err != nil {
			return fmt.Errorf("read %s of %d crawlers: %w", table, len(chunk), err)
		}
		out := make([]activityRow, 0, len(chunk))
		for _, r := range cur {
			add, ok := buckets[bucketKey{r.CrawlerID, dbTime(r.Bucket)}]
			if !ok {
				continue // selected by the superset only
			}
			out = append(out, activityRow{CrawlerID: r.CrawlerID, Bucket: add.Bucket, Comments: r.Comments + add.Comments,
				Authors: mergeSketch(r.Authors, add.Authors), Positive: r.Positive + add.Positive, Negative: r.Negative + add.Negative})
		}
		if len(out) != len(chunk) {
			return fmt.Errorf("add %s: %d of %d buckets read back", table, len(out), len(chunk))
		}
		set := clause.OnConflict{
			Columns:   []clause.Column{{Name: "crawler_id"}, {Name: "bucket"}},
			DoUpdates: clause.AssignmentColumns([]string{"comments", "authors", "positive", "negative"}),
		}
		if err := tx.Table(table).Clauses(set).Create(&out).Error; err != nil {
			return fmt.Errorf("add %s of %d crawlers: %w", table, len(chunk), err)
		}
	}
	return nil
}

// addSuggestionsTx merges candidates into each crawler's bounded queue of
// suggestions: a term held gains the score and count of its new
// sightings; a new term enters while there is room, or by displacing the
// lowest when it ranks higher (termq.Compare: score, then sightings). A
// few hundred crawlers a step: their queues are read (locked on
// PostgreSQL), merged in Go, and replaced.
func (s *Store) addSuggestionsTx(tx *gorm.DB, cands map[int64][]api.Suggestion) error {
	ids := make([]int64, 0, len(cands))
	for id, c := range cands {
		if len(c) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, rowsPerStatement) {
		var rows []suggestionRow
		read := tx.Where("crawler_id IN ?", chunk).Order("crawler_id, term")
		if s.dialect == DialectPostgres {
			read = read.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := read.Find(&rows).Error; err != nil {
			return fmt.Errorf("read suggestions of %d crawlers: %w", len(chunk), err)
		}
		queues := make(map[int64]*termq.Queue, len(chunk))
		for _, id := range chunk {
			queues[id] = termq.New(maxSuggestions)
		}
		for _, r := range rows {
			queues[r.CrawlerID].Add(r.Term, r.Score, r.Count)
		}
		var out []suggestionRow
		for _, id := range chunk {
			q := queues[id]
			for _, c := range cands[id] {
				if c.Term != "" && len(c.Term) <= 130 && c.Score >= 0 {
					q.Add(c.Term, c.Score, c.Count)
				}
			}
			for _, it := range q.Items() {
				out = append(out, suggestionRow{CrawlerID: id, Term: it.Term, Score: it.Score, Count: it.Count})
			}
		}
		if err := tx.Where("crawler_id IN ?", chunk).Delete(&suggestionRow{}).Error; err != nil {
			return fmt.Errorf("replace suggestions of %d crawlers: %w", len(chunk), err)
		}
		if len(out) == 0 {
			continue
		}
		if err := tx.CreateInBatches(out, rowsPerStatement/4).Error; err != nil {
			return fmt.Errorf("replace suggestions of %d crawlers: %w", len(chunk), err)
		}
	}
	return nil
}
