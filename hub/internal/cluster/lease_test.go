package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// hubExpiryAfter is how long after its anchor a lease is dead for the hub.
var hubExpiryAfter = fixtureTTL + time.Duration(float64(fixtureTTL)*leaseMarginFraction) + leaseMarginFixed

func TestLease_GrantSizes(t *testing.T) {
	cases := []struct {
		name                     string
		crawlerLimit, crawlerUse int64
		userLimit, userUse       int64
		rate                     float64
		want                     int64 // lease total; 0: no lease
	}{
		{name: "no limit, no lease"},
		{name: "crawler limit: the minimum lease", crawlerLimit: 100, want: minLease},
		{name: "crawler limit: no more than remains", crawlerLimit: 100, crawlerUse: 95, want: 5},
		{name: "crawler at its limit", crawlerLimit: 100, crawlerUse: 100},
		{name: "a user limit alone limits the crawler", userLimit: 7, want: 7},
		{name: "the user's remainder is smaller", crawlerLimit: 50, userLimit: 100, userUse: 98, want: 2},
		{name: "user at its limit", crawlerLimit: 50, userLimit: 100, userUse: 100},
		{name: "the rate sizes the lease", crawlerLimit: 1000, rate: 100, want: 200},
		{name: "the rate is capped by what remains", crawlerLimit: 150, rate: 100, want: 150},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.crawler(f.user(tc.userLimit), tc.crawlerLimit, "")
			f.sync()
			n := f.addNode("node-a")
			f.route()
			f.h.mu.Lock()
			c := f.h.crawlers[id]
			c.row.Usage = tc.crawlerUse
			f.h.users[c.row.UserID].row.Usage = tc.userUse
			f.h.mu.Unlock()
			f.running(n, map[int64]int64{id: 0}, tc.rate)
			got := f.grant(n)[id].Total
			if got != tc.want {
				t.Fatalf("lease total %d, want %d", got, tc.want)
			}
			if err := f.exactErr(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLease_UserLimitSharedAcrossNodes: the leases of one user's crawlers,
// wherever they run, never add up to more than the user has left.
func TestLease_UserLimitSharedAcrossNodes(t *testing.T) {
	for _, limit := range []int64{1, 3, 15, 40} {
		f := newFixture(t)
		u := f.user(limit)
		ids := []int64{f.crawler(u, 0, ""), f.crawler(u, 0, ""), f.crawler(u, 0, ""), f.crawler(u, 0, "")}
		f.sync()
		nodes := []*node{f.addNode("node-a"), f.addNode("node-b")}
		f.route()
		var sum int64
		for _, n := range nodes {
			reserved := map[int64]int64{}
			for _, id := range ids {
				if f.crawlerOf(id).nodeID() == n.id {
					reserved[id] = 0
				}
			}
			f.running(n, reserved, 5)
		}
		for _, n := range nodes {
			for _, l := range f.grant(n) {
				sum += l.Total
			}
		}
		if sum > limit || sum == 0 {
			t.Fatalf("user limit %d: leases add up to %d", limit, sum)
		}
		if err := f.exactErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLease_RestartedHubGrantsNothingForOneLifetime: leases a previous run
// granted may still be live on spawns; a new hub grants nothing until they
// have surely expired.
func TestLease_RestartedHubGrantsNothingForOneLifetime(t *testing.T) {
	cases := []struct {
		sinceStart time.Duration
		grants     bool
	}{
		{0, false},
		{fixtureTTL, false},
		{hubExpiryAfter - time.Millisecond, false},
		{hubExpiryAfter, true},
	}
	for _, tc := range cases {
		t.Run(tc.sinceStart.String(), func(t *testing.T) {
			f := newFixture(t)
			id := f.crawler(f.user(0), 100, "")
			f.sync()
			n := f.addNode("node-a")
			f.route()
			f.running(n, map[int64]int64{id: 0}, 0)
			f.h.started = f.now.Add(-tc.sinceStart)
			if _, got := f.grant(n)[id]; got != tc.grants {
				t.Fatalf("%v after start: granted %v, want %v", tc.sinceStart, got, tc.grants)
			}
		})
	}
}

// TestLease_OldAnchorGrantsNothing: a lease anchored on an answer older
// than half a lifetime would be mostly expired on arrival.
func TestLease_OldAnchorGrantsNothing(t *testing.T) {
	f := newFixture(t)
	id := f.crawler(f.user(0), 100, "")
	f.sync()
	n := f.addNode("node-a")
	f.route()
	f.running(n, map[int64]int64{id: 0}, 0)
	f.now = f.now.Add(fixtureTTL/2 + time.Millisecond)
	if l, ok := f.grant(n)[id]; ok {
		t.Fatalf("granted %+v on an anchor older than half a lifetime", l)
	}
}

// TestLease_Outstanding: what one account may still add to usage.
func TestLease_Outstanding(t *testing.T) {
	now := time.Now()
	live, dead := now.Add(time.Second), now.Add(-time.Millisecond)
	cases := []struct {
		name string
		l    instLease
		want int64
	}{
		{"live grant", instLease{granted: 10, hubExpiry: live, spawnExpiry: 100, statusClock: 50, reserved: 3, used: 3}, 7},
		{"counted, not yet reported", instLease{granted: 10, hubExpiry: live, spawnExpiry: 100, statusClock: 50, reserved: 6, used: 3}, 7},
		{"expired for the hub, no status since", instLease{granted: 10, hubExpiry: dead, spawnExpiry: 100, statusClock: 50, reserved: 3, used: 3}, 7},
		{"status after expiry returns the unused rest", instLease{granted: 10, hubExpiry: dead, spawnExpiry: 100, statusClock: 100, reserved: 4, used: 3}, 1},
		{"all used", instLease{granted: 10, hubExpiry: live, spawnExpiry: 100, statusClock: 50, reserved: 10, used: 10}, 0},
		{"dead node before expiry counts as spent", instLease{granted: 10, spawnExpiry: 100, statusClock: 50, hubExpiry: live, nodeLost: true, awaitingRecovery: true, used: 2}, 8},
		{"dead node, recovered, before expiry", instLease{granted: 10, spawnExpiry: 100, statusClock: 50, hubExpiry: live, nodeLost: true, used: 2}, 8},
		{"dead node after expiry, awaiting recovery", instLease{granted: 10, spawnExpiry: 100, statusClock: 50, hubExpiry: dead, nodeLost: true, awaitingRecovery: true, used: 2}, 8},
		{"dead node after expiry, recovered", instLease{granted: 10, spawnExpiry: 100, statusClock: 50, hubExpiry: dead, nodeLost: true, used: 2}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.outstanding(now); got != tc.want {
				t.Fatalf("outstanding %d, want %d", got, tc.want)
			}
		})
	}
}

// TestLease_Settle: which accounts are forgotten, after which they count
// for nothing.
func TestLease_Settle(t *testing.T) {
	now := time.Now()
	live, dead := now.Add(time.Second), now.Add(-time.Millisecond)
	const crawlerID = 7
	cases := []struct {
		name        string
		node        string // the account's node; the answer is from node-a
		l           instLease
		pending     int
		allReported bool
		forgotten   bool
	}{
		{"current, expired", "node-a", instLease{current: true, hubExpiry: dead, reserved: 3, used: 3}, 0, true, false},
		{"retired, live", "node-a", instLease{hubExpiry: live, reserved: 3, used: 3}, 0, true, false},
		{"retired, expired, all reported", "node-a", instLease{hubExpiry: dead, reserved: 5, used: 3}, 0, true, true},
		{"retired, expired, comments pending", "node-a", instLease{hubExpiry: dead, reserved: 3, used: 3}, 2, true, false},
		{"retired, expired, more increments, not all used", "node-a", instLease{hubExpiry: dead, reserved: 5, used: 3}, 0, false, false},
		{"retired, expired, more increments, reservation reached", "node-a", instLease{hubExpiry: dead, reserved: 3, used: 3}, 0, false, false},
		{"another node's retired account", "node-b", instLease{hubExpiry: dead, reserved: 3, used: 3}, 0, true, false},
		{"dead node, expired, recovered", "node-b", instLease{nodeLost: true, hubExpiry: dead, granted: 10}, 0, true, true},
		{"dead node, expired, awaiting recovery", "node-b", instLease{nodeLost: true, awaitingRecovery: true, hubExpiry: dead, granted: 10}, 0, true, false},
		{"dead node, live", "node-b", instLease{nodeLost: true, hubExpiry: live, granted: 10}, 0, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.l
			b := leaseBook{inst: map[instKey]*instLease{{tc.node, 1}: &l}}
			left := b.settle("node-a", map[int64]int{crawlerID: tc.pending}, tc.allReported, crawlerID, now)
			_, kept := b.inst[instKey{tc.node, 1}]
			if kept == tc.forgotten {
				t.Fatalf("kept %v, want forgotten %v", kept, tc.forgotten)
			}
			if wantLeft := kept && tc.node == "node-a"; left != wantLeft {
				t.Fatalf("settle reports accounts left on node-a: %v, want %v", left, wantLeft)
			}
		})
	}
}

// TestLease_ExpiryReturnsUnusedAllowance: what a spawn did not use of an
// expired lease is granted again, once the spawn shows it stopped.
func TestLease_ExpiryReturnsUnusedAllowance(t *testing.T) {
	f := newFixture(t)
	id := f.crawler(f.user(0), 10, "")
	f.sync()
	n := f.addNode("node-a")
	f.route()
	f.running(n, map[int64]int64{id: 0}, 0)
	if got := f.grant(n)[id].Total; got != 10 {
		t.Fatalf("first lease %d, want 10", got)
	}
	// The spawn counts 3 and reports them; its lease still runs.
	f.now = f.now.Add(100 * time.Millisecond)
	f.answer(n, api.PollResponse{Clock: f.spawnClock(),
		Subscribers: []api.SubscriberStatus{{CrawlerID: id, State: api.StateRunning, Instance: 1, Reserved: 3}},
		Increments:  []api.Increment{{Seq: 1, CrawlerID: id, UserID: f.crawlerOf(id).row.UserID, Instance: 1, Count: 3}},
	}, 0)
	if got := f.crawlerOf(id).leases.outstanding(f.now); got != 7 {
		t.Fatalf("outstanding %d while the lease runs, want 7", got)
	}
	// No poll reaches it until its lease has run out; then it reports
	// nothing more was counted.
	f.now = f.now.Add(2 * fixtureTTL)
	f.running(n, map[int64]int64{id: 3}, 0)
	if got := f.crawlerOf(id).leases.outstanding(f.now); got != 0 {
		t.Fatalf("outstanding %d after the lease expired unused, want 0", got)
	}
	l := f.grant(n)[id]
	if l.Total-3 != 7 {
		t.Fatalf("new lease total %d allows %d more, want the 7 left", l.Total, l.Total-3)
	}
	if err := f.exactErr(); err != nil {
		t.Fatal(err)
	}
}

// TestLease_DeadNodeCountsAsSpentUntilExpiry: a lost node may still be
// counting under its lease; its crawler, moved to another node, gets
// nothing that lease could still cover until it expired and the lost node's
// usage was read back.
func TestLease_DeadNodeCountsAsSpentUntilExpiry(t *testing.T) {
	f := newFixture(t)
	id := f.crawler(f.user(0), 10, "")
	f.sync()
	a := f.addNode("node-a")
	f.route()
	f.running(a, map[int64]int64{id: 0}, 0)
	if got := f.grant(a)[id].Total; got != 10 {
		t.Fatalf("first lease %d, want 10", got)
	}
	f.running(a, map[int64]int64{id: 2}, 0)
	f.h.mu.Lock()
	f.h.removeNodeLocked(a, "test")
	f.h.mu.Unlock()
	b := f.addNode("node-b")
	f.route()
	if got := f.crawlerOf(id).nodeID(); got != "node-b" {
		t.Fatalf("crawler on %q after node-a was lost, want node-b", got)
	}
	steps := []struct {
		name  string
		after time.Duration
		want  int64 // new allowance on node-b
	}{
		{"lease live", 0, 0},
		{"lease expired, usage not read back", 2 * fixtureTTL, 0},
	}
	for _, s := range steps {
		f.now = f.now.Add(s.after)
		f.running(b, map[int64]int64{id: 0}, 0)
		if got := f.grant(b)[id].Total; got != s.want {
			t.Fatalf("%s: node-b granted %d, want %d", s.name, got, s.want)
		}
	}
	// The lost node's 2 comments are read back from the store.
	f.h.mu.Lock()
	f.h.applyNodeUsageLocked("node-a", nil, []api.Increment{{NodeID: "node-a", Seq: 1, CrawlerID: id, Instance: 1, Count: 2}})
	for _, c := range f.h.crawlers {
		c.leases.recovered("node-a")
	}
	f.h.mu.Unlock()
	f.now = f.now.Add(300 * time.Millisecond)
	f.running(b, map[int64]int64{id: 0}, 0)
	if got := f.grant(b)[id].Total; got != 8 {
		t.Fatalf("after recovery node-b granted %d, want the 8 left", got)
	}
	if err := f.exactErr(); err != nil {
		t.Fatal(err)
	}
}

// TestLease_RetiredAccountSettlesAfterTheNodeRegistersAgain: a node that
// detached (or was lost and came back) registers again under its id and
// never runs the crawler again; its account from before still settles on
// the node's answers once its lease expired, instead of counting as
// outstanding for ever.
func TestLease_RetiredAccountSettlesAfterTheNodeRegistersAgain(t *testing.T) {
	for _, lost := range []bool{false, true} {
		name := map[bool]string{false: "detached", true: "lost and back"}[lost]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			id := f.crawler(f.user(0), 30, "")
			f.sync()
			a := f.addNode("node-a")
			f.route()
			f.running(a, map[int64]int64{id: 0}, 0)
			if got := f.grant(a)[id].Total; got != 10 {
				t.Fatalf("first lease %d, want 10", got)
			}
			f.now = f.now.Add(100 * time.Millisecond)
			f.answer(a, api.PollResponse{Clock: f.spawnClock(),
				Subscribers: []api.SubscriberStatus{{CrawlerID: id, State: api.StateRunning, Instance: 1, Reserved: 8}},
				Increments:  []api.Increment{{Seq: 1, CrawlerID: id, UserID: f.crawlerOf(id).row.UserID, Instance: 1, Count: 5}},
			}, 0)
			if lost {
				f.h.mu.Lock()
				f.h.removeNodeLocked(a, "test")
				f.h.mu.Unlock()
			}
			if _, err := f.h.Register(api.RegisterRequest{NodeID: "node-a", URL: "http://node-a.invalid", Clock: f.spawnClock()}); err != nil {
				t.Fatal(err)
			}
			f.h.mu.Lock()
			a = f.h.nodes["node-a"]
			f.h.mu.Unlock()
			// The node runs something else now; its lease from before
			// expires, and it has nothing pending for the crawler.
			f.now = f.now.Add(2 * fixtureTTL)
			f.answer(a, api.PollResponse{Clock: f.spawnClock()}, 0)
			if got := f.crawlerOf(id).leases.outstanding(f.now); got != 0 {
				t.Fatalf("outstanding %d after the re-registered node's lease expired, want 0", got)
			}
			if err := f.exactErr(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLease_NoGrantUntilEverySpawnOfThePreviousRunReported: a restarted hub
// knows nothing of what the previous run's leases counted and the spawns
// have not reported. While one spawn of that run has not told everything,
// another spawn of the same user gets no lease; once it has, the grant
// leaves room for what it reported.
func TestLease_NoGrantUntilEverySpawnOfThePreviousRunReported(t *testing.T) {
	f := newFixture(t)
	u := f.user(10)
	// One crawler routed to each node.
	route := moduloRouter{}.Table([]string{"node-a", "node-b"})
	queryOn := func(node string) string {
		for {
			if q := uuid.New(); route(q) == node {
				return q.String()
			}
		}
	}
	onA, onB := f.crawler(u, 0, queryOn("node-a")), f.crawler(u, 0, queryOn("node-b"))
	a, b := f.addNode("node-a"), f.addNode("node-b")
	f.sync()
	f.route()
	f.h.mu.Lock()
	f.h.loadPriorLocked([]string{"node-a", "node-b"})
	f.h.mu.Unlock()

	f.running(a, map[int64]int64{onA: 0}, 0) // all told: nothing counted, nothing pending
	if got := f.grant(a); len(got) != 0 {
		t.Fatalf("granted %+v while node-b has not reported", got)
	}
	// node-b reports 6 comments of the previous run; 2 more are still
	// being written.
	f.answer(b, api.PollResponse{NodeID: "node-b", Clock: f.spawnClock(), Pending: map[int64]int{onB: 2},
		Increments: []api.Increment{{NodeID: "node-b", Seq: 1, CrawlerID: onB, UserID: u, Instance: 7, Count: 6}}}, 0)
	if got := f.grant(a); len(got) != 0 {
		t.Fatalf("granted %+v while node-b still writes comments of the previous run", got)
	}
	f.answer(b, api.PollResponse{NodeID: "node-b", Clock: f.spawnClock(),
		Increments: []api.Increment{{NodeID: "node-b", Seq: 2, CrawlerID: onB, UserID: u, Instance: 7, Count: 2}}}, 1)
	f.running(a, map[int64]int64{onA: 0}, 0)
	l, ok := f.grant(a)[onA]
	if !ok {
		t.Fatal("no grant once every spawn of the previous run reported")
	}
	// 2 of the user's 10 are left after the 8 reported, shared by rate
	// with the crawler on node-b (both at rate 0): ceil(2 × 1/2).
	if l.Total != 1 {
		t.Errorf("granted %d, want 1", l.Total)
	}
	if err := f.exactErr(); err != nil {
		t.Error(err)
	}
}

// TestLease_WhatAnAnswerMustTellBeforeGrants: an answer tells all its
// spawn counted only with every increment applied and no comment of a
// limited crawler (or one the hub does not know) waiting for the store.
func TestLease_WhatAnAnswerMustTellBeforeGrants(t *testing.T) {
	f := newFixture(t)
	limited := f.crawler(f.user(0), 5, "")
	free := f.crawler(f.user(0), 0, "")
	f.sync()
	cases := []struct {
		name string
		a    pollAnswer
		all  bool
	}{
		{"nothing counted", pollAnswer{}, true},
		{"increments applied", pollAnswer{resp: api.PollResponse{Increments: []api.Increment{{Seq: 1, CrawlerID: limited, Count: 3}}}}, true},
		{"applying failed", pollAnswer{applyErr: errors.New("sql down")}, false},
		{"more increments held", pollAnswer{resp: api.PollResponse{MoreIncrements: true}}, false},
		{"limited crawler pending", pollAnswer{resp: api.PollResponse{Pending: map[int64]int{limited: 1}}}, false},
		{"unknown crawler pending", pollAnswer{resp: api.PollResponse{Pending: map[int64]int{free + 100: 1}}}, false},
		{"unlimited crawler pending", pollAnswer{resp: api.PollResponse{Pending: map[int64]int{free: 4}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.h.mu.Lock()
			defer f.h.mu.Unlock()
			if got := f.h.answeredAllLocked(tc.a); got != tc.all {
				t.Errorf("answeredAll = %v, want %v", got, tc.all)
			}
		})
	}
}

// TestLease_UnregisteredSpawnOfThePreviousRunIsReadBack: a spawn of the
// previous run that never registers with this one (its wake-up answered,
// but it cannot register) has its usage read back from the store once it
// can no longer write, instead of holding every grant for ever.
func TestLease_UnregisteredSpawnOfThePreviousRunIsReadBack(t *testing.T) {
	f := newFixture(t)
	f.h.mu.Lock()
	f.h.loadPriorLocked([]string{"node-gone"})
	f.h.started = f.now.Add(-f.h.recoveryDelay() + time.Millisecond)
	f.h.mu.Unlock()
	f.h.chasePrior(context.Background(), f.now)
	if n := pendingRecoveries(f.h, "node-gone"); n != 0 {
		t.Fatalf("%d recoveries before the spawn can have stopped writing", n)
	}
	f.h.chasePrior(context.Background(), f.now.Add(time.Millisecond))
	if n := pendingRecoveries(f.h, "node-gone"); n != 1 {
		t.Fatalf("%d recoveries of the unregistered spawn, want 1", n)
	}
	f.h.chasePrior(context.Background(), f.now.Add(time.Second))
	if n := pendingRecoveries(f.h, "node-gone"); n != 1 {
		t.Fatalf("%d recoveries of the unregistered spawn after asking again, want 1", n)
	}
}
