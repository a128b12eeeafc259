package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Retractions: what sources take back or change after they handed it over
// (api.Retraction). A source tells the node (source.Retracter); the node
// applies it to its store at once (tombstones, removals, edits:
// store.Retractor), then reports it to the hub in its poll answers until
// the hub acknowledges it. The hub logs it and hands it to every spawn in
// their polls; each applies what it is handed to its own store and tells
// the hub how far it got (PollResponse.RetractionsApplied), a mark its
// store keeps, so a spawn that restarts on the same store goes on where it
// stopped. Applying is idempotent: a store several spawns share sees each
// retraction several times and changes once.
const (
	// retractBatch is the most retractions one store call applies, and
	// retractLinger how long the first waits for others to share it.
	retractBatch  = 512
	retractLinger = 100 * time.Millisecond
	// maxRetractionsPerPoll bounds the retractions a poll answer reports;
	// the rest follow in the next answers.
	maxRetractionsPerPoll = 1000
	// retractQueued bounds the retractions learned and not yet applied,
	// and those applied and not yet acknowledged; beyond it the oldest are
	// dropped (and counted), so a hub away for long costs bounded memory.
	retractQueued = 1 << 17
	// retractRetryMin and retractRetryMax bound the wait between attempts
	// of a failing store call; it is tried until it succeeds.
	retractRetryMin = 200 * time.Millisecond
	retractRetryMax = 10 * time.Second
	// editsKept bounds the recent edits remembered for comments still on
	// their way to the store, and editKeptFor how long each is: a
	// comment's match and its write are seconds apart.
	editsKept   = 1 << 14
	editKeptFor = 2 * time.Minute
)

// recentEdit is an edit kept for comments not yet written.
type recentEdit struct {
	edit store.Edit
	at   time.Time
}

// retractions is the node's pipeline of retractions.
type retractions struct {
	logger *slog.Logger
	// lifetime is how long a tombstone of a kind keeps what it covers out
	// of the store (api.SourceInfo.TombstoneLifetime).
	lifetime func(kind string) time.Duration
	wake     chan struct{}

	applied   prometheus.Counter
	removed   prometheus.Counter
	dropped   prometheus.Counter
	applyErrs prometheus.Counter

	mu sync.Mutex
	// learned are what the sources told, not yet applied.
	learned []api.Retraction
	// reported are applied here and numbered (seq), until the hub
	// acknowledges them.
	reported []api.Retraction
	seq      uint64
	// fromHub are the hub log's entries not yet applied, oldest first;
	// heard is the highest entry received, done the highest applied with
	// every one before it.
	fromHub []api.Retraction
	heard   uint64
	done    uint64
	// edits are recent edits by source and comment id, for the writer.
	edits     map[string]recentEdit
	editsFIFO []string
	// pending are the removals taken in and not yet applied to the store,
	// by key (pendingKey): the writer drops the comments they cover, so a
	// post the stream sends after its account went is not stored while
	// the takedown waits for the store. The store's tombstones cover them
	// once applied.
	pending map[pkey]pendingRemoval
	// lifting are the accounts back whose lift waits for the store, by
	// the same keys: the writer waits for it before it writes their
	// comments, which the store's tombstone would refuse until then.
	lifting map[pkey]int
	// settled is closed (and replaced) whenever a batch is applied.
	settled chan struct{}
	// removedTotal counts the comments removed.
	removedTotal int64
	// appliedHere are the retractions applied here lately
	// (appliedKey), so their return in the hub's log is skipped.
	appliedHere map[string]time.Time
	appliedFIFO []string
	// catchUp is the hub log's end when the node registered: nothing is
	// written before done reaches it (or catchUpWait passed).
	catchUp      uint64
	catchUpSince time.Time
}

// pendingRemoval is a removal waiting for the store: how many of them
// wait under its key, and the published time before which a forget covers
// comments (zero: all).
type pendingRemoval struct {
	n      int
	before time.Time
}

// pendingKeys are the keys a removal waits under: a comment's, or an
// author's by id and by lower-cased handle.
func pendingKeys(x api.Retraction) []pkey {
	switch {
	case x.Op == api.RetractDelete:
		return []pkey{{byID, x.Source, x.ID}}
	case x.Removes():
		keys := []pkey{{byAuthor, x.Source, x.Author}}
		if l := strings.ToLower(x.Author); l != x.Author {
			keys = append(keys, pkey{byAuthor, x.Source, l})
		}
		return keys
	}
	return nil
}

// pkey is a key of a removal waiting for the store: a comment's id, or an
// author's id or lower-cased handle, of a source. A struct, so looking a
// comment up allocates nothing.
type pkey struct {
	kind           byte
	source, target string
}

// Kinds of pkey.
const (
	byID     byte = 'c'
	byAuthor byte = 'a'
)

// liftKeys are the keys of an account coming back: those its takedown
// waited under.
func liftKeys(x api.Retraction) []pkey {
	return pendingKeys(api.Retraction{Op: api.RetractAccount, Source: x.Source, Author: x.Author, Status: api.AccountDeleted})
}

// awaitLifts waits, at most liftWait, until no account of the batch's
// comments has a lift waiting for the store.
func (r *retractions) awaitLifts(ctx context.Context, batch []pending) {
	deadline := time.NewTimer(liftWait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		waiting := false
		if len(r.lifting) > 0 {
			for i := range batch {
				c := &batch[i].comment
				if r.lifting[pkey{byAuthor, c.Source, c.AuthorID}] > 0 || r.lifting[pkey{byAuthor, c.Source, strings.ToLower(c.Author)}] > 0 {
					waiting = true
					break
				}
			}
		}
		settled := r.settled
		r.mu.Unlock()
		if !waiting {
			return
		}
		select {
		case <-settled:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// liftWait bounds how long a write waits for an account's lift: the
// runner applies it within its linger and one store call.
const liftWait = 10 * time.Second

// catchUpWait bounds how long a registered node holds its writes back
// until its store has applied the hub's log up to where it stood at the
// registration: a few polls for a store that was away for minutes; a new
// store facing days of log writes after it, and takes the rest in while
// it goes on.
const catchUpWait = 30 * time.Second

// catchUpTo sets the log entry writes wait for.
func (r *retractions) catchUpTo(head uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if head > r.done {
		r.catchUp, r.catchUpSince = head, time.Now()
	}
}

// awaitCatchUp waits until the store has applied the hub's log up to
// where it stood at the registration, or catchUpWait has passed since.
func (r *retractions) awaitCatchUp(ctx context.Context) {
	for {
		r.mu.Lock()
		if r.catchUp == 0 || r.done >= r.catchUp {
			r.catchUp = 0
			r.mu.Unlock()
			return
		}
		left := catchUpWait - time.Since(r.catchUpSince)
		settled := r.settled
		r.mu.Unlock()
		if left <= 0 {
			r.mu.Lock()
			r.logger.Warn("writing before the store caught up with the hub's retraction log", "applied", r.done, "log_end", r.catchUp)
			r.catchUp = 0
			r.mu.Unlock()
			return
		}
		t := time.NewTimer(left)
		select {
		case <-settled:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

func newRetractions(logger *slog.Logger, m *Metrics, lifetime func(kind string) time.Duration) *retractions {
	return &retractions{
		lifetime:  lifetime,
		logger:    logger,
		wake:      make(chan struct{}, 1),
		edits:     map[string]recentEdit{},
		pending:   map[pkey]pendingRemoval{},
		lifting:   map[pkey]int{},
		settled:   make(chan struct{}),
		applied:   m.retractionsApplied,
		removed:   m.retractionsRemoved,
		dropped:   m.retractionsDropped,
		applyErrs: m.retractionErrors,
	}
}

// learn takes retractions from a source. It never blocks.
func (r *retractions) learn(rs []api.Retraction) {
	if len(rs) == 0 {
		return
	}
	now := time.Now()
	r.mu.Lock()
	for _, x := range rs {
		if x.At.IsZero() {
			x.At = now
		}
		r.learned = append(r.learned, x)
		r.takeInLocked(x, now)
	}
	if over := len(r.learned) - retractQueued; over > 0 {
		r.learned = append(r.learned[:0:0], r.learned[over:]...)
		r.dropped.Add(float64(over))
	}
	r.mu.Unlock()
	source.Signal(r.wake)
}

// takeInLocked notes a retraction taken in for the comments on their way
// to the store: an edit to fill in, a removal to drop them by, an account
// back to stop dropping them.
func (r *retractions) takeInLocked(x api.Retraction, now time.Time) {
	switch {
	case x.Op == api.RetractUpdate:
		r.rememberEditLocked(x, now)
	case x.Op == api.RetractAccount && x.Active:
		for _, k := range liftKeys(x) {
			delete(r.pending, k)
			r.lifting[k]++
		}
	default:
		for _, k := range pendingKeys(x) {
			p := r.pending[k]
			p.n++
			if x.Op == api.RetractForget {
				p.before = maxTime(p.before, x.At)
			}
			r.pending[k] = p
		}
	}
}

// appliedLocked notes removals the store now holds: their comments are
// dropped by its tombstones from now on.
func (r *retractions) appliedLocked(xs []api.Retraction) {
	for _, x := range xs {
		if x.Op == api.RetractAccount && x.Active {
			for _, k := range liftKeys(x) {
				if r.lifting[k]--; r.lifting[k] <= 0 {
					delete(r.lifting, k)
				}
			}
			continue
		}
		for _, k := range pendingKeys(x) {
			p, ok := r.pending[k]
			if !ok {
				continue
			}
			if p.n--; p.n <= 0 {
				delete(r.pending, k)
			} else {
				r.pending[k] = p
			}
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// buried marks the comments of a batch that a removal waiting for the
// store covers; nil when none is.
func (r *retractions) buried(batch []pending) []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	var out []bool
	covered := func(key pkey, pub time.Time) bool {
		p, ok := r.pending[key]
		return ok && (p.before.IsZero() || pub.Before(p.before))
	}
	for i := range batch {
		c := &batch[i].comment
		hit := covered(pkey{byID, c.Source, c.ID}, c.PublishedAt) ||
			(c.AuthorID != "" && covered(pkey{byAuthor, c.Source, c.AuthorID}, c.PublishedAt)) ||
			(c.Author != "" && covered(pkey{byAuthor, c.Source, strings.ToLower(c.Author)}, c.PublishedAt))
		if hit {
			if out == nil {
				out = make([]bool, len(batch))
			}
			out[i] = true
		}
	}
	return out
}

// rememberEditLocked keeps an edit for the comments still on their way.
func (r *retractions) rememberEditLocked(x api.Retraction, now time.Time) {
	k := x.Source + "\x00" + x.ID
	if _, ok := r.edits[k]; !ok {
		r.editsFIFO = append(r.editsFIFO, k)
	}
	r.edits[k] = recentEdit{edit: editOf(x), at: now}
	for len(r.editsFIFO) > 0 {
		old := r.editsFIFO[0]
		e, ok := r.edits[old]
		if ok && len(r.edits) <= editsKept && now.Sub(e.at) <= editKeptFor {
			break
		}
		r.editsFIFO = r.editsFIFO[1:]
		if ok && (len(r.edits) > editsKept || now.Sub(e.at) > editKeptFor) {
			delete(r.edits, old)
		}
	}
}

// fill puts the recent edits into comments on their way to the store: an
// edit that arrived between a post's match and its write is not lost.
func (r *retractions) fill(batch []pending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.edits) == 0 {
		return
	}
	for i := range batch {
		c := &batch[i].comment
		if e, ok := r.edits[c.Source+"\x00"+c.ID]; ok && e.edit.EditedAt.After(c.EditedAt) {
			c.Text, c.Links, c.EditedAt = e.edit.Text, e.edit.Links, e.edit.EditedAt.UTC()
		}
	}
}

// fromPoll takes a fresh poll's part: the hub's acknowledgements of what
// this node reported, and the log entries it hands over.
func (r *retractions) fromPoll(acks []uint64, entries []api.Retraction) {
	r.mu.Lock()
	if len(acks) > 0 {
		acked := make(map[uint64]bool, len(acks))
		for _, a := range acks {
			acked[a] = true
		}
		r.reported = slices.DeleteFunc(r.reported, func(x api.Retraction) bool { return acked[x.Seq] })
	}
	added := false
	now := time.Now()
	for _, e := range entries {
		if e.Seq <= r.heard {
			continue
		}
		r.heard = e.Seq
		r.fromHub = append(r.fromHub, e)
		r.takeInLocked(e, now)
		added = true
	}
	r.mu.Unlock()
	if added {
		source.Signal(r.wake)
	}
}

// forPoll is what a poll answer carries: the reported retractions not yet
// acknowledged (the first maxRetractionsPerPoll), whether more wait, and
// the hub log's highest entry applied.
func (r *retractions) forPoll() ([]api.Retraction, bool, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.reported), maxRetractionsPerPoll)
	return slices.Clone(r.reported[:n]), len(r.reported) > n, r.done
}

// startAt sets where the hub's log is taken up: after the store's mark.
func (r *retractions) startAt(mark uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if mark > r.done {
		r.done, r.heard = mark, max(r.heard, mark)
	}
}

// appliedKeptFor and appliedKept bound the retractions remembered as
// applied here, so that their return in the hub's log is not applied
// twice.
const (
	appliedKeptFor = 10 * time.Minute
	appliedKept    = 1 << 16
)

// ErrNoRetractor is returned when the spawn's store cannot take comments
// back.
var ErrNoRetractor = fmt.Errorf("node: this spawn's store cannot remove comments")

// Retract applies retractions the hub hands over for an answer now (a
// forget), and counts what the store removed, per crawler.
func (n *Node) Retract(ctx context.Context, req api.RetractRequest) (api.RetractResponse, error) {
	n.mu.Lock()
	attached, epoch := n.attach.state == api.NodeAttached, n.attach.epoch
	n.mu.Unlock()
	if !attached {
		return api.RetractResponse{}, ErrNotAttached
	}
	if req.Epoch != epoch {
		return api.RetractResponse{}, fmt.Errorf("%w: retractions from epoch %s, attached to %s", ErrEpoch, req.Epoch, epoch)
	}
	rs, ok := n.cfg.Store.(store.Retractor)
	if !ok {
		return api.RetractResponse{}, ErrNoRetractor
	}
	counts, err := apply(ctx, rs, req.Retractions, n.retracts)
	if err != nil {
		return api.RetractResponse{}, err
	}
	n.retracts.markApplied(req.Retractions)
	return api.RetractResponse{Removed: counts, Store: rs.ID()}, nil
}

// storeFacts are the store's name and applied mark, for the registration.
func (n *Node) storeFacts(ctx context.Context) (id string, applied uint64) {
	rs, ok := n.cfg.Store.(store.Retractor)
	if !ok {
		return "", 0
	}
	n.retracts.mu.Lock()
	applied = n.retracts.done
	n.retracts.mu.Unlock()
	if mark, err := rs.Applied(ctx); err == nil {
		applied = max(applied, mark)
	}
	return rs.ID(), applied
}

// DefaultRetentionSweep is how often a spawn asks a store that drops
// comments past their retention by itself (store.Expirer: the file
// store's day files) to do so; Cassandra's TTL needs no sweep.
const DefaultRetentionSweep = 10 * time.Minute

// sweepEvery is how often the store is asked to remove what its Bury left
// for later (a file store: the crawlers whose index is not in memory); it
// shows none of it meanwhile.
const sweepEvery = 30 * time.Second

var (
	_ store.Retractor = (*FencedStore)(nil)
	_ store.Expirer   = (*FencedStore)(nil)
)
