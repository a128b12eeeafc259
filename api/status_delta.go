package api

import (
	"math"
	"slices"
)

// rateStep is how far, as a fraction of the rate last sent, a subscriber's
// comment rate must move before its status travels again in a partial
// answer. The hub sizes leases from the rate; a tenth either way does not
// change a grant that matters, and a rate that wanders without this step
// would make every busy subscriber's status travel on every poll.
const rateStep = 0.1

// rateFloor is the rate below which a subscriber counts as idle: a decaying
// rate reaches it in a few steps and then stops travelling.
const rateFloor = 0.01

// StatusDelta lets a spawn answer a poll with only the statuses that
// changed since the answer the hub last took in (PollRequest.StatusBase).
// At thousands of spawns the hub spends most of a poll round decoding
// statuses that say what the previous round said; with StatusDelta a
// steady subscriber costs a line in the request and nothing in the answer.
//
// A status is left out of an answer only when it is materially what the
// hub already holds: unchanged since it was last sent, and last sent in an
// answer the hub has confirmed it took in. A status sent in an answer the
// hub never received (a lost answer, a timeout) keeps travelling until one
// is confirmed. Stored, LeaseSeq and LeaseTotal are informational: a change
// in them alone does not make a status travel. Missing statuses always
// travel. The zero value is ready to use; it is not safe for concurrent
// use (a spawn calls it under its lock).
type StatusDelta struct {
	answer uint64 // number of the newest answer begun
	floor  uint64 // bases below it are not valid (set by Reset)
	sent   map[int64]*sentStatus
	ds     sentDataSources

	// The answer being built.
	cur     uint64
	base    uint64
	partial bool
}

// sentStatus is what the hub was last told about one subscriber.
type sentStatus struct {
	st     SubscriberStatus
	in     uint64 // answer it last travelled in
	listed uint64 // answer whose poll last listed it
}

type sentDataSources struct {
	list []DataSourceStatus
	in   uint64
	set  bool
}

// Begin starts the answer to a fresh poll whose base is the answer number
// the hub last took in (0: none). It returns this answer's number and
// whether it may leave out unchanged statuses: only when the base is an
// answer of this run of the spawn that the hub can hold.
func (d *StatusDelta) Begin(base uint64) (answer uint64, partial bool) {
	if d.sent == nil {
		d.sent = map[int64]*sentStatus{}
	}
	d.answer++
	d.cur, d.base = d.answer, base
	d.partial = base != 0 && base >= d.floor && base < d.answer
	return d.cur, d.partial
}

// Include reports whether st goes into the answer begun last, and records
// it as sent when it does.
func (d *StatusDelta) Include(st SubscriberStatus) bool {
	if st.State == StateMissing {
		// Nothing runs to remember: whatever runs under this id later
		// is new to the hub and travels.
		delete(d.sent, st.CrawlerID)
		return true
	}
	s, ok := d.sent[st.CrawlerID]
	if !ok {
		s = &sentStatus{}
		d.sent[st.CrawlerID] = s
	}
	s.listed = d.cur
	if ok && d.partial && s.in <= d.base && !materiallyChanged(s.st, st) {
		return false
	}
	s.st, s.in = st, d.cur
	return true
}

// DataSources reports whether the data source list goes into the answer
// begun last; it travels, like a status, when it changed or when it last
// travelled in an answer the hub has not confirmed. list must be sorted.
func (d *StatusDelta) DataSources(list []DataSourceStatus) bool {
	if d.partial && d.ds.set && d.ds.in <= d.base && slices.Equal(d.ds.list, list) {
		return false
	}
	d.ds = sentDataSources{list: list, in: d.cur, set: true}
	return true
}

// End finishes the answer begun last: it forgets subscribers the poll did
// not list (the spawn drops them), so the record never outgrows what the
// spawn runs.
func (d *StatusDelta) End() {
	for id, s := range d.sent {
		if s.listed != d.cur {
			delete(d.sent, id)
		}
	}
}

// Reset forgets everything sent: answers numbered before now are no valid
// base any more, so the next answer is whole. A spawn resets when it
// detaches and drops what it ran.
func (d *StatusDelta) Reset() {
	clear(d.sent)
	d.ds = sentDataSources{}
	d.floor = d.answer + 1
}

// materiallyChanged says whether a status differs from the one last sent
// in anything the hub acts on.
func materiallyChanged(prev, cur SubscriberStatus) bool {
	if prev.Version != cur.Version || prev.State != cur.State || prev.Error != cur.Error ||
		prev.Instance != cur.Instance || prev.Reserved != cur.Reserved ||
		prev.QueryUUID != cur.QueryUUID || prev.DataSource != cur.DataSource || prev.Live != cur.Live {
		return true
	}
	return rateMoved(prev.RatePerSec, cur.RatePerSec)
}

// rateMoved says whether a rate moved by more than rateStep of the rate
// last sent, or crossed rateFloor.
func rateMoved(prev, cur float64) bool {
	if prev == cur {
		return false
	}
	idlePrev, idleCur := prev < rateFloor, cur < rateFloor
	if idlePrev || idleCur {
		return idlePrev != idleCur
	}
	return math.Abs(cur-prev) > rateStep*prev
}
