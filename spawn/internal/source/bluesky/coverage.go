package bluesky

import (
	"maps"
	"slices"
)

// want is how far one query's subscribers have been given the log.
type want struct {
	// after: every post at a position up to it has been handed to the
	// query (or was before its cursor); later ones have not.
	after int64
	// own says after was reached by this source handing posts over, not
	// taken from a cursor the subscriber brought from elsewhere: only then
	// may a post just before it that was never handed over (out of order
	// at the seam) still be delivered.
	own bool
}

// recentPost is a post URI handed over, for the resume overlap.
type recentPost struct {
	uri string
	pos int64
}

// coverage decides which queries get each post, so that a reconnect or a
// replay for a late subscriber repeats nothing for the others. It is not
// safe for concurrent use: the source guards it with its mutex.
//
// A post at position p goes to query q when p > q.after, or, when q.after
// is the source's own doing, when p lies within the overlap before it and
// its URI was not handed over (recent). A post every query wants is emitted
// once without a query uuid, the common case, which moves base, the
// position every query has been given; otherwise it is emitted once per
// query that wants it, tagged with that query's uuid.
type coverage struct {
	overlap  int64 // µs
	base     int64
	queries  map[string]*want // query uuid → what it has had; after ≥ base when set
	maxAfter int64            // at least every query's after
	recent   map[string]int64 // post URI → position
	order    []recentPost     // recent, oldest first
	limit    int
	// read is the position the connection has reached: the last post
	// read, or where it started (math.MaxInt64 for the live tail before
	// its first post). A query behind it needs a reconnect.
	read int64
}

func newCoverage(overlapUS int64, limit int) *coverage {
	return &coverage{overlap: overlapUS, queries: map[string]*want{}, recent: map[string]int64{}, limit: limit}
}

// effective is where q stands: base once every query has had more.
func (c *coverage) effective(q *want) (after int64, own bool) {
	if c.base >= q.after {
		return c.base, true
	}
	return q.after, q.own
}

// set makes the queries those of cursors (query uuid → the oldest
// position its subscribers bring, 0 for none). A new query starts at its
// cursor, or without one where the source stands now (base). It returns
// the oldest position a query now needs read, 0 when none is behind base.
func (c *coverage) set(cursors map[string]int64) (behind int64) {
	maps.DeleteFunc(c.queries, func(uuid string, _ *want) bool {
		_, keep := cursors[uuid]
		return !keep
	})
	for _, uuid := range slices.Sorted(maps.Keys(cursors)) {
		if _, ok := c.queries[uuid]; ok {
			continue // already in step: a later cursor from the hub lags what it had here
		}
		w := &want{after: c.base, own: true}
		if cur := cursors[uuid]; cur > 0 {
			w = &want{after: cur}
		}
		c.queries[uuid] = w
	}
	c.maxAfter = 0
	for _, q := range c.queries {
		c.maxAfter = max(c.maxAfter, q.after)
	}
	return c.behind()
}

// behind is the oldest position a query still needs that the connection
// has already passed; 0 when no query is behind it.
func (c *coverage) behind() int64 {
	var oldest int64
	for _, q := range c.queries {
		if a, _ := c.effective(q); a > 0 && a < c.read && (oldest == 0 || a < oldest) {
			oldest = a
		}
	}
	return oldest
}

// resumeFrom is the position a new connection should start after: the
// oldest of base and every query's position; 0 when nothing was read and
// no query brought a cursor (the live tail).
func (c *coverage) resumeFrom() int64 {
	from := c.base
	for _, q := range c.queries {
		if a, _ := c.effective(q); a > 0 && (from == 0 || a < from) {
			from = a
		}
	}
	return from
}

// afters lists each query's position, for the gap check after a resume.
func (c *coverage) afters() map[string]int64 {
	out := make(map[string]int64, len(c.queries))
	for uuid, q := range c.queries {
		out[uuid], _ = c.effective(q)
	}
	return out
}

// route decides who gets the post uri at pos: everyone (all), the listed
// queries, or nobody; it records the decision as done.
func (c *coverage) route(uri string, pos int64) (all bool, uuids []string) {
	c.read = pos
	if pos > c.base && pos > c.maxAfter {
		c.base = pos
		c.remember(uri, pos)
		return true, nil
	}
	_, seen := c.recent[uri]
	for uuid, q := range c.queries {
		after, own := c.effective(q)
		if pos > after || own && !seen && pos > after-c.overlap {
			uuids = append(uuids, uuid)
		}
	}
	switch {
	case len(uuids) == 0 && len(c.queries) > 0:
		return false, nil
	case len(uuids) == len(c.queries):
		c.base = max(c.base, pos)
		c.remember(uri, pos)
		return true, nil
	}
	slices.Sort(uuids)
	for _, uuid := range uuids {
		q := c.queries[uuid]
		q.after, _ = c.effective(q)
		q.after, q.own = max(q.after, pos), true
		c.maxAfter = max(c.maxAfter, q.after)
	}
	c.remember(uri, pos)
	return false, uuids
}

// remember keeps uri as handed over, forgetting those that fell out of
// the overlap before base, and the oldest beyond the limit.
func (c *coverage) remember(uri string, pos int64) {
	if _, ok := c.recent[uri]; !ok {
		c.order = append(c.order, recentPost{uri, pos})
	}
	c.recent[uri] = pos
	drop := 0
	for drop < len(c.order) && (len(c.order)-drop > c.limit || c.order[drop].pos < c.base-2*c.overlap) {
		if c.recent[c.order[drop].uri] == c.order[drop].pos {
			delete(c.recent, c.order[drop].uri)
		}
		drop++
	}
	c.order = c.order[drop:]
}
