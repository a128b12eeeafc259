package cluster

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Leadership timings (sqlstore/leader.go explains the row they act on).
const (
	// DefaultLeaderLease is how long a leadership lasts unrenewed: a
	// standby that saw no renewal for this long takes over.
	DefaultLeaderLease = 6 * time.Second
	// DefaultLeaderRenew is how often the leader renews, well inside the
	// lease, so two lost renewals in a row still keep it.
	DefaultLeaderRenew = 2 * time.Second
	// leaderWatchFraction sets how often a standby reads the row: this
	// fraction of the lease, so it notices a lapse within a few hundred
	// milliseconds of it.
	leaderWatchFraction = 12
	// leaderStepDownFraction of the lease is the margin by which a leader
	// stops leading before a standby could take over. A leader counts its
	// lease from when it sent the renewal, a standby from when it saw it:
	// the leader's deadline always comes first; the margin covers the
	// clocks' rates.
	leaderStepDownFraction = 6
)

// Term is one leadership won through the database.
type Term struct {
	// Number is the fencing term; Epoch is the epoch spawns see.
	Number uint64
	Epoch  string
	// Lapsed says the term was won from a leader that stopped renewing.
	// That leader's deadline passed before this term began, and it
	// granted no lease outliving its deadline (Hub.grantLocked), so this
	// leader may grant at once. Otherwise (a resigned leader, a lone hub
	// restarted) the restart rule holds: no grant for a lease lifetime.
	Lapsed bool
	// NotBefore, when set, is when this leader may grant its first lease:
	// it deposed a leader that was still renewing, whose leases end by that
	// leader's deadline, before this time (see attempt). It replaces the
	// restart rule.
	NotBefore time.Time
}

// Elector wins and keeps the leadership of the hubs on one database.
type Elector struct {
	store  *sqlstore.Store
	id     string // this hub's holder id
	url    string // this hub's URL, as spawns and operators reach it
	lease  time.Duration
	renew  time.Duration
	alone  bool // the database serves one hub (SQLite): it always leads
	logger *slog.Logger

	mu       sync.Mutex
	leader   string    // URL of the leader last seen ("" none)
	deadline time.Time // while leading: when this hub must stop
	leading  bool
}

// ElectorConfig configures an Elector.
type ElectorConfig struct {
	Store *sqlstore.Store
	URL   string
	// Lease and Renew default to DefaultLeaderLease and DefaultLeaderRenew.
	Lease, Renew time.Duration
	// Alone makes the hub lead without waiting: its database serves no
	// other hub.
	Alone  bool
	Logger *slog.Logger
}

// NewElector builds an elector for this hub.
func NewElector(cfg ElectorConfig) *Elector {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLeaderLease
	}
	if cfg.Renew <= 0 || cfg.Renew >= cfg.Lease {
		cfg.Renew = min(DefaultLeaderRenew, cfg.Lease/3)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Elector{store: cfg.Store, id: uuid.NewString(), url: cfg.URL, lease: cfg.Lease, renew: cfg.Renew,
		alone: cfg.Alone, logger: cfg.Logger.With("component", "leader")}
}

// Leader reports the leading hub's URL as last seen, and whether this hub
// leads.
func (e *Elector) Leader() (url string, self bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader, e.leading
}

// Deadline is when this hub's leadership could lapse (zero when it does not
// lead, or leads alone): what it grants must expire by then.
func (e *Elector) Deadline() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading || e.alone {
		return time.Time{}
	}
	return e.deadline
}

// Run leads from first (a term TryLead won; nil: campaign first) and,
// each time this hub wins, runs lead with a context that ends when the
// leadership is lost, then campaigns again. It returns when ctx ends, after
// resigning a leadership it holds so a standby takes over at once, or with
// lead's error when lead fails while leading.
func (e *Elector) Run(ctx context.Context, first *Term, lead func(ctx context.Context, t Term) error) error {
	for {
		var t Term
		if first != nil {
			t, first = *first, nil
		} else {
			var ok bool
			if t, ok = e.campaign(ctx); !ok {
				return nil
			}
		}
		leadCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var leadErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel() // a failed leader stops renewing
			leadErr = lead(leadCtx, t)
		}()
		e.hold(leadCtx, t.Number)
		cancel()
		wg.Wait()
		e.mu.Lock()
		e.leading, e.leader = false, ""
		e.mu.Unlock()
		if ctx.Err() != nil || leadErr != nil {
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), e.renew)
			if err := e.store.ResignLeadership(rctx, t.Number, e.id); err != nil {
				e.logger.Warn("unable to resign leadership", "term", t.Number, "err", err)
			}
			rcancel()
			if ctx.Err() != nil {
				return nil
			}
			return leadErr
		}
		e.logger.Warn("leadership lost, standing by", "term", t.Number)
	}
}

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

func (e *Elector) won(row sqlstore.LeaderRow, lapsed bool) Term {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading, e.leader = true, row.URL
	e.deadline = time.Now().Add(e.lease - e.lease/leaderStepDownFraction)
	return Term{Number: row.Term, Epoch: api.NewEpoch(row.Term), Lapsed: lapsed}
}

// hold renews the leadership of term until it is lost or ctx ends. Each
// successful renewal moves the deadline to a lease after the renewal was
// sent, less the step-down margin; a hub that cannot renew by its deadline
// (the database unreachable) stops leading then, before any standby can
// take over.
func (e *Elector) hold(ctx context.Context, term uint64) {
	if e.alone {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(e.renew)
	defer t.Stop()
	for {
		e.mu.Lock()
		deadline := e.deadline
		e.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			e.logger.Error("leadership lapsed: unable to renew it in time", "term", term)
			return
		}
		expire := time.NewTimer(left)
		select {
		case <-ctx.Done():
			expire.Stop()
			return
		case <-expire.C:
			continue
		case <-t.C:
			expire.Stop()
		}
		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, deadline)
		ok, err := e.store.RenewLeadership(rctx, term, e.id)
		cancel()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			e.logger.Warn("unable to renew leadership", "term", term, "err", err, "deadline_in", time.Until(deadline).Round(time.Millisecond))
		case !ok:
			e.logger.Error("leadership taken over by another hub", "term", term)
			return
		default:
			e.mu.Lock()
			e.deadline = sent.Add(e.lease - e.lease/leaderStepDownFraction)
			e.mu.Unlock()
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
