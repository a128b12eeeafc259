package cassandra

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Exporter = (*Store)(nil)

const (
	// exportDayLayout writes a day in a cursor.
	exportDayLayout = "2006-01-02"
	// maxExportPage caps one page's rows, as Cassandra's default fetch size.
	maxExportPage = 5000
)

// Export bounds for an open side of a range, and the limits of a given
// one: the driver marshals a date through UnixNano, which holds the years
// 1678 to 2261 only.
var (
	exportMinTime = time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)
	exportMaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// exportCursor is where an export goes on: a day partition and the driver's
// paging state within it (empty: the day's first row).
type exportCursor struct {
	Day   string `json:"d"`
	State []byte `json:"p,omitempty"`
}

func (c exportCursor) encode() string { return encodeCursor(c) }

func decodeExportCursor(s string) (exportCursor, time.Time, error) {
	var c exportCursor
	day, err := decodeDayCursor(s, &c, &c.Day)
	return c, day, err
}

// encodeCursor writes a cursor as base64url JSON.
func encodeCursor(c any) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeDayCursor reads s, written by encodeCursor, into c, and returns
// the day partition *day (a field of c) names.
func decodeDayCursor(s string, c any, day *string) (time.Time, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, c) != nil {
		return time.Time{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	d, err := time.Parse(exportDayLayout, *day)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	return d, nil
}

// Export reads a crawler's comments partition by partition, oldest day
// first (crawler_days lists them), each in its clustering order (newest
// published first). The cursor is the day and the driver's paging state, so
// a page is one query and the next one starts where it stopped.
func (s *Store) Export(ctx context.Context, crawlerID int64, r store.Range, cur string, limit int) (store.Page, error) {
	limit = max(1, min(limit, maxExportPage))
	since, until := exportMinTime, exportMaxTime
	if !r.Since.IsZero() && r.Since.After(since) {
		since = r.Since.UTC()
	}
	if !r.Until.IsZero() && r.Until.Before(until) {
		until = r.Until.UTC()
	}
	if !since.Before(until) {
		return store.Page{Comments: []api.Comment{}}, nil
	}
	firstDay := since.Truncate(24 * time.Hour)
	lastDay := until.Add(-time.Millisecond).Truncate(24 * time.Hour)
	var (
		day   time.Time
		state []byte
	)
	if cur != "" {
		c, d, err := decodeExportCursor(cur)
		if err != nil {
			return store.Page{}, err
		}
		day, state = d, c.State
	} else {
		var ok bool
		var err error
		if day, ok, err = s.nextDay(ctx, crawlerID, firstDay, lastDay, true); err != nil || !ok {
			return store.Page{Comments: []api.Comment{}}, err
		}
	}
	ks := s.cfg.Keyspace
	selectPage := `SELECT comment_id, published_at, thread_id, ` + bodyCols + ` FROM ` + ks + `.comments
		WHERE crawler_id = ? AND day = ? AND published_at >= ? AND published_at < ?`
	page := store.Page{Comments: make([]api.Comment, 0, min(limit, 1024))}
	for {
		want := limit - len(page.Comments)
		q := s.session.Query(selectPage, crawlerID, day, since, until).WithContext(ctx).PageSize(want).PageState(state)
		it := q.Iter()
		next := it.PageState()
		for {
			c := api.Comment{CrawlerID: crawlerID}
			if !scanComment(it, &c, true) {
				break
			}
			page.Comments = append(page.Comments, c)
		}
		err := it.Close()
		q.Release()
		if err != nil {
			return store.Page{}, fmt.Errorf("cassandra: export of crawler %d, day %s: %w", crawlerID, day.Format(exportDayLayout), err)
		}
		if len(next) > 0 {
			state = next
		} else {
			var ok bool
			if day, ok, err = s.nextDay(ctx, crawlerID, day, lastDay, false); err != nil {
				return store.Page{}, err
			}
			if !ok {
				return page, nil
			}
			state = nil
		}
		if len(page.Comments) >= limit {
			page.Next = exportCursor{Day: day.Format(exportDayLayout), State: state}.encode()
			return page, nil
		}
	}
}

// nextDay is the first day of a crawler in crawler_days after from (or at
// it, when inclusive) and not after last.
func (s *Store) nextDay(ctx context.Context, crawlerID int64, from, last time.Time, inclusive bool) (time.Time, bool, error) {
	op := ">"
	if inclusive {
		op = ">="
	}
	stmt := `SELECT day FROM ` + s.cfg.Keyspace + `.crawler_days WHERE crawler_id = ? AND day ` + op +
		` ? AND day <= ? ORDER BY day ASC LIMIT 1`
	var day time.Time
	err := s.session.Query(stmt, crawlerID, from, last).WithContext(ctx).Scan(&day)
	switch {
	case err == nil:
		return day.UTC(), true, nil
	case errors.Is(err, gocql.ErrNotFound):
		return time.Time{}, false, nil
	default:
		return time.Time{}, false, fmt.Errorf("cassandra: export of crawler %d: days: %w", crawlerID, err)
	}
}
