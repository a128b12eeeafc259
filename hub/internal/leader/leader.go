// Package leader decides which of the hubs sharing one database leads: it
// wins the leadership through a row of that database, renews it, deposes a
// leader that most spawns complain they cannot reach, and serves a hub that
// stands by (redirecting callers to the leader). The rest of the hub asks it
// whether this hub leads (Leading, Watch) and runs the control loop for each
// term it wins (Run). The design: docs/decisions/0002-leader-row.md.
package leader

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Leadership timings.
const (
	// DefaultLease is how long a leadership lasts unrenewed: a standby
	// that saw no renewal for this long takes over.
	DefaultLease = 6 * time.Second
	// DefaultRenew is how often the leader renews, well inside the lease,
	// so two lost renewals in a row still keep it.
	DefaultRenew = 2 * time.Second
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
	// granted no lease outliving its deadline (Elector.Deadline), so this
	// leader may grant at once. Otherwise (a resigned leader, a lone hub
	// restarted) the restart rule holds: no grant for a lease lifetime.
	Lapsed bool
	// NotBefore, when set, is when this leader may grant its first lease:
	// it deposed a leader that was still renewing, whose leases end by that
	// leader's deadline, before this time (see attempt). It replaces the
	// restart rule.
	NotBefore time.Time
}

// GrantsFrom is when the leader of the term, taking over at now, may grant
// its first comment lease: at once after a lapse, at NotBefore after a
// deposition, and zero otherwise, which keeps the restart rule (no grant
// for a lease lifetime after the control loop starts).
func (t Term) GrantsFrom(now time.Time) time.Time {
	if !t.NotBefore.IsZero() {
		return t.NotBefore
	}
	if t.Lapsed {
		return now
	}
	return time.Time{}
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
	changed  chan struct{} // closed, and replaced, when leading changes
}

// Config configures an Elector.
type Config struct {
	Store *sqlstore.Store
	URL   string
	// Lease and Renew default to DefaultLease and DefaultRenew.
	Lease, Renew time.Duration
	// Alone makes the hub lead without waiting: its database serves no
	// other hub.
	Alone  bool
	Logger *slog.Logger
}

// New builds the elector of this hub.
func New(cfg Config) *Elector {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Renew <= 0 || cfg.Renew >= cfg.Lease {
		cfg.Renew = min(DefaultRenew, cfg.Lease/3)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Elector{store: cfg.Store, id: uuid.NewString(), url: cfg.URL, lease: cfg.Lease, renew: cfg.Renew,
		alone: cfg.Alone, logger: cfg.Logger.With("component", "leader"), changed: make(chan struct{})}
}

// Leader reports the leading hub's URL as last seen, and whether this hub
// leads.
func (e *Elector) Leader() (url string, self bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader, e.leading
}

// Leading reports whether this hub leads now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Watch reports whether this hub leads now, and a channel closed when that
// changes: a part that only the leader may run (sending alerts, say) runs
// while leading and stops when the channel closes, then watches again.
func (e *Elector) Watch() (leading bool, changed <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading, e.changed
}

// setLeadingLocked records whether this hub leads, telling the watchers
// when that changes. The caller holds e.mu.
func (e *Elector) setLeadingLocked(leading bool) {
	if e.leading == leading {
		return
	}
	e.leading = leading
	close(e.changed)
	e.changed = make(chan struct{})
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
		e.setLeadingLocked(false)
		e.leader = ""
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

func (e *Elector) won(row sqlstore.LeaderRow, lapsed bool) Term {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.setLeadingLocked(true)
	e.leader = row.URL
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
