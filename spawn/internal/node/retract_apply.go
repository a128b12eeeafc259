package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// run applies retractions to the store until ctx ends.
func (r *retractions) run(ctx context.Context, st store.Store) {
	rs, _ := st.(store.Retractor)
	if rs != nil {
		if mark, err := rs.Applied(ctx); err == nil {
			r.startAt(mark)
		} else {
			r.logger.Warn("unable to read the applied retraction mark", "err", err)
		}
	}
	retry := backoff.Policy{Min: retractRetryMin, Max: retractRetryMax}
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		if !backoff.Sleep(ctx, retractLinger) {
			return
		}
		for {
			local, hub := r.take()
			if len(local) == 0 && len(hub) == 0 {
				break
			}
			// The log's entries this node applied already (its own
			// reports, a forget handed over directly) are not applied
			// again, but their place in the log counts.
			todo := r.notApplied(hub)
			for {
				cctx, cancel := context.WithTimeout(ctx, writeCallTimeout)
				_, err := apply(cctx, rs, append(slices.Clone(local), todo...), r)
				if err == nil && len(hub) > 0 && rs != nil {
					err = rs.SetApplied(cctx, hub[len(hub)-1].Seq)
				}
				cancel()
				if err == nil {
					retry.Reset()
					break
				}
				r.applyErrs.Inc()
				r.logger.Warn("retractions not applied, retrying", "count", len(local)+len(hub), "err", err)
				if !backoff.Sleep(ctx, retry.Next()) {
					return
				}
			}
			r.applied.Add(float64(len(local) + len(hub)))
			r.settle(local, hub)
		}
	}
}

// appliedKey names one retraction as applied here: what it is about and
// when it happened, at the microsecond the hub's log keeps.
func appliedKey(x api.Retraction) string {
	return x.Key() + "|" + strconv.FormatInt(x.At.UTC().Truncate(time.Microsecond).UnixMicro(), 10) + "|" +
		strconv.FormatBool(x.Active) + "|" + x.Status
}

// markApplied remembers retractions as applied here.
func (r *retractions) markApplied(xs []api.Retraction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rememberLocked(xs)
}

// rememberLocked is markApplied for a caller holding r.mu.
func (r *retractions) rememberLocked(xs []api.Retraction) {
	now := time.Now()
	if r.appliedHere == nil {
		r.appliedHere = map[string]time.Time{}
	}
	for _, x := range xs {
		k := appliedKey(x)
		if _, ok := r.appliedHere[k]; !ok {
			r.appliedFIFO = append(r.appliedFIFO, k)
		}
		r.appliedHere[k] = now
	}
	for len(r.appliedFIFO) > 0 {
		k := r.appliedFIFO[0]
		at, ok := r.appliedHere[k]
		if ok && len(r.appliedHere) <= appliedKept && now.Sub(at) <= appliedKeptFor {
			break
		}
		r.appliedFIFO = r.appliedFIFO[1:]
		delete(r.appliedHere, k)
	}
}

// notApplied leaves out the log's entries this node applied already.
func (r *retractions) notApplied(hub []api.Retraction) []api.Retraction {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.appliedHere) == 0 {
		return hub
	}
	out := make([]api.Retraction, 0, len(hub))
	for _, x := range hub {
		if _, done := r.appliedHere[appliedKey(x)]; !done {
			out = append(out, x)
		}
	}
	return out
}

// take removes the next batch: retractions the sources told and entries
// of the hub's log, in order.
func (r *retractions) take() (local, hub []api.Retraction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.learned), retractBatch)
	local = slices.Clone(r.learned[:n])
	r.learned = r.learned[n:]
	if len(r.learned) == 0 {
		r.learned = nil
	}
	m := min(len(r.fromHub), retractBatch-n)
	hub = slices.Clone(r.fromHub[:m])
	r.fromHub = r.fromHub[m:]
	if len(r.fromHub) == 0 {
		r.fromHub = nil
	}
	return local, hub
}

// settle records a batch applied: the sources' retractions are numbered
// and reported to the hub, the log's mark moves on.
func (r *retractions) settle(local, hub []api.Retraction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range local {
		r.seq++
		x.Seq = r.seq
		r.reported = append(r.reported, x)
	}
	if over := len(r.reported) - retractQueued; over > 0 {
		r.reported = append(r.reported[:0:0], r.reported[over:]...)
		r.dropped.Add(float64(over))
	}
	if len(hub) > 0 {
		r.done = max(r.done, hub[len(hub)-1].Seq)
	}
	r.appliedLocked(local)
	r.appliedLocked(hub)
	r.rememberLocked(local)
	close(r.settled)
	r.settled = make(chan struct{})
}

// apply makes the store calls for retractions and returns the comments
// removed, per crawler. Without a store that takes comments back it does
// nothing (the retractions still travel on to the other spawns).
func apply(ctx context.Context, rs store.Retractor, xs []api.Retraction, r *retractions) (map[int64]int64, error) {
	counts := map[int64]int64{}
	if rs == nil || len(xs) == 0 {
		return counts, nil
	}
	now := time.Now()
	// In order: a run of removals and edits is one call of each; an
	// account coming back ends the run, so a takedown, the return and a
	// takedown again end taken down.
	var tombs []store.Tombstone
	var edits []store.Edit
	flush := func() error {
		if len(tombs) > 0 {
			removed, err := rs.Bury(ctx, tombs)
			for _, rm := range removed {
				counts[rm.CrawlerID]++
			}
			if r != nil {
				r.noteRemoved(len(removed))
			}
			if err != nil {
				return fmt.Errorf("node: remove comments: %w", err)
			}
		}
		if len(edits) > 0 {
			if _, err := rs.Edit(ctx, edits); err != nil {
				return fmt.Errorf("node: edit comments: %w", err)
			}
		}
		tombs, edits = nil, nil
		return nil
	}
	for _, x := range xs {
		if x.Source == "" {
			continue
		}
		until := now.Add(tombstoneLifetime(r, x.Source))
		switch x.Op {
		case api.RetractDelete:
			if x.ID != "" {
				tombs = append(tombs, store.Tombstone{Source: x.Source, CommentID: x.ID, Until: until})
			}
		case api.RetractForget:
			if x.Author != "" {
				tombs = append(tombs, store.Tombstone{Source: x.Source, Author: x.Author, Before: x.At, Until: until, Exact: true})
			}
		case api.RetractAccount:
			switch {
			case x.Author == "":
			case x.Active:
				if err := flush(); err != nil {
					return counts, err
				}
				if err := rs.Lift(ctx, x.Source, []string{x.Author}); err != nil {
					return counts, fmt.Errorf("node: lift an account: %w", err)
				}
			case x.Removes():
				tombs = append(tombs, store.Tombstone{Source: x.Source, Author: x.Author, Account: true, Until: until})
			}
		case api.RetractUpdate:
			if x.ID != "" && !x.EditedAt.IsZero() {
				edits = append(edits, editOf(x))
			}
		}
	}
	return counts, flush()
}

func (r *retractions) noteRemoved(n int) {
	r.removed.Add(float64(n))
	r.mu.Lock()
	r.removedTotal += int64(n)
	r.mu.Unlock()
}

// removedCount is how many comments retractions removed (for tests).
func (r *retractions) removedCount() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removedTotal
}

func editOf(x api.Retraction) store.Edit {
	return store.Edit{Source: x.Source, CommentID: x.ID, Text: x.Text, Links: x.Links, EditedAt: x.EditedAt}
}

// tombstoneLifetime is how long a tombstone of a kind lasts, as r knows
// it; the longest a declared kind fills gaps from when r is nil.
func tombstoneLifetime(r *retractions, kind string) time.Duration {
	if r == nil || r.lifetime == nil {
		return time.Duration(defaultTombstoneLifetime)
	}
	return r.lifetime(kind)
}
