package hackernews

import (
	"context"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// The walk. maxitem is read every PollInterval; every id above the last
// one read is then read, up to Window ids ahead of the oldest id not
// handed over yet, several at once (Concurrency) at RequestsPerSecond.
// Items are handed over strictly in id order: an id that answers null holds
// back the ids after it and is read again after NullRetryMin, doubling up
// to NullRetryMax, until it reads or NullGiveUp has passed since its first
// null; then it is passed (logged, counted: reason null_item) and the walk
// goes on. A deleted or dead item is passed too (reason deleted or dead):
// it shows nothing a comment may keep. When the walk falls more than
// MaxWalkGap ids behind maxitem (the API was out of reach for a while), the
// ids it missed are read from the search API instead, except the last
// quarter of the gap, which the walk reads itself because the index lags a
// little behind the site.

// slot is one id in the walk's window.
type slot struct {
	item   *wireItem
	done   bool      // read, or passed
	tries  int       // nulls so far
	nulled time.Time // first null
	retry  time.Time // when to read it again after a null
}

// walk is a run of item ids read in order: the live walk (end follows
// maxitem) or a gap's (fixed end, its items for one query).
type walk struct {
	next  int64 // oldest id not handed over
	end   int64 // newest id to read
	slots map[int64]*slot
	query string // the query uuid a gap's items are for; "" for the live walk
}

func newWalk(from, end int64, query string) *walk {
	return &walk{next: from, end: end, slots: map[int64]*slot{}, query: query}
}

// finished reports whether every id of the walk was handed over.
func (w *walk) finished() bool { return w.next > w.end }

// step reads the ids of the window that are due and returns the items now
// handed over, in id order, and when the window next has an id due (zero:
// nothing waits for a retry).
func (s *Source) step(ctx context.Context, w *walk) ([]*wireItem, time.Time, error) {
	now := time.Now()
	hi := min(w.end, w.next+int64(s.opts.Window)-1)
	var due []int64
	for id := w.next; id <= hi; id++ {
		sl := w.slots[id]
		if sl == nil {
			sl = &slot{}
			w.slots[id] = sl
		}
		if !sl.done && !sl.retry.After(now) {
			due = append(due, id)
		}
	}
	type result struct {
		item *wireItem
		err  error
	}
	results := make([]result, len(due))
	var wg sync.WaitGroup
	for i, id := range due {
		wg.Go(func() {
			it, err := s.api.item(ctx, id)
			results[i] = result{it, err}
		})
	}
	wg.Wait()
	var failed error
	now = time.Now()
	for i, id := range due {
		sl, r := w.slots[id], results[i]
		switch {
		case r.err != nil:
			if failed == nil {
				failed = r.err
			}
		case r.item != nil:
			sl.item, sl.done = r.item, true
		default:
			if sl.nulled.IsZero() {
				sl.nulled = now
			}
			sl.tries++
			if now.Sub(sl.nulled) >= s.opts.NullGiveUp {
				sl.done = true
				s.stats.skip(reasonNull)
				s.logger.Warn("hackernews item stayed null: passed", "item_id", id, "tries", sl.tries,
					"for", now.Sub(sl.nulled).Round(time.Second))
				continue
			}
			delay := s.opts.NullRetryMin << min(sl.tries-1, 16)
			sl.retry = now.Add(min(delay, s.opts.NullRetryMax))
		}
	}
	var out []*wireItem
	for !w.finished() {
		sl := w.slots[w.next]
		if sl == nil || !sl.done {
			break
		}
		if sl.item != nil {
			out = append(out, sl.item)
		}
		delete(w.slots, w.next)
		w.next++
	}
	var wake time.Time
	for _, sl := range w.slots {
		if !sl.done && !sl.retry.IsZero() && (wake.IsZero() || sl.retry.Before(wake)) {
			wake = sl.retry
		}
	}
	return out, wake, failed
}

// runWalk is the live walk, until ctx ends.
func (s *Source) runWalk(ctx context.Context, emit source.Emit) {
	bo := backoff.Policy{Min: s.opts.BackoffMin, Max: s.opts.BackoffMax}
	var w *walk
	var nextPoll time.Time
	for ctx.Err() == nil {
		if !time.Now().Before(nextPoll) {
			m, err := s.api.maxItem(ctx)
			if err != nil {
				if !passing(ctx, err) {
					return
				}
				s.setErr(partWalk, err)
				s.logger.Warn("hackernews maxitem unreadable", "err", err)
				sleep(ctx, bo.Next())
				continue
			}
			nextPoll = time.Now().Add(s.opts.PollInterval)
			if w == nil {
				w = newWalk(m+1, m, "")
				s.walkStarted(m + 1)
			} else if m > w.end {
				w.end = m
				s.setFrontier(m)
				if behind := m - w.next + 1; behind > s.opts.MaxWalkGap {
					s.catchUp(ctx, w, emit)
				}
			}
		}
		items, wake, err := s.step(ctx, w)
		if len(items) > 0 {
			if s.hand(ctx, items, "", emit) != nil {
				return
			}
		}
		if err != nil {
			if !passing(ctx, err) {
				return
			}
			s.setErr(partWalk, err)
			s.logger.Warn("hackernews items unreadable", "err", err)
			sleep(ctx, bo.Next())
			continue
		}
		bo.Reset()
		s.setErr(partWalk, nil)
		s.setBehind(w.end - w.next + 1)
		if w.next+int64(s.opts.Window) <= w.end && len(items) > 0 {
			continue // more ids wait beyond the window
		}
		until := nextPoll
		if !wake.IsZero() && wake.Before(until) {
			until = wake
		}
		sleep(ctx, time.Until(until))
	}
}

// catchUp reads from the search API the ids the live walk fell behind on,
// but for the last quarter of MaxWalkGap, and moves the walk past them.
func (s *Source) catchUp(ctx context.Context, w *walk, emit source.Emit) {
	cut := w.end - s.opts.MaxWalkGap/4
	if cut < w.next {
		return
	}
	// The missed items came after the newest one handed over (or after
	// the walk started); ids and times agree but for moments, so the
	// search starts a little earlier and keeps only the missed ids.
	since := s.lastTime()
	if since.IsZero() {
		s.mu.Lock()
		since = s.startAt
		s.mu.Unlock()
	}
	since = since.Add(-catchUpMargin)
	s.logger.Warn("hackernews walk fell behind: reading the gap from the search API", "from_id", w.next, "to_id", cut,
		"ids", cut-w.next+1)
	g := gap{after: w.next - 1, before: cut + 1, since: since, until: time.Now(), at: since}
	if err := s.searchGap(ctx, g, emit); err != nil {
		s.setErr(partFill, err)
		s.logger.Warn("hackernews gap not read from the search API: those ids are lost", "from_id", w.next, "to_id", cut, "err", err)
	}
	for id := range w.slots {
		if id <= cut {
			delete(w.slots, id)
		}
	}
	w.next = cut + 1
}

// catchUpMargin is how much earlier than the newest item handed over a
// catch-up's search starts.
const catchUpMargin = time.Minute

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
