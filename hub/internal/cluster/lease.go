package cluster

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Leases: a limited crawler's subscriber stores a comment only against an
// allowance the hub granted it, so limits hold exactly. How and why:
// docs/decisions/0001-leases-for-exact-limits.md.

// Lease sizing.
const (
	// minLease is the smallest allowance worth granting to a subscriber
	// with no recent rate.
	minLease = 10
	// leaseRateFactor sizes a grant as this many lease lifetimes of the
	// subscriber's recent rate, so a steady subscriber never waits.
	leaseRateFactor = 2.0
	// leaseMarginFraction and leaseMarginFixed pad the hub-side expiry for
	// clock-rate drift between hub and spawn.
	leaseMarginFraction = 0.05
	leaseMarginFixed    = 50 * time.Millisecond
)

// instKey names one run of a crawler's subscriber on one node.
type instKey struct {
	node     string
	instance uint64
}

// instLease is the hub's account of one subscriber instance: what it was
// granted (cumulative), what it reported reserving, and what of it has been
// applied as usage. granted − used is the most it can still add to usage.
type instLease struct {
	granted     int64
	spawnExpiry int64     // spawn clock of the newest grant's expiry
	hubExpiry   time.Time // hub time after which the newest grant is dead
	reserved    int64
	statusClock int64 // spawn clock of the latest status
	used        int64
	current     bool // seen in its node's latest poll
	nodeLost    bool
	// awaitingRecovery keeps a lost node's account outstanding past its
	// expiry until the usage it stored unreported has been read back.
	awaitingRecovery bool
	lastAmount       int64 // the latest grant's addition
}

// leaseBook is a crawler's lease accounts.
type leaseBook struct {
	seq  uint64
	inst map[instKey]*instLease
}

func (b *leaseBook) get(k instKey) *instLease {
	if b.inst == nil {
		b.inst = map[instKey]*instLease{}
	}
	l, ok := b.inst[k]
	if !ok {
		l = &instLease{}
		b.inst[k] = l
	}
	return l
}

// onNode reports whether the crawler has an account on the node.
func (b *leaseBook) onNode(nodeID string) bool {
	for k := range b.inst {
		if k.node == nodeID {
			return true
		}
	}
	return false
}

// retire marks the crawler's accounts on a node as not current, before a
// poll's statuses mark the live one again.
func (b *leaseBook) retire(nodeID string) {
	for k, l := range b.inst {
		if k.node == nodeID {
			l.current = false
		}
	}
}

// observe records a status from a node's poll.
func (b *leaseBook) observe(nodeID string, st api.SubscriberStatus, clock int64) {
	if st.State == api.StateMissing || st.Instance == 0 {
		return
	}
	l := b.get(instKey{nodeID, st.Instance})
	l.current = true
	l.reserved = st.Reserved
	l.statusClock = clock
}

// nodeLost marks every account on a lost node: after its expiry nothing
// more can be counted against it.
func (b *leaseBook) nodeLost(nodeID string) {
	for k, l := range b.inst {
		if k.node == nodeID {
			l.nodeLost, l.current, l.awaitingRecovery = true, false, true
		}
	}
}

// nodeBack turns a lost node's accounts into retired ones when the node
// registers again: it reports their usage itself, and they settle once it
// has.
func (b *leaseBook) nodeBack(nodeID string) {
	for k, l := range b.inst {
		if k.node == nodeID {
			l.nodeLost, l.awaitingRecovery = false, false
		}
	}
}

// recovered releases a lost node's accounts: its unreported usage has been
// applied, so from their expiry on they count for nothing.
func (b *leaseBook) recovered(nodeID string) {
	for k, l := range b.inst {
		if k.node == nodeID {
			l.awaitingRecovery = false
		}
	}
}

// settle forgets accounts that can no longer add usage: retired instances
// whose lease has expired and whose node has nothing left to store for the
// crawler, and instances of lost nodes once their lease has expired (a dead
// node's lease counts as spent until then).
// It reports whether the crawler still has accounts on the node.
//
// An instance the node no longer runs, with nothing pending for its crawler
// in an answer that carried all of the node's increments, has had all its
// usage applied: what it reserved beyond that (comments the store already
// held, or never stored) was given back and will never count. Until such an
// answer its last reported reservation is no guide: it may have counted
// more between that status and its end, in increments still to come.
func (b *leaseBook) settle(nodeID string, pending map[int64]int, allReported bool, crawlerID int64, now time.Time) bool {
	left := false
	for k, l := range b.inst {
		if !now.Before(l.hubExpiry) {
			switch {
			case l.nodeLost && !l.awaitingRecovery:
				delete(b.inst, k)
				continue
			case k.node == nodeID && !l.current && pending[crawlerID] == 0 && allReported:
				delete(b.inst, k)
				continue
			}
		}
		if k.node == nodeID {
			left = true
		}
	}
	return left
}

// outstanding is the most this account can still add to usage.
func (l *instLease) outstanding(now time.Time) int64 {
	if l.nodeLost && !l.awaitingRecovery && !now.Before(l.hubExpiry) {
		return 0
	}
	g := l.granted
	if l.statusClock >= l.spawnExpiry {
		// The spawn reported after its lease ran out: what it reserved
		// then is all it will ever count under the grants so far.
		g = l.reserved
	}
	return max(0, max(g, l.reserved)-l.used)
}

func (b *leaseBook) outstanding(now time.Time) int64 {
	var sum int64
	for _, l := range b.inst {
		sum += l.outstanding(now)
	}
	return sum
}

// grantState is what lease grants wait for and reuse. Guarded by Hub.mu.
type grantState struct {
	// prior are the previous run's spawns still to report what they
	// counted under its leases; no lease is granted until they have.
	prior priorSpawns
	// userTotals are the users' totals, see userTotalLocked.
	userTotals map[int64]*userTotal
}

// userTotal is what a user's limited crawlers may still add to usage, summed
// over their lease accounts, and their weight for sharing grants.
type userTotal struct {
	out    int64
	weight float64
	at     time.Time
}

// userTotalLocked returns the user's totals, summed again only when older
// than a poll interval, so a poll round walks each customer's crawlers
// once, not once per node that runs some of them: at ten thousand nodes the
// difference is most of the round. Reusing them is safe: every grant adds
// to out at once, and everything else that changes an account (usage
// applied, a lease running out, a node's status, a node lost) only lowers
// what it may add, so a reused total never understates it. The exception,
// a lost node registering again (its accounts count again), drops every
// reused total (nodeBackLocked). A reused total overstates what remains
// outstanding by what was used since, which near a limit makes grants
// smaller for up to a poll interval, never larger.
func (h *Hub) userTotalLocked(userID int64, now time.Time) *userTotal {
	if t, ok := h.grants.userTotals[userID]; ok && now.Sub(t.at) < h.cfg.PollInterval {
		return t
	}
	t := &userTotal{at: now}
	for _, uc := range h.byUser[userID] {
		if uc.limited {
			t.out += uc.leases.outstanding(now)
			if uc.node != nil {
				t.weight += uc.rate + 1
			}
		}
	}
	if h.grants.userTotals == nil {
		h.grants.userTotals = map[int64]*userTotal{}
	}
	h.grants.userTotals[userID] = t
	return t
}

// grantLocked sizes this poll's leases for the node's limited subscribers.
// The sum of what every account may still add never exceeds what remains of
// the crawler's limit or of its user's limit.
func (h *Hub) grantLocked(n *node, now time.Time) []api.Lease {
	ttl := h.cfg.LeaseTTL
	hold := h.started.Add(ttl + time.Duration(float64(ttl)*leaseMarginFraction) + leaseMarginFixed)
	if !h.cfg.GrantsFrom.IsZero() {
		hold = h.cfg.GrantsFrom
	}
	if now.Before(hold) {
		// A previous run of the hub, or a previous leader, may have
		// granted leases that are still live on spawns it could not
		// reach; it kept no record of them. Grant nothing until they have
		// surely expired.
		return nil
	}
	if h.grantsHeldLocked() {
		// What the previous run's leases counted may not all be
		// reported yet (see priorSpawns).
		return nil
	}
	if now.Sub(n.anchorAt) > ttl/2 {
		// The anchor is old: a lease on it would be mostly expired.
		// The answer to this poll brings a fresh one.
		return nil
	}
	life := ttl // the sizing keeps ttl; expiry may come sooner
	if h.cfg.LeadershipDeadline != nil {
		if d := h.cfg.LeadershipDeadline(); !d.IsZero() {
			// No lease outlives the leadership: a hub taking over after
			// it lapsed finds every lease of this one expired.
			margin := time.Duration(float64(ttl)*leaseMarginFraction) + leaseMarginFixed
			life = min(life, d.Sub(n.anchorAt)-margin)
			if life < ttl/4 {
				return nil
			}
		}
	}
	// Per-user totals, for users with limited crawlers here.
	totals := map[int64]*userTotal{}
	for _, c := range n.want {
		if !c.limited {
			continue
		}
		if _, done := totals[c.row.UserID]; !done {
			totals[c.row.UserID] = h.userTotalLocked(c.row.UserID, now)
		}
	}
	var leases []api.Lease
	for id, c := range n.want {
		if !c.limited {
			continue
		}
		var cur *instLease
		var curKey instKey
		for k, l := range c.leases.inst {
			if k.node == n.id && l.current {
				cur, curKey = l, k
			}
		}
		if cur == nil {
			continue // first status not seen yet
		}
		remaining := int64(math.MaxInt64)
		if c.row.CommentLimit > 0 {
			remaining = c.row.CommentLimit - c.row.Usage - c.leases.outstanding(now)
		}
		want := max(int64(minLease), int64(math.Ceil(c.rate*ttl.Seconds()*leaseRateFactor)))
		if cur.granted > 0 && cur.reserved >= cur.granted {
			// It used up its allowance before the lease ran out: its rate
			// is held down by the lease, not by its source. Double the
			// grant until it no longer waits.
			want = max(want, 2*cur.lastAmount)
		}
		if u, ok := h.users[c.row.UserID]; ok && u.row.CommentLimit > 0 {
			ur := u.row.CommentLimit - u.row.Usage - totals[c.row.UserID].out
			remaining = min(remaining, ur)
			if w := totals[c.row.UserID].weight; w > 0 {
				share := int64(math.Ceil(float64(ur) * (c.rate + 1) / w))
				want = min(want, max(1, share))
			}
		}
		amount := max(0, min(want, remaining))
		base := cur.outstanding(now) + cur.used
		if amount == 0 && base <= cur.reserved {
			continue // nothing to grant and nothing left to extend
		}
		c.leases.seq++
		total := base + amount
		if t := totals[c.row.UserID]; t != nil {
			t.out += total - (cur.outstanding(now) + cur.used)
		}
		cur.granted = total
		cur.lastAmount = amount
		cur.spawnExpiry = n.anchorClock + life.Milliseconds()
		cur.hubExpiry = n.anchorAt.Add(life + time.Duration(float64(ttl)*leaseMarginFraction) + leaseMarginFixed)
		leases = append(leases, api.Lease{CrawlerID: id, Instance: curKey.instance, Seq: c.leases.seq, Total: total, ExpiresAt: cur.spawnExpiry})
		h.metrics.leaseGrants.Inc()
		h.metrics.leaseComments.Add(float64(amount))
	}
	return leases
}

// The restart rule has a second half. A run of the control loop (a
// restarted hub, a new leader) knows nothing of what the spawns counted
// under the previous run's leases and have not reported yet: stored
// comments whose increments SQL has not seen, and batches still being
// written. Waiting for those leases to expire stops new counting, not the
// reports of what was counted. Until each spawn the previous run knew
// (known_nodes) has told this run all of it, or had it read back from the
// store, what remains of any limit is unknown: the hub grants nothing.

// priorSpawns are the spawns of the previous run this run has not yet heard
// everything from. Guarded by Hub.mu.
type priorSpawns struct {
	// loaded says the previous run's spawns were read from SQL; until
	// then none may be granted to.
	loaded bool
	// unheard are their ids.
	unheard map[string]bool
}

// grantsHeldLocked says whether the previous run's usage may still be
// unreported, so that no lease may be granted.
func (h *Hub) grantsHeldLocked() bool {
	return !h.grants.prior.loaded || len(h.grants.prior.unheard) > 0
}

// loadPriorLocked records the spawns the previous run knew. A spawn that
// has already registered with this run is among them: it tells its usage
// in its answers like the others.
func (h *Hub) loadPriorLocked(ids []string) {
	h.grants.prior.loaded = true
	h.grants.prior.unheard = make(map[string]bool, len(ids))
	for _, id := range ids {
		h.grants.prior.unheard[id] = true
	}
	if len(ids) > 0 {
		h.logger.Info("no lease granted until the spawns of the previous run have reported their usage", "spawns", len(ids))
	}
}

// priorHeardLocked records that a spawn of the previous run has nothing
// more to report to this run.
func (h *Hub) priorHeardLocked(nodeID, how string) {
	if !h.grants.prior.unheard[nodeID] {
		return
	}
	delete(h.grants.prior.unheard, nodeID)
	h.logger.Info("spawn of the previous run has reported its usage", "node_id", nodeID, "how", how, "still_unheard", len(h.grants.prior.unheard))
	if len(h.grants.prior.unheard) == 0 {
		h.events.add("grants_resumed", "every spawn of the previous run has reported its usage: leases are granted again")
	}
}

// answeredAllLocked says whether an answer tells everything its node counted
// that may count against a limit: all its increments, applied, and no
// comment of a limited crawler still waiting for the store. A spawn answers
// this run only after registering with it, which drops every subscriber
// and lease of the previous run, and it counts nothing more for a limited
// crawler without this run's lease: such an answer holds the last of what
// it counted before.
func (h *Hub) answeredAllLocked(a pollAnswer) bool {
	if a.applyErr != nil || a.resp.MoreIncrements {
		return false
	}
	for id, waiting := range a.resp.Pending {
		if waiting <= 0 {
			continue
		}
		if c, ok := h.crawlers[id]; !ok || c.limited {
			return false
		}
	}
	return true
}

// chasePrior reads back the usage of the previous run's spawns that have not
// registered with this run one recovery delay after it started: a spawn
// whose wake-up failed, or that answers but cannot register, has stopped
// writing by then (it was not contacted since the previous run ended), and
// what it stored is in the store. One that registers later reports its own
// usage, as any lost node does. When the previous run's spawns could not be
// read at the start, it reads (and wakes) them first.
func (h *Hub) chasePrior(ctx context.Context, now time.Time) {
	h.mu.Lock()
	loaded := h.grants.prior.loaded
	if !loaded || now.Before(h.started.Add(h.recoveryDelay())) {
		h.mu.Unlock()
		if !loaded {
			h.wakeKnownNodes(ctx) // reading them failed at the start
		}
		return
	}
	var gone []string
	for id := range h.grants.prior.unheard {
		_, live := h.nodes[id]
		recovering := slices.ContainsFunc(h.lost.recoveries, func(r recovery) bool { return r.nodeID == id })
		if !live && !recovering {
			gone = append(gone, id)
		}
	}
	h.mu.Unlock()
	for _, id := range gone {
		after, err := h.cfg.Store.MaxAppliedSeq(ctx, id)
		if err != nil {
			h.logger.Warn("unable to read the last increment of a spawn of the previous run", "node_id", id, "err", err)
			continue
		}
		h.mu.Lock()
		if _, live := h.nodes[id]; !live && h.grants.prior.unheard[id] {
			h.logger.Info("spawn of the previous run has not registered: reading its usage back from the store", "node_id", id)
			h.lost.recoveries = append(h.lost.recoveries, recovery{nodeID: id, afterSeq: after, due: now})
		}
		h.mu.Unlock()
	}
}
