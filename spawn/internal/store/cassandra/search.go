package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Searcher = (*Store)(nil)

const (
	// searchFetchRows is how many rows a search fetches from a partition
	// at a time (the driver pages through the rest).
	searchFetchRows = 1000
	// searchCheckEvery is how many rows a search reads between looks at
	// its time budget.
	searchCheckEvery = 256
)

// searchCursor is where a search goes on: a day partition and, when the
// page stopped inside it, the clustering key of the last row read
// (published time in Unix milliseconds, comment id). The next page reads
// the rows after that key in clustering order, so rows written meanwhile
// are neither read twice nor shift what comes next.
type searchCursor struct {
	Day   string `json:"d"`
	After bool   `json:"a,omitempty"`
	MS    int64  `json:"t,omitempty"`
	ID    string `json:"i,omitempty"`
}

func (c searchCursor) encode() string { return encodeCursor(c) }

func decodeSearchCursor(s string) (searchCursor, time.Time, error) {
	var c searchCursor
	day, err := decodeDayCursor(s, &c, &c.Day)
	return c, day, err
}

// errSearchStop ends a search's read of a partition: its page is full, or
// it reached a bound.
var errSearchStop = errors.New("cassandra: search stops")

// Search reads a crawler's partitions newest day first (crawler_days lists
// them), each in its clustering order (newest published first, then by
// comment id), and keeps the rows q matches. The cursor is the day and the
// clustering key of the last row read.
func (s *Store) Search(ctx context.Context, crawlerID int64, q store.Search) (store.SearchPage, error) {
	limit := max(q.Limit, 1)
	maxScan, deadline := q.Bounds(time.Now())
	since, until := exportMinTime, exportMaxTime
	if !q.Range.Since.IsZero() && q.Range.Since.After(since) {
		since = q.Range.Since.UTC()
	}
	if !q.Range.Until.IsZero() && q.Range.Until.Before(until) {
		until = q.Range.Until.UTC()
	}
	page := store.SearchPage{Comments: make([]api.Comment, 0, min(limit, 1024))}
	if !since.Before(until) {
		return page, nil
	}
	firstDay := since.Truncate(24 * time.Hour)
	lastDay := until.Add(-time.Millisecond).Truncate(24 * time.Hour)
	var (
		day time.Time
		at  searchCursor
	)
	if q.Cursor != "" {
		var err error
		if at, day, err = decodeSearchCursor(q.Cursor); err != nil {
			return store.SearchPage{}, err
		}
	} else {
		var ok bool
		var err error
		if day, ok, err = s.prevDay(ctx, crawlerID, lastDay, firstDay, true); err != nil || !ok {
			return page, err
		}
	}
	ks := s.cfg.Keyspace
	const cols = `SELECT comment_id, published_at, thread_id, ` + bodyCols + ` FROM `
	tieStmt := cols + ks + `.comments WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id > ?`
	restStmt := cols + ks + `.comments WHERE crawler_id = ? AND day = ? AND published_at >= ? AND published_at < ?`
	var last api.Comment
	read := func(stmt string, args ...any) error {
		cq := s.session.Query(stmt, args...).WithContext(ctx).PageSize(searchFetchRows)
		it := cq.Iter()
		var stop error
		for {
			c := api.Comment{CrawlerID: crawlerID}
			if !scanComment(it, &c, true) {
				break
			}
			last = c
			page.Scanned++
			if q.Matches(&c) {
				page.Comments = append(page.Comments, c)
			}
			if len(page.Comments) >= limit || page.Scanned >= maxScan ||
				page.Scanned%searchCheckEvery == 0 && time.Now().After(deadline) {
				stop = errSearchStop
				break
			}
		}
		err := it.Close()
		cq.Release()
		if err != nil {
			return fmt.Errorf("cassandra: search of crawler %d, day %s: %w", crawlerID, day.Format(exportDayLayout), err)
		}
		return stop
	}
	for {
		upper := until
		var err error
		if at.After {
			p := time.UnixMilli(at.MS).UTC()
			if !p.Before(since) && p.Before(until) {
				err = read(tieStmt, crawlerID, day, p, at.ID)
			}
			upper = minTime(upper, p)
		}
		if err == nil {
			err = read(restStmt, crawlerID, day, since, upper)
		}
		if errors.Is(err, errSearchStop) {
			page.Next = searchCursor{Day: day.Format(exportDayLayout), After: true, MS: last.PublishedAt.UnixMilli(), ID: last.ID}.encode()
			return page, nil
		}
		if err != nil {
			return store.SearchPage{}, err
		}
		var ok bool
		if day, ok, err = s.prevDay(ctx, crawlerID, day, firstDay, false); err != nil {
			return store.SearchPage{}, err
		}
		if !ok {
			return page, nil
		}
		at = searchCursor{}
		if err := ctx.Err(); err != nil {
			return store.SearchPage{}, err
		}
		if time.Now().After(deadline) {
			page.Next = searchCursor{Day: day.Format(exportDayLayout)}.encode()
			return page, nil
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// prevDay is the last day of a crawler in crawler_days before from (or at
// it, when inclusive) and not before first.
func (s *Store) prevDay(ctx context.Context, crawlerID int64, from, first time.Time, inclusive bool) (time.Time, bool, error) {
	op := "<"
	if inclusive {
		op = "<="
	}
	stmt := `SELECT day FROM ` + s.cfg.Keyspace + `.crawler_days WHERE crawler_id = ? AND day ` + op +
		` ? AND day >= ? ORDER BY day DESC LIMIT 1`
	var day time.Time
	err := s.session.Query(stmt, crawlerID, from, first).WithContext(ctx).Scan(&day)
	switch {
	case err == nil:
		return day.UTC(), true, nil
	case errors.Is(err, gocql.ErrNotFound):
		return time.Time{}, false, nil
	default:
		return time.Time{}, false, fmt.Errorf("cassandra: search of crawler %d: days: %w", crawlerID, err)
	}
}
