package bluesky

import (
	"maps"
	"math"
	"slices"
)

// maxTaggedCopies bounds the copies of one post tagged for single
// queries; beyond it the post is emitted once for all, and the node's
// per-subscriber de-duplication drops it for the few queries that have had
// it (a subscriber whose cursor is ahead of the connection, for moments).
const maxTaggedCopies = 64

// want is how far one query not in step with the others has been given
// the log.
type want struct {
	// after: every post at a position up to it has been handed to the
	// query (or was before its cursor); later ones have not.
	after int64
	// own says after was reached by this source handing posts over, not
	// taken from a cursor the subscriber brought from elsewhere: only then
	// may a post just before it that was never handed over (out of order
	// at the seam) still be delivered.
	own bool
	// waiting says the connection had passed after when the query came:
	// it gets nothing until a reconnect starts before it.
	waiting bool
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
// Queries in step (inStep) share one position, base, so that the common
// case, a live post every query wants, costs O(1) however many queries
// the node has. A query that arrives with a cursor is tracked on its own
// (others) until it has caught up with base. A post at position p goes to
// a query standing at a when p > a, or, when a is the source's own doing,
// when p lies within the overlap before a and its URI was not handed over
// (recent). A post every query wants is emitted once without a query
// uuid; otherwise once per query that wants it, tagged with its uuid.
type coverage struct {
	overlap int64 // µs
	base    int64
	inStep  map[string]bool
	others  map[string]*want
	recent  map[string]int64 // post URI → position
	order   []recentPost     // recent, oldest first
	limit   int
	high    int64 // the highest position routed
	// read is the position the connection has reached: the last post
	// read, or where it started (math.MaxInt64 for the live tail before
	// its first post). A query arriving behind it waits for a reconnect.
	read int64
}

func newCoverage(overlapUS int64, limit int) *coverage {
	return &coverage{overlap: overlapUS, inStep: map[string]bool{}, others: map[string]*want{}, recent: map[string]int64{}, limit: limit, read: math.MaxInt64}
}

// set makes the queries those of cursors (query uuid → the oldest
// position its subscribers bring, 0 for none). A new query starts at its
// cursor, or without one where the source stands (base). It returns the
// oldest position a query needs that the connection has already passed, 0
// when none: then the connection must start again further back.
func (c *coverage) set(cursors map[string]int64) (behind int64) {
	maps.DeleteFunc(c.inStep, func(uuid string, _ bool) bool { _, keep := cursors[uuid]; return !keep })
	maps.DeleteFunc(c.others, func(uuid string, _ *want) bool { _, keep := cursors[uuid]; return !keep })
	for uuid, cur := range cursors {
		if c.inStep[uuid] || c.others[uuid] != nil {
			continue // a later cursor from the hub lags what the query had here
		}
		if cur <= 0 {
			c.inStep[uuid] = true
			continue
		}
		c.others[uuid] = &want{after: cur, waiting: cur < c.read}
	}
	return c.behind()
}

// behind is the oldest position a waiting query needs; 0 when none waits.
func (c *coverage) behind() int64 {
	var oldest int64
	for _, q := range c.others {
		if q.waiting && (oldest == 0 || q.after < oldest) {
			oldest = q.after
		}
	}
	return oldest
}

// resumeFrom is the position a new connection should start after: the
// oldest any query stands at; 0 when nothing was read and no query
// brought a cursor (the live tail).
func (c *coverage) resumeFrom() int64 {
	from := int64(0)
	if len(c.inStep) > 0 || len(c.others) == 0 {
		from = c.base
	}
	for _, q := range c.others {
		if from == 0 || q.after < from {
			from = q.after
		}
	}
	return from
}

// connected records that a connection starts at start (0: the live tail):
// it covers every query now, so none waits.
func (c *coverage) connected(start int64) {
	c.read = start
	if start <= 0 {
		c.read = math.MaxInt64
	}
	for _, q := range c.others {
		q.waiting = false
	}
}

// afters lists each query's position, for the gap check after a resume.
func (c *coverage) afters() map[string]int64 {
	out := make(map[string]int64, len(c.inStep)+len(c.others))
	for uuid := range c.inStep {
		out[uuid] = c.base
	}
	for uuid, q := range c.others {
		out[uuid] = q.after
	}
	return out
}

// wants reports whether a query at after gets the post at pos.
func (c *coverage) wants(after int64, own, seen bool, pos int64) bool {
	return pos > after || own && !seen && pos > after-c.overlap
}

// route decides who gets the post uri at pos: everyone (all), the listed
// queries, or nobody; it records the decision as done.
func (c *coverage) route(uri string, pos int64) (all bool, uuids []string) {
	c.read = pos
	if len(c.others) == 0 && pos > c.base {
		c.base = pos
		c.remember(uri, pos)
		return true, nil
	}
	_, seen := c.recent[uri]
	stepWants := len(c.inStep) > 0 && c.wants(c.base, true, seen, pos)
	var got []string
	for uuid, q := range c.others {
		if !q.waiting && c.wants(q.after, q.own, seen, pos) {
			got = append(got, uuid)
		}
	}
	if !stepWants && len(got) == 0 {
		if len(c.inStep)+len(c.others) == 0 {
			c.base = max(c.base, pos) // nobody listens: stand at the live stream
		}
		return false, nil
	}
	all = (stepWants || len(c.inStep) == 0) && len(got) == len(c.others)
	if stepWants {
		c.base = max(c.base, pos)
	} else if len(c.inStep) == 0 {
		c.base = pos // the queries catching up set the pace
	}
	for _, uuid := range got {
		q := c.others[uuid]
		q.after, q.own = max(q.after, pos), true
		if q.after == c.base {
			delete(c.others, uuid) // it has had all the others had
			c.inStep[uuid] = true
		}
	}
	c.remember(uri, pos)
	if all {
		return true, nil
	}
	if stepWants {
		got = append(got, slices.Collect(maps.Keys(c.inStep))...)
	}
	if len(got) > maxTaggedCopies {
		return true, nil
	}
	slices.Sort(got)
	return false, slices.Compact(got)
}

// remember keeps uri as handed over, forgetting those that fell out of
// the overlap before the highest position, and the oldest beyond the
// limit.
func (c *coverage) remember(uri string, pos int64) {
	if _, ok := c.recent[uri]; !ok {
		c.order = append(c.order, recentPost{uri, pos})
	}
	c.recent[uri] = pos
	c.high = max(c.high, pos)
	drop := 0
	for drop < len(c.order) && (len(c.order)-drop > c.limit || c.order[drop].pos < c.high-2*c.overlap) {
		if c.recent[c.order[drop].uri] == c.order[drop].pos {
			delete(c.recent, c.order[drop].uri)
		}
		drop++
	}
	c.order = c.order[drop:]
}
