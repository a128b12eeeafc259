package cassandra

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/textindex"
)

var _ store.Searcher = (*Store)(nil)

const (
	// searchFetchRows is how many rows a scan fetches from a partition at
	// a time (the driver pages through the rest).
	searchFetchRows = 1000
	// searchCheckEvery is how many rows a search reads between looks at
	// its time budget.
	searchCheckEvery = 256
	// searchAhead is how many day partitions an index search asks at once:
	// a rare term is found in few of them, and asking them one after the
	// other would cost a round trip per day.
	searchAhead = 16
	// maxIndexFetch caps the rows one index lookup fetches at a time.
	maxIndexFetch = 500
)

// searchCursor is where a search goes on: a day partition and, when the
// page stopped inside it, the clustering key of the last row read
// (published time in Unix milliseconds, comment id). The next page reads
// the rows after that key in clustering order, so rows written meanwhile
// are neither read twice nor shift what comes next. A scan and an index
// lookup read a partition in the same order, so a cursor serves both.
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
	if err != nil {
		return c, day, err
	}
	if c.After && (c.MS < exportMinTime.UnixMilli() || c.MS >= exportMaxTime.UnixMilli()) {
		return c, day, fmt.Errorf("%w: %q", store.ErrCursor, s)
	}
	return c, day, nil
}

// errSearchStop ends a search's read of a partition: its page is full, or
// it reached a bound.
var errSearchStop = errors.New("cassandra: search stops")

// Search reads a crawler's partitions newest day first (crawler_days lists
// them), each in its clustering order (newest published first, then by
// comment id), and keeps the rows q matches. When the query can be
// narrowed (textindex.PlanOf) and the day's rows carry search terms, a
// partition is read through the terms index: only the rows holding every
// term of one of the plan's conjunctions, in the same order, several days
// asked at once; otherwise every row of it is read. The cursor is the day
// and the clustering key of the last row read.
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
	var at searchCursor
	if q.Cursor != "" {
		var day time.Time
		var err error
		if at, day, err = decodeSearchCursor(q.Cursor); err != nil {
			return store.SearchPage{}, err
		}
		lastDay = day
	}
	var plan textindex.Plan
	if q.Query != nil {
		plan = textindex.PlanOf(q.Query)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	days := s.searchDays(ctx, crawlerID, lastDay, firstDay)
	defer days.close()

	ahead := 1
	if plan != nil {
		ahead = searchAhead
	}
	var pending []*dayRead
	defer func() {
		for _, d := range pending {
			d.close()
		}
	}()
	var last api.Comment
	read := false
	stop := func(day time.Time) (store.SearchPage, error) {
		page.Next = searchCursor{Day: day.Format(exportDayLayout), After: true, MS: last.PublishedAt.UnixMilli(), ID: last.ID}.encode()
		page.Frontier = last.PublishedAt
		return page, nil
	}
	for first := true; ; first = false {
		for len(pending) < ahead {
			day, ok := days.next()
			if !ok {
				break
			}
			var cur searchCursor
			if day.Equal(lastDay) && at.After {
				cur = at
			}
			indexed := plan != nil && !day.Before(s.textFrom)
			pending = append(pending, s.startDay(ctx, crawlerID, day, cur, since, until, plan, indexed, limit))
		}
		if err := days.err(); err != nil {
			return store.SearchPage{}, err
		}
		if len(pending) == 0 {
			return page, nil
		}
		d := pending[0]
		pending = pending[1:]
		if !first {
			if err := ctx.Err(); err != nil {
				d.close()
				return store.SearchPage{}, err
			}
			if read && time.Now().After(deadline) {
				d.close()
				page.Next = searchCursor{Day: d.day.Format(exportDayLayout)}.encode()
				page.Frontier = d.day.Add(24*time.Hour - time.Millisecond)
				if last := until.Add(-time.Millisecond); last.Before(page.Frontier) {
					page.Frontier = last
				}
				return page, nil
			}
		}
		err := d.each(func(c *api.Comment) error {
			last, read = *c, true
			page.Scanned++
			if q.Matches(c) {
				page.Comments = append(page.Comments, *c)
			}
			if len(page.Comments) >= limit || page.Scanned >= maxScan ||
				page.Scanned%searchCheckEvery == 0 && time.Now().After(deadline) {
				return errSearchStop
			}
			return nil
		})
		d.close()
		if errors.Is(err, errSearchStop) {
			return stop(d.day)
		}
		if err != nil {
			return store.SearchPage{}, fmt.Errorf("cassandra: search of crawler %d, day %s: %w", crawlerID, d.day.Format(exportDayLayout), err)
		}
	}
}

// dayList reads a crawler's days from crawler_days, newest first, a page
// of the driver at a time.
type dayList struct {
	it  *gocql.Iter
	q   *gocql.Query
	bad error
}

func (s *Store) searchDays(ctx context.Context, crawlerID int64, from, first time.Time) *dayList {
	q := s.session.Query(`SELECT day FROM `+s.cfg.Keyspace+`.crawler_days WHERE crawler_id = ? AND day <= ? AND day >= ? ORDER BY day DESC`,
		crawlerID, from, first).WithContext(ctx).Idempotent(true).PageSize(searchAhead * 4)
	return &dayList{it: q.Iter(), q: q}
}

func (l *dayList) next() (time.Time, bool) {
	if l.it == nil {
		return time.Time{}, false
	}
	var day time.Time
	if l.it.Scan(&day) {
		return day.UTC(), true
	}
	l.bad = l.it.Close()
	l.it = nil
	return time.Time{}, false
}

func (l *dayList) err() error {
	if l.bad != nil {
		return fmt.Errorf("cassandra: search: days: %w", l.bad)
	}
	return nil
}

func (l *dayList) close() {
	if l.it != nil {
		l.it.Close()
	}
	l.q.Release()
}

// dayRead reads one day partition of a search: the row sources of the
// partition (one for a scan, one per conjunction of the plan for the
// index), their first pages asked as soon as it starts.
type dayRead struct {
	day   time.Time
	ready chan struct{}
	srcs  []*rowSource
	err   error
}

// rowSource reads rows of one partition in clustering order from its
// statements one after the other (the rest of the cursor's millisecond,
// then the rows before it).
type rowSource struct {
	crawler int64
	stmts   []*gocql.Query
	it      *gocql.Iter
	head    api.Comment
	has     bool
	done    bool
	err     error
}

func (r *rowSource) advance() {
	r.has = false
	for !r.done {
		if r.it == nil {
			if len(r.stmts) == 0 {
				r.done = true
				return
			}
			r.it = r.stmts[0].Iter()
		}
		r.head = api.Comment{CrawlerID: r.crawler}
		if scanComment(r.it, &r.head, true) {
			r.has = true
			return
		}
		if err := r.it.Close(); err != nil {
			r.err, r.done = err, true
			return
		}
		r.it = nil
		r.stmts[0].Release()
		r.stmts = r.stmts[1:]
	}
}

func (r *rowSource) close() {
	if r.it != nil {
		r.it.Close()
		r.it = nil
	}
	for _, q := range r.stmts {
		q.Release()
	}
	r.stmts = nil
	r.done = true
}

// startDay starts reading a day partition: its first rows are fetched in
// the background while earlier days are read.
func (s *Store) startDay(ctx context.Context, crawlerID int64, day time.Time, at searchCursor, since, until time.Time,
	plan textindex.Plan, indexed bool, limit int) *dayRead {
	d := &dayRead{day: day, ready: make(chan struct{})}
	ks := s.cfg.Keyspace
	const cols = `SELECT comment_id, published_at, thread_id, ` + bodyCols + ` FROM `
	conjs := []string{""}
	var binds [][]any
	binds = append(binds, nil)
	fetch := searchFetchRows
	if indexed {
		conjs, binds = conjs[:0], binds[:0]
		for _, conj := range plan {
			conjs = append(conjs, strings.Repeat(" AND terms CONTAINS ?", len(conj)))
			args := make([]any, len(conj))
			for i, t := range conj {
				args[i] = t
			}
			binds = append(binds, args)
		}
		fetch = min(max(limit, 20), maxIndexFetch)
	}
	for i, extra := range conjs {
		src := &rowSource{crawler: crawlerID}
		upper := until
		if at.After {
			p := time.UnixMilli(at.MS).UTC()
			if !p.Before(since) && p.Before(until) {
				args := append([]any{crawlerID, day, p, at.ID}, binds[i]...)
				src.stmts = append(src.stmts, s.session.Query(cols+ks+`.comments WHERE crawler_id = ? AND day = ? AND published_at = ? AND comment_id > ?`+extra, args...).
					WithContext(ctx).Idempotent(true).PageSize(fetch))
			}
			if p.Before(upper) {
				upper = p
			}
		}
		args := append([]any{crawlerID, day, since, upper}, binds[i]...)
		src.stmts = append(src.stmts, s.session.Query(cols+ks+`.comments WHERE crawler_id = ? AND day = ? AND published_at >= ? AND published_at < ?`+extra, args...).
			WithContext(ctx).Idempotent(true).PageSize(fetch))
		d.srcs = append(d.srcs, src)
	}
	go func() {
		defer close(d.ready)
		var wg sync.WaitGroup
		for _, src := range d.srcs {
			wg.Go(src.advance)
		}
		wg.Wait()
	}()
	return d
}

// each calls fn with the day's rows in clustering order (newest
// published first, then by id), each once, until fn returns an error.
func (d *dayRead) each(fn func(*api.Comment) error) error {
	<-d.ready
	for {
		var best *rowSource
		for _, src := range d.srcs {
			if src.err != nil {
				return src.err
			}
			if src.has && (best == nil || before(&src.head, &best.head)) {
				best = src
			}
		}
		if best == nil {
			return nil
		}
		c := best.head
		// The same row found by several conjunctions is read once.
		for _, src := range d.srcs {
			if src.has && src.head.ID == c.ID && src.head.PublishedAt.Equal(c.PublishedAt) {
				src.advance()
			}
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
}

// before reports whether a comes before b in a partition's clustering
// order: newer first, then by id.
func before(a, b *api.Comment) bool {
	if !a.PublishedAt.Equal(b.PublishedAt) {
		return a.PublishedAt.After(b.PublishedAt)
	}
	return a.ID < b.ID
}

func (d *dayRead) close() {
	<-d.ready
	for _, src := range d.srcs {
		src.close()
	}
}
