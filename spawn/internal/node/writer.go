package node

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Writer tuning. The buffer bounds memory and is what pushes back on the data
// sources when the store is slow.
const (
	writerBuffer     = 4096                   // comments waiting for the store
	writerBatch      = 512                    // comments per store call at most
	writerLinger     = 20 * time.Millisecond  // wait for more before a partial batch
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
}

// writer moves counted comments into the store, retrying each batch until it
// is written, and reports what was written so it becomes usage.
type writer struct {
	store   store.Store
	logger  *slog.Logger
	metrics *Metrics
	in      chan pending
	written func(batch []pending, fresh []bool)
	// assign gives a batch's comments the increments they will count
	// under, before the first write, and returns their intents.
	assign func(batch []pending) []store.Intent

	mu       sync.Mutex
	degraded bool
	lastErr  error
}

func newWriter(st store.Store, logger *slog.Logger, m *Metrics, assign func([]pending) []store.Intent, written func([]pending, []bool)) *writer {
	return &writer{store: st, logger: logger, metrics: m, in: make(chan pending, writerBuffer), assign: assign, written: written}
}

// enqueue blocks while the buffer is full: this is the backpressure a slow
// store puts on the data sources.
func (w *writer) enqueue(ctx context.Context, p pending) error {
	select {
	case w.in <- p:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// health reports "ok" or "degraded" (the last write failed and is being
// retried).
func (w *writer) health() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.degraded {
		return "degraded"
	}
	return "ok"
}

// run writes batches until ctx ends and the buffer is drained. Draining keeps
// its promise: a counted comment is retried until written or until drainCtx
// gives up at shutdown.
func (w *writer) run(ctx, drainCtx context.Context) {
	batch := make([]pending, 0, writerBatch)
	for {
		batch = batch[:0]
		select {
		case p := <-w.in:
			batch = append(batch, p)
		case <-ctx.Done():
			w.drain(drainCtx)
			return
		}
		timer := time.NewTimer(writerLinger)
	fill:
		for len(batch) < writerBatch {
			select {
			case p := <-w.in:
				batch = append(batch, p)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		w.write(drainCtx, batch)
	}
}

func (w *writer) drain(ctx context.Context) {
	for {
		batch := make([]pending, 0, writerBatch)
	fill:
		for len(batch) < writerBatch {
			select {
			case p := <-w.in:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			return
		}
		if !w.write(ctx, batch) {
			w.logger.Error("store unreachable at shutdown, comments not written", "count", len(batch)+len(w.in))
			return
		}
	}
}

// write stores one batch, retrying with backoff until it succeeds or ctx
// ends. It reports whether the batch was written.
func (w *writer) write(ctx context.Context, batch []pending) bool {
	var intents []store.Intent
	if w.assign != nil {
		intents = w.assign(batch)
	}
	journal, _ := w.store.(store.UsageJournal)
	comments := make([]api.Comment, len(batch))
	for i, p := range batch {
		comments[i] = p.comment
	}
	// fresh marks the comments the store did not hold before, across
	// attempts: a failed attempt may have stored part of the batch.
	fresh := make([]bool, len(batch))
	retry := backoff.Policy{Min: writeRetryMin, Max: writeRetryMax, NoJitter: true}
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, writeCallTimeout)
		began := time.Now()
		var err error
		if journal != nil && len(intents) > 0 {
			// The intents go first: whatever part of the batch lands, a
			// lost spawn's usage can then be counted back from the store.
			err = journal.Intend(cctx, intents)
		}
		if err == nil {
			err = w.writeOnce(cctx, comments, fresh)
		}
		w.metrics.storeWriteSeconds.Observe(time.Since(began).Seconds())
		w.metrics.storeQueueDepth.Set(float64(len(w.in)))
		cancel()
		if err == nil {
			w.mu.Lock()
			if w.degraded {
				w.logger.Info("store recovered", "attempts", attempt+1)
			}
			w.degraded, w.lastErr = false, nil
			w.mu.Unlock()
			w.metrics.storeWrites.Add(float64(len(batch)))
			w.written(batch, fresh)
			return true
		}
		w.metrics.storeWriteErrors.Inc()
		w.mu.Lock()
		if !w.degraded {
			w.logger.Warn("store write failed, retrying", "count", len(batch), "err", err)
		}
		w.degraded, w.lastErr = true, err
		w.mu.Unlock()
		// The delay doubles per failure; each wait is lengthened by up to
		// half of it, so spawns sharing a store do not retry together.
		delay := retry.Next()
		if !backoff.Sleep(ctx, delay+rand.N(delay/2+1)) {
			return false
		}
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
