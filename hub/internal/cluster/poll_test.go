package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// TestAnswer_UsageExactlyOnce: whatever answers repeat or arrive out of
// order, each increment counts once, in memory and in SQL alike, and every
// increment of an answer is acknowledged on the next poll.
func TestAnswer_UsageExactlyOnce(t *testing.T) {
	type inc struct {
		seq   uint64
		count int64
	}
	cases := []struct {
		name    string
		answers [][]inc
		want    int64
		maxSeq  uint64
	}{
		{"one answer", [][]inc{{{1, 3}}}, 3, 1},
		{"the same answer twice", [][]inc{{{1, 3}}, {{1, 3}}}, 3, 1},
		{"reordered", [][]inc{{{3, 1}}, {{1, 2}, {2, 4}}}, 7, 3},
		{"overlapping batches", [][]inc{{{1, 2}, {2, 4}}, {{2, 4}, {3, 1}}}, 7, 3},
		{"an old increment after newer ones", [][]inc{{{1, 2}, {2, 4}, {3, 1}}, {{1, 2}}}, 7, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			user := f.user(100)
			id := f.crawler(user, 100, "")
			f.sync()
			n := f.addNode("node-a")
			f.route()
			for _, answer := range tc.answers {
				req := f.pollRequest(n)
				resp := api.PollResponse{Clock: f.spawnClock(), Subscribers: []api.SubscriberStatus{{CrawlerID: id, State: api.StateRunning, Instance: 1}}}
				var seqs []uint64
				for _, i := range answer {
					resp.Increments = append(resp.Increments, api.Increment{Seq: i.seq, CrawlerID: id, UserID: user, Instance: 1, Count: i.count})
					seqs = append(seqs, i.seq)
				}
				f.answer(n, resp, len(req.Acks))
				if acks := f.pollRequest(n).Acks; !slices.Equal(acks, seqs) {
					t.Fatalf("next poll acknowledges %v, want %v", acks, seqs)
				}
			}
			ctx := context.Background()
			row, err := f.st.GetCrawler(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			u, err := f.st.GetUser(ctx, user)
			if err != nil {
				t.Fatal(err)
			}
			c := f.crawlerOf(id)
			if c.row.Usage != tc.want || row.Usage != tc.want || u.Usage != tc.want || f.h.UserUsage(user, 0) != tc.want {
				t.Fatalf("usage: crawler %d in memory, %d in SQL; user %d in SQL, %d in memory; want %d",
					c.row.Usage, row.Usage, u.Usage, f.h.UserUsage(user, 0), tc.want)
			}
			if n.maxSeq != tc.maxSeq {
				t.Fatalf("highest increment applied %d, want %d", n.maxSeq, tc.maxSeq)
			}
		})
	}
}

// TestPollRequest_AcksUntilAnswered: acknowledgements leave the next poll
// only once a poll that carried them was answered; a lost answer sends them
// again.
func TestPollRequest_AcksUntilAnswered(t *testing.T) {
	f := newFixture(t)
	user := f.user(0)
	id := f.crawler(user, 0, "")
	f.sync()
	n := f.addNode("node-a")
	f.route()
	incs := func(seqs ...uint64) []api.Increment {
		var out []api.Increment
		for _, s := range seqs {
			out = append(out, api.Increment{Seq: s, CrawlerID: id, UserID: user, Count: 1})
		}
		return out
	}
	req1 := f.pollRequest(n)
	f.answer(n, api.PollResponse{Increments: incs(1, 2)}, len(req1.Acks))
	req2 := f.pollRequest(n) // carries 1, 2; its answer is lost
	req3 := f.pollRequest(n)
	if !slices.Equal(req2.Acks, []uint64{1, 2}) || !slices.Equal(req3.Acks, []uint64{1, 2}) {
		t.Fatalf("acks %v then %v, want 1 2 until answered", req2.Acks, req3.Acks)
	}
	f.answer(n, api.PollResponse{Increments: incs(3)}, len(req3.Acks))
	if req4 := f.pollRequest(n); !slices.Equal(req4.Acks, []uint64{3}) {
		t.Fatalf("acks %v after an answer, want only 3", req4.Acks)
	}
	if req1.Epoch != f.h.epoch || req2.Seq <= req1.Seq || req3.Seq <= req2.Seq {
		t.Fatalf("polls carry epoch %q and seq %d, %d, %d: want this hub's epoch and increasing numbers", req1.Epoch, req1.Seq, req2.Seq, req3.Seq)
	}
}

// TestAnswer_StatusesOnlyFromWhereTheCrawlerRuns: statuses about crawlers
// the hub routes elsewhere (a late answer of the node a crawler left) or no
// longer knows change nothing; a subscriber the node reports missing is
// sent again.
func TestAnswer_StatusesOnlyFromWhereTheCrawlerRuns(t *testing.T) {
	cases := []struct {
		name      string
		status    func(f *fixture, id int64) api.SubscriberStatus
		fromOther bool // the answer comes from the node the crawler is not on
		wantState string
		wantSend  bool
	}{
		{"its node reports it running", func(f *fixture, id int64) api.SubscriberStatus {
			return api.SubscriberStatus{CrawlerID: id, State: api.StateRunning, Instance: 1}
		}, false, api.StateRunning, false},
		{"another node reports it failed", func(f *fixture, id int64) api.SubscriberStatus {
			return api.SubscriberStatus{CrawlerID: id, State: api.StateFailed, Error: "old", Instance: 1}
		}, true, api.StatePending, false},
		{"another node reports it missing", func(f *fixture, id int64) api.SubscriberStatus {
			return api.SubscriberStatus{CrawlerID: id, State: api.StateMissing}
		}, true, api.StatePending, false},
		{"its node reports it missing", func(f *fixture, id int64) api.SubscriberStatus {
			return api.SubscriberStatus{CrawlerID: id, State: api.StateMissing}
		}, false, api.StatePending, true},
		{"a crawler the hub does not know", func(f *fixture, id int64) api.SubscriberStatus {
			return api.SubscriberStatus{CrawlerID: id + 1000, State: api.StateRunning, Instance: 1}
		}, false, api.StatePending, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.crawler(f.user(0), 10, "")
			f.sync()
			a, b := f.addNode("node-a"), f.addNode("node-b")
			f.route()
			on, other := a, b
			if f.crawlerOf(id).nodeID() == b.id {
				on, other = b, a
			}
			from := on
			if tc.fromOther {
				from = other
			}
			f.answer(from, api.PollResponse{Clock: f.spawnClock(), Subscribers: []api.SubscriberStatus{tc.status(f, id)}}, 0)
			c := f.crawlerOf(id)
			f.h.mu.Lock()
			state, send := c.state, c.needSend
			_, account := c.leases.inst[instKey{other.id, 1}]
			f.h.mu.Unlock()
			if state != tc.wantState || send != tc.wantSend {
				t.Fatalf("state %s, send again %v; want %s, %v", state, send, tc.wantState, tc.wantSend)
			}
			if account {
				t.Fatalf("a lease account on %s, where the crawler does not run", other.id)
			}
		})
	}
}

// TestAnswer_PartialAnswersActLikeWholeOnes: a spawn that leaves unchanged
// statuses out of its answers (api.StatusDelta) leaves the hub in the same
// state as one that tells everything every time — crawler states, lease
// accounts and the leases granted next — and the hub asks for every status
// again when a crawler it has not heard of on the node lands there.
func TestAnswer_PartialAnswersActLikeWholeOnes(t *testing.T) {
	whole, partial := newFixture(t), newFixture(t)
	type setup struct {
		f        *fixture
		n        *node
		ids      []int64
		delta    api.StatusDelta
		lastBase uint64
	}
	var sides []*setup
	for _, f := range []*fixture{whole, partial} {
		user := f.user(0)
		s := &setup{f: f}
		for i := range 4 {
			limit := int64(0)
			if i%2 == 0 {
				limit = 1000
			}
			s.ids = append(s.ids, f.crawler(user, limit, fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)))
		}
		f.sync()
		s.n = f.addNode("node-a")
		f.route()
		sides = append(sides, s)
	}
	// Each step: what runs on the spawn (reserved, rate, state per crawler
	// index), then the fixture's clock moves on.
	steps := []struct {
		reserved []int64
		rate     []float64
		state    []string
	}{
		{[]int64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, []string{api.StateRunning, api.StateRunning, api.StateRunning, api.StateRunning}},
		{[]int64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, []string{api.StateRunning, api.StateRunning, api.StateRunning, api.StateRunning}},
		{[]int64{4, 0, 0, 0}, []float64{2, 0, 0, 0}, []string{api.StateRunning, api.StateRunning, api.StateRunning, api.StateRunning}},
		{[]int64{4, 0, 10, 0}, []float64{2, 0, 5, 0}, []string{api.StateRunning, api.StateFailed, api.StateQuotaWait, api.StateRunning}},
		{[]int64{4, 0, 10, 0}, []float64{2, 0, 5, 0}, []string{api.StateRunning, api.StateFailed, api.StateQuotaWait, api.StateRunning}},
		{[]int64{4, 0, 10, 0}, []float64{2, 0, 5, 0}, []string{api.StateRunning, api.StateFailed, api.StateQuotaWait, api.StateRunning}},
	}
	for i, step := range steps {
		var grants []map[int64]api.Lease
		for k, s := range sides {
			f := s.f
			req := f.pollRequest(s.n)
			if k == 0 && req.StatusBase != 0 {
				t.Fatalf("step %d: a hub that got whole answers names base %d", i, req.StatusBase)
			}
			if k == 1 && i > 0 && req.StatusBase != s.lastBase {
				t.Fatalf("step %d: poll names base %d, want the last answer %d", i, req.StatusBase, s.lastBase)
			}
			resp := api.PollResponse{NodeID: s.n.id, Clock: f.spawnClock()}
			if k == 1 {
				resp.Answer, resp.Partial = s.delta.Begin(req.StatusBase)
			}
			for j, id := range s.ids {
				st := api.SubscriberStatus{CrawlerID: id, Version: 1, State: step.state[j], Instance: 1,
					Reserved: step.reserved[j], RatePerSec: step.rate[j]}
				if k == 0 || s.delta.Include(st) {
					resp.Subscribers = append(resp.Subscribers, st)
				}
			}
			if k == 1 {
				s.delta.End()
				s.lastBase = resp.Answer
				if i > 0 && len(resp.Subscribers) == len(s.ids) {
					t.Fatalf("step %d: the partial answer carries every status", i)
				}
			}
			f.answer(s.n, resp, len(req.Acks))
			grants = append(grants, f.grant(s.n))
			f.now = f.now.Add(fixtureTTL / 2)
		}
		for j := range sides[0].ids {
			cw, cp := whole.crawlerOf(sides[0].ids[j]), partial.crawlerOf(sides[1].ids[j])
			lw, lp := grants[0][sides[0].ids[j]], grants[1][sides[1].ids[j]]
			lw.CrawlerID, lp.CrawlerID = 0, 0
			if cw.state != cp.state || cw.rate != cp.rate || lw != lp {
				t.Fatalf("step %d, crawler %d: whole answers give %s, %v, lease %+v; partial ones %s, %v, lease %+v",
					i, j, cw.state, cw.rate, lw, cp.state, cp.rate, lp)
			}
		}
	}
	// A crawler new to the node makes the next poll ask for everything.
	f := partial
	id := f.crawler(f.user(0), 0, "00000000-0000-4000-8000-000000000099")
	f.sync()
	f.route()
	if req := f.pollRequest(sides[1].n); req.StatusBase != 0 {
		t.Fatalf("after a crawler landed on the node the poll names base %d, want 0", req.StatusBase)
	}
	if c := f.crawlerOf(id); c.nodeID() != sides[1].n.id {
		t.Fatalf("crawler on %q", c.nodeID())
	}
}
