package node

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/terms"
)

// Writer tuning. The buffer bounds memory and is what pushes back on the data
// sources when the store is slow.
const (
	writerBuffer = 4096 // comments waiting for the store, all crawlers together
	// writerLaneMax is how many of them one crawler may hold. A crawler
	// whose writes keep failing (its directory unwritable, its partition
	// refusing writes) fills at most this share, and its data source then
	// waits; the other crawlers keep the rest of the buffer and go on
	// storing. Several failing crawlers at once, or a store down for all,
	// fill the buffer and every source waits, as for a slow store.
	writerLaneMax = writerBuffer / 4
	writerBatch   = 512 // comments per store call at most
	// spareLanes is how many emptied lanes the writer keeps for the
	// crawlers to come, and spareLaneItems the most room a kept lane's
	// items may have: a spawn with many subscribers empties a lane, and
	// needs a new one, for nearly every comment.
	spareLanes       = 1024
	spareLaneItems   = 64
	writerLinger     = 20 * time.Millisecond  // wait for more before a partial batch, by default
	writeRetryMin    = 100 * time.Millisecond // first retry after a failed write
	writeRetryMax    = 5 * time.Second        // retries back off up to this
	writeCallTimeout = 30 * time.Second       // one store call at most
)

// pending is a comment counted against its subscriber, on its way to the
// store.
type pending struct {
	comment  api.Comment
	userID   int64
	instance uint64
	leaseSeq uint64
	// source is the key of the data source the item came from and
	// sourceID its id there (source.Item.SourceID), carried to the hub as
	// the crawler's cursor in that source.
	source, sourceID string
	// terms are the comment's terms for its analytics, extracted once
	// for every subscriber's comment of the same item (withTerms); nil
	// when analytics are off or not extracted yet.
	terms *terms.Set
	// enriched says the comment's language and sentiment were worked out
	// (enrich.go).
	enriched bool
}

// lane is one crawler's comments waiting for the store. A lane whose write
// failed is failing: it is retried alone, with its own backoff, while the
// other lanes are written as usual.
type lane struct {
	items   []pending // waiting, oldest first (not those in a store call)
	held    int       // items plus those in a store call
	failing bool
	err     error // the last write's, while failing
	retry   backoff.Policy
	retryAt time.Time
	fails   int // failed attempts in a row
}

// writer moves counted comments into the store, retrying what fails until it
// is written, and reports what was written so it becomes usage. Each crawler
// has its own lane, so one crawler's failing writes never hold up another's.
type writer struct {
	store   store.Store
	logger  *slog.Logger
	metrics *Metrics
	written func(batch []pending, fresh []bool)
	// assign gives a batch's comments the increments they will count
	// under, before each write attempt, and returns their intents.
	assign func(batch []pending) []store.Intent
	// names fills in authors' names that arrived after the match and
	// notes the comments written without one (names.go); nil: none.
	names *authorNames
	// edits fills in edits that arrived after the match (retract.go);
	// nil: none.
	edits *retractions
	work  chan struct{} // a comment arrived (capacity 1)

	mu      sync.Mutex
	lanes   map[int64]*lane
	order   []int64       // crawlers with waiting items, next to write first
	held    int           // comments held, in lanes and in store calls
	failing int           // failing lanes
	space   chan struct{} // closed (and replaced) when room is made
	spare   []*lane       // emptied lanes, for newLaneLocked
	// lingering is set while the writer waits for a batch to fill
	// (linger): only a full batch need wake it then.
	lingering bool
	lingerFor time.Duration // how long linger waits at most
	comments  []api.Comment // attempt's, kept between store calls
	// spareBatch is a written batch's room, for takeLocked (recycle).
	spareBatch []pending
}

// newLaneLocked returns an empty lane, a spare one when there is one.
func (w *writer) newLaneLocked() *lane {
	if n := len(w.spare); n > 0 {
		l := w.spare[n-1]
		w.spare[n-1] = nil
		w.spare = w.spare[:n-1]
		return l
	}
	return &lane{retry: backoff.Policy{Min: writeRetryMin, Max: writeRetryMax, NoJitter: true}}
}

// spareLocked keeps an emptied lane, not failing and holding nothing, for
// newLaneLocked.
func (w *writer) spareLocked(l *lane) {
	if len(w.spare) >= spareLanes || cap(l.items) > spareLaneItems {
		return
	}
	items := l.items[:cap(l.items)]
	clear(items)
	*l = lane{items: items[:0], retry: backoff.Policy{Min: writeRetryMin, Max: writeRetryMax, NoJitter: true}}
	w.spare = append(w.spare, l)
}

func newWriter(st store.Store, logger *slog.Logger, m *Metrics, assign func([]pending) []store.Intent, written func([]pending, []bool)) *writer {
	return &writer{store: st, logger: logger, metrics: m, assign: assign, written: written,
		work: make(chan struct{}, 1), lanes: map[int64]*lane{}, space: make(chan struct{}), lingerFor: writerLinger}
}

// enqueue blocks while the buffer, or the crawler's share of it, is full:
// this is the backpressure a slow store puts on the data sources.
func (w *writer) enqueue(ctx context.Context, p pending) error {
	id := p.comment.CrawlerID
	for {
		w.mu.Lock()
		l := w.lanes[id]
		if l == nil {
			l = w.newLaneLocked()
			w.lanes[id] = l
		}
		if w.held < writerBuffer && l.held < writerLaneMax {
			if len(l.items) == 0 && !l.failing {
				w.order = append(w.order, id)
			}
			l.items = append(l.items, p)
			l.held++
			w.held++
			w.metrics.storeQueueDepth.Set(float64(w.held))
			w.mu.Unlock()
			select {
			case w.work <- struct{}{}:
			default:
			}
			return nil
		}
		room := w.space
		w.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// enqueueAll is enqueue for comments in order, taking the lock once for as
// many as there is room for. It returns how many it enqueued: all of them,
// or those before the one it was waiting room for when ctx ended.
func (w *writer) enqueueAll(ctx context.Context, ps []pending) (int, error) {
	done := 0
	for {
		w.mu.Lock()
		added := 0
		for ; done < len(ps); done++ {
			id := ps[done].comment.CrawlerID
			l := w.lanes[id]
			if l == nil {
				l = w.newLaneLocked()
				w.lanes[id] = l
			}
			if w.held >= writerBuffer || l.held >= writerLaneMax {
				break
			}
			if len(l.items) == 0 && !l.failing {
				w.order = append(w.order, id)
			}
			l.items = append(l.items, ps[done])
			l.held++
			w.held++
			added++
		}
		if added > 0 {
			w.metrics.storeQueueDepth.Set(float64(w.held))
		}
		wake := added > 0 && (!w.lingering || w.held >= writerBatch)
		room := w.space
		w.mu.Unlock()
		if wake {
			select {
			case w.work <- struct{}{}:
			default:
			}
		}
		if done == len(ps) {
			return done, nil
		}
		select {
		case <-room:
		case <-ctx.Done():
			return done, ctx.Err()
		}
	}
}

// queued is how many comments wait for the store.
func (w *writer) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held
}

// health reports "ok" or "degraded" (some crawler's writes are failing and
// being retried).
func (w *writer) health() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failing > 0 {
		return "degraded"
	}
	return "ok"
}

// errFor is the store error of a crawler whose writes are failing, nil
// otherwise.
func (w *writer) errFor(crawlerID int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := w.lanes[crawlerID]; l != nil && l.failing {
		return l.err
	}
	return nil
}

// run writes batches until ctx ends and the buffer is drained. Draining keeps
// its promise: a counted comment is retried until written or until drainCtx
// gives up at shutdown.
func (w *writer) run(ctx, drainCtx context.Context) {
	stop := ctx.Done()
	for {
		w.mu.Lock()
		batch, solo, wait := w.takeLocked(time.Now())
		held := w.held
		w.mu.Unlock()
		if len(batch) > 0 {
			w.write(drainCtx, batch, solo)
			continue
		}
		if ctx.Err() != nil {
			if held == 0 {
				return
			}
			if drainCtx.Err() != nil {
				w.logger.Error("store unreachable at shutdown, comments not written", "count", held)
				return
			}
		}
		var retry <-chan time.Time
		var timer *time.Timer
		if wait > 0 {
			timer = time.NewTimer(wait)
			retry = timer.C
		}
		select {
		case <-w.work:
			if ctx.Err() == nil {
				w.linger()
			}
		case <-retry:
		case <-stop:
			stop = nil // drain from now on
		case <-drainCtx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// linger waits a little for more comments, so a trickle is written in
// batches rather than one store call each.
func (w *writer) linger() {
	timer := time.NewTimer(w.lingerFor)
	defer timer.Stop()
	defer func() {
		w.mu.Lock()
		w.lingering = false
		w.mu.Unlock()
	}()
	for {
		w.mu.Lock()
		full := w.held >= writerBatch
		w.lingering = !full
		w.mu.Unlock()
		if full {
			return
		}
		select {
		case <-w.work:
		case <-timer.C:
			return
		}
	}
}

// takeLocked takes the next batch off the lanes: a failing lane due for a
// retry alone (solo), else up to writerBatch comments of the lanes that are
// not failing, a lane at a time in turn. With nothing to take it returns
// how long until a failing lane is due (0: none is).
func (w *writer) takeLocked(now time.Time) (batch []pending, solo bool, wait time.Duration) {
	for _, l := range w.lanes {
		if !l.failing {
			continue
		}
		if due := l.retryAt.Sub(now); due > 0 {
			if wait == 0 || due < wait {
				wait = due
			}
			continue
		}
		if len(l.items) == 0 {
			continue // its comments are in a store call
		}
		k := min(len(l.items), writerBatch)
		batch = slices.Clone(l.items[:k])
		l.items = slices.Delete(l.items, 0, k)
		return batch, true, 0
	}
	if len(w.order) > 0 {
		if batch = w.spareBatch; batch != nil {
			w.spareBatch = nil
		} else {
			batch = make([]pending, 0, min(w.held, writerBatch))
		}
	}
	for len(batch) < writerBatch && len(w.order) > 0 {
		id := w.order[0]
		w.order = w.order[1:]
		l := w.lanes[id]
		if l == nil || l.failing || len(l.items) == 0 {
			continue
		}
		k := min(len(l.items), writerBatch-len(batch))
		batch = append(batch, l.items[:k]...)
		l.items = slices.Delete(l.items, 0, k)
		if len(l.items) > 0 {
			w.order = append(w.order, id) // its turn again after the others
		}
	}
	return batch, false, wait
}

// write stores one batch. What a store call cannot write is split by
// crawler and tried again per crawler at once, so the crawlers whose writes
// succeed are stored now; a crawler whose write still fails gets its
// comments back at the head of its lane, to be retried alone with backoff.
func (w *writer) write(ctx context.Context, batch []pending, solo bool) {
	first := batch[0].comment.CrawlerID // attempt may recycle the batch
	rest, err := w.attempt(ctx, batch)
	if err == nil || len(rest) == 0 {
		if solo {
			w.recovered(first)
		}
		return
	}
	byCrawler := map[int64][]pending{}
	var ids []int64
	for _, p := range rest {
		id := p.comment.CrawlerID
		if _, ok := byCrawler[id]; !ok {
			ids = append(ids, id)
		}
		byCrawler[id] = append(byCrawler[id], p)
	}
	if len(ids) == 1 {
		w.park(ids[0], rest, err)
		return
	}
	for _, id := range ids {
		if left, err := w.attempt(ctx, byCrawler[id]); err != nil {
			w.park(id, left, err)
		}
	}
}

// attempt makes one write of batch under newly assigned increments and
// records as written whatever it stored, success or not. It returns the
// comments not written, and why.
//
// Each attempt numbers its increments afresh, after every increment
// already recorded: a crawler retried alone while others are written must
// not report usage under a number lower than one the hub has applied
// (which would then escape a recovery reading back usage after the
// highest number it applied).
func (w *writer) attempt(ctx context.Context, batch []pending) ([]pending, error) {
	if w.names != nil {
		// Before assign, which starts the batch's analysis.
		w.names.fill(batch)
	}
	if w.edits != nil {
		w.edits.fill(batch)
	}
	var intents []store.Intent
	if w.assign != nil {
		intents = w.assign(batch)
	}
	journal, _ := w.store.(store.UsageJournal)
	// Comments a removal waiting for the store covers are not written
	// (nor counted): the store's tombstones will not hold them back yet.
	var skip []bool
	if w.edits != nil {
		w.edits.awaitCatchUp(ctx)
		w.edits.awaitLifts(ctx, batch)
		skip = w.edits.buried(batch)
	}
	// The comments of a store call: the store keeps none of them past the
	// call (store.Store), so the writer reuses the room.
	comments := slices.Grow(w.comments[:0], len(batch))
	var idx []int // batch index of each comment, when some are skipped
	for i := range batch {
		if skip != nil && skip[i] {
			continue
		}
		comments = append(comments, batch[i].comment)
		if skip != nil {
			idx = append(idx, i)
		}
	}
	defer func() {
		clear(comments) // keep no comment alive between calls
		w.comments = comments[:0]
	}()
	// fresh marks the comments the store did not hold before; after a
	// failed call, those it stored all the same.
	fresh := make([]bool, len(batch))
	cctx, cancel := context.WithTimeout(ctx, writeCallTimeout)
	began := time.Now()
	var err error
	if journal != nil && len(intents) > 0 {
		// The intents go first: whatever part of the batch lands, a
		// lost spawn's usage can then be counted back from the store.
		err = journal.Intend(cctx, intents)
	}
	if err == nil && len(comments) > 0 {
		if skip == nil {
			err = w.writeOnce(cctx, comments, fresh)
		} else {
			sub := make([]bool, len(comments))
			err = w.writeOnce(cctx, comments, sub)
			for j, i := range idx {
				fresh[i] = sub[j]
			}
		}
	}
	cancel()
	w.metrics.storeWriteSeconds.Observe(time.Since(began).Seconds())
	if err == nil {
		w.done(batch, fresh)
		w.recycle(batch)
		return nil, nil
	}
	w.metrics.storeWriteErrors.Inc()
	var stored, rest []pending
	for i, p := range batch {
		if fresh[i] {
			stored = append(stored, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(stored) > 0 {
		all := make([]bool, len(stored))
		for i := range all {
			all[i] = true
		}
		w.done(stored, all)
	}
	return rest, err
}

// recycle keeps a batch written whole, and reported (so nothing reads it
// any more: its analytics were taken), for the next batch of several
// crawlers (takeLocked): a batch is hundreds of comments. The caller of
// attempt must not read the batch after it succeeded.
func (w *writer) recycle(batch []pending) {
	if cap(batch) < writerBatch {
		return
	}
	clear(batch) // keep no comment alive
	w.mu.Lock()
	w.spareBatch = batch[:0]
	w.mu.Unlock()
}

// done reports written comments as usage and frees their room.
func (w *writer) done(batch []pending, fresh []bool) {
	if w.names != nil {
		w.names.note(batch)
	}
	w.written(batch, fresh)
	w.metrics.storeWrites.Add(float64(len(batch)))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range batch {
		id := p.comment.CrawlerID
		if l := w.lanes[id]; l != nil {
			l.held--
			if l.held <= 0 && !l.failing {
				delete(w.lanes, id)
				w.spareLocked(l)
			}
		}
	}
	w.held -= len(batch)
	w.metrics.storeQueueDepth.Set(float64(w.held))
	close(w.space)
	w.space = make(chan struct{})
}

// park puts a crawler's unwritten comments back at the head of its lane and
// schedules its retry. The delay doubles per failure; each wait is
// lengthened by up to half of it, so spawns sharing a store do not retry
// together.
func (w *writer) park(crawlerID int64, rest []pending, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lanes[crawlerID]
	if l == nil { // cannot happen: its comments were held
		l = &lane{retry: backoff.Policy{Min: writeRetryMin, Max: writeRetryMax, NoJitter: true}, held: len(rest)}
		w.lanes[crawlerID] = l
	}
	l.items = append(rest, l.items...)
	l.fails++
	if !l.failing {
		l.failing = true
		w.failing++
		w.order = slices.DeleteFunc(w.order, func(id int64) bool { return id == crawlerID })
		w.logger.Warn("store write failed, retrying", "crawler_id", crawlerID, "count", len(rest), "err", err)
	}
	l.err = err
	delay := l.retry.Next()
	l.retryAt = time.Now().Add(delay + rand.N(delay/2+1))
}

// recovered ends a crawler's failing state after a successful retry; the
// comments it still holds go back to the common turn.
func (w *writer) recovered(crawlerID int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lanes[crawlerID]
	if l == nil || !l.failing {
		return
	}
	w.logger.Info("store recovered", "crawler_id", crawlerID, "attempts", l.fails+1)
	l.failing, l.err, l.fails = false, nil, 0
	l.retry.Reset()
	w.failing--
	if len(l.items) > 0 {
		w.order = append(w.order, crawlerID)
	} else if l.held <= 0 {
		delete(w.lanes, crawlerID)
	}
}

// writeOnce makes one store call and marks in fresh the comments it stored
// for the first time. A store that cannot tell marks every comment of a
// successful call.
func (w *writer) writeOnce(ctx context.Context, comments []api.Comment, fresh []bool) error {
	if fw, ok := w.store.(store.FreshWriter); ok {
		got, err := fw.WriteFresh(ctx, comments)
		for i, f := range got {
			fresh[i] = fresh[i] || f
		}
		return err
	}
	if err := w.store.Write(ctx, comments); err != nil {
		return err
	}
	for i := range fresh {
		fresh[i] = true
	}
	return nil
}
