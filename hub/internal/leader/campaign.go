package leader

import (
	"context"
	"time"

	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// How a hub wins the leadership: at start (TryLead), and while it stands
// by (campaign), when the row is free, when the leader stopped renewing,
// or when most spawns complain they cannot reach it.

// watch is what a standby last saw of the leader row.
type watch struct {
	row  sqlstore.LeaderRow
	seen bool
	at   time.Time // when row was first seen, on this hub's clock
	set  bool
}

// TryLead makes one attempt at leading, for a hub that is starting: it wins
// when the hub is alone on its database, when no hub ever led, or when the
// last leader resigned.
func (e *Elector) TryLead(ctx context.Context) (Term, bool, error) {
	if e.alone {
		row, err := e.store.ForceLeadership(ctx, e.id, e.url)
		if err != nil {
			return Term{}, false, err
		}
		return e.won(row, false), true, nil
	}
	var w watch
	t, ok, err := e.attempt(ctx, &w, false)
	return t, ok, err
}

// campaign waits until this hub leads. A standby reads the row every
// lease/leaderWatchFraction; it takes over when the row is empty, resigned,
// or unchanged for a whole lease on its own clock.
func (e *Elector) campaign(ctx context.Context) (Term, bool) {
	var w watch
	every := max(e.lease/leaderWatchFraction, time.Millisecond)
	for {
		var (
			t   Term
			ok  bool
			err error
		)
		if e.alone {
			var row sqlstore.LeaderRow
			if row, err = e.store.ForceLeadership(ctx, e.id, e.url); err == nil {
				t, ok = e.won(row, false), true
			}
		} else {
			t, ok, err = e.attempt(ctx, &w, true)
		}
		if ok {
			return t, true
		}
		if err != nil && ctx.Err() == nil {
			e.logger.Warn("leader election failed, will retry", "err", err)
		}
		if !sleepCtx(ctx, every) {
			return Term{}, false
		}
	}
}

// attempt reads the row, updates w, and takes over when it may: always
// when no hub ever led or the leader resigned, and, when lapse is set, when
// w has seen the same row for a whole lease.
func (e *Elector) attempt(ctx context.Context, w *watch, lapse bool) (Term, bool, error) {
	row, seen, err := e.store.Leader(ctx)
	if err != nil {
		return Term{}, false, err
	}
	now := time.Now()
	if !w.set || seen != w.seen || row.Term != w.row.Term || row.Holder != w.row.Holder || row.Renewals != w.row.Renewals {
		*w = watch{row: row, seen: seen, at: now, set: true}
		e.mu.Lock()
		e.leader = row.URL
		e.mu.Unlock()
	}
	lapsed := lapse && now.Sub(w.at) >= e.lease
	deposed := false
	if seen && row.Holder != "" && !lapsed {
		if !lapse || row.Holder == e.id {
			return Term{}, false, nil
		}
		var err error
		if deposed, err = e.unreachable(ctx, row); err != nil || !deposed {
			return Term{}, false, err
		}
	}
	won, took, err := e.store.TakeLeadership(ctx, row, seen, e.id, e.url)
	if err != nil || !took {
		w.set = false // another hub won: watch it afresh
		return Term{}, false, err
	}
	if deposed {
		// The deposed leader renews until it finds the row taken. Its last
		// renewal was sent before w.at, when this hub first saw it, and its
		// deadline is a lease less the step-down margin after sending it;
		// no lease it granted outlives that deadline, so a whole lease
		// after w.at every one has expired.
		e.logger.Warn("leadership taken: most spawns cannot reach the leader", "term", won.Term, "previous_leader", row.URL)
		t := e.won(won, false)
		t.NotBefore = w.at.Add(e.lease)
		return t, true, nil
	}
	e.logger.Info("leadership taken", "term", won.Term, "previous_leader", row.URL, "unrenewed_for", now.Sub(w.at).Round(time.Millisecond))
	return e.won(won, seen && row.Holder != ""), true, nil
}

// complaintWindow is how long a spawn's complaint about the leader counts,
// in leases: a detached spawn repeats it with every registration attempt.
const complaintWindow = 3

// unreachable reports whether most of the spawns the hubs know have
// complained recently that they cannot reach the leader of row: a leader
// cut off from its spawns but not from the database, which keeps renewing.
// The known spawns are those the leaders remembered (a lost spawn is
// forgotten only once its usage was recovered through another, reachable
// one) and every complainant.
func (e *Elector) unreachable(ctx context.Context, row sqlstore.LeaderRow) (bool, error) {
	complained, err := e.store.Complainants(ctx, row.Term, row.URL, time.Now().Add(-complaintWindow*e.lease))
	if err != nil || len(complained) == 0 {
		return false, err
	}
	known, err := e.store.KnownNodes(ctx)
	if err != nil {
		return false, err
	}
	all := make(map[string]bool, len(known)+len(complained))
	for _, k := range known {
		all[k.ID] = true
	}
	for _, id := range complained {
		all[id] = true
	}
	if 2*len(complained) <= len(all) {
		return false, nil
	}
	e.logger.Warn("spawns cannot reach the leader", "term", row.Term, "leader", row.URL, "complaining", len(complained), "known", len(all))
	return true, nil
}
