package node

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// The spawn's side of the exactness rules (liveness, and exact limits: docs/decisions/0001-leases-for-exact-limits.md),
// applied to a node without a hub: what a poll may change, how leases bound
// what is counted, and how usage increments travel until acknowledged.

// limitedSpec is a subscriber that may count comments only against a lease.
func limitedSpec(id int64) api.SubscriberSpec {
	sp := spec(id, 1, fmt.Sprintf("feed-%d", id))
	sp.Limited = true
	return sp
}

// refs lists crawler ids as a poll does.
func refs(ids ...int64) []api.SubscriberRef {
	out := make([]api.SubscriberRef, len(ids))
	for i, id := range ids {
		out[i] = api.SubscriberRef{CrawlerID: id, Version: 1}
	}
	return out
}

func TestPoll_AppliesOnlyAFreshPollOfTheAttachedHub(t *testing.T) {
	// grant is a lease for crawler 1's current instance.
	type grant struct {
		seq           uint64
		total         int64
		otherInstance bool
	}
	type poll struct {
		epoch  string
		nodeID string
		seq    uint64
		list   []int64
		grants []grant
	}
	cases := []struct {
		name       string
		polls      []poll
		wantErr    error // of the last poll
		wantSubs   []int64
		wantLease  int64 // crawler 1's lease total afterwards
		wantDetach bool
	}{
		{name: "a fresh poll keeps what it lists and grants",
			polls:    []poll{{epoch: "e1", seq: 2, list: []int64{1, 2}, grants: []grant{{seq: 1, total: 5}}}},
			wantSubs: []int64{1, 2}, wantLease: 5},
		{name: "a poll that omits a subscriber drops it",
			polls:    []poll{{epoch: "e1", seq: 2, list: []int64{1}}},
			wantSubs: []int64{1}},
		{name: "a poll that lists none drops all",
			polls:    []poll{{epoch: "e1", seq: 2}},
			wantSubs: []int64{}},
		{name: "a duplicate poll changes nothing",
			polls: []poll{
				{epoch: "e1", seq: 2, list: []int64{1, 2}},
				{epoch: "e1", seq: 2, list: []int64{1}, grants: []grant{{seq: 1, total: 9}}},
			},
			wantSubs: []int64{1, 2}},
		{name: "a poll with a stale sequence number changes nothing",
			polls: []poll{
				{epoch: "e1", seq: 5, list: []int64{1, 2}},
				{epoch: "e1", seq: 3, list: []int64{2}, grants: []grant{{seq: 1, total: 9}}},
			},
			wantSubs: []int64{1, 2}},
		{name: "a poll no newer than the last request is stale",
			polls:    []poll{{epoch: "e1", seq: 1, list: []int64{2}}},
			wantSubs: []int64{1, 2}},
		{name: "a poll from an older epoch detaches and grants nothing",
			polls:   []poll{{epoch: "e0", seq: 9, list: []int64{1, 2}, grants: []grant{{seq: 1, total: 9}}}},
			wantErr: ErrEpoch, wantSubs: []int64{}, wantDetach: true},
		{name: "a poll for another node changes nothing",
			polls:   []poll{{epoch: "e1", nodeID: "someone-else", seq: 9, list: []int64{1}, grants: []grant{{seq: 1, total: 9}}}},
			wantErr: ErrEpoch, wantSubs: []int64{1, 2}},
		{name: "an older grant changes nothing",
			polls: []poll{
				{epoch: "e1", seq: 2, list: []int64{1, 2}, grants: []grant{{seq: 2, total: 5}}},
				{epoch: "e1", seq: 3, list: []int64{1, 2}, grants: []grant{{seq: 1, total: 9}}},
			},
			wantSubs: []int64{1, 2}, wantLease: 5},
		{name: "a grant for another instance changes nothing",
			polls:    []poll{{epoch: "e1", seq: 2, list: []int64{1, 2}, grants: []grant{{seq: 1, total: 9, otherInstance: true}}}},
			wantSubs: []int64{1, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, _, _ := attachedNode(t)
			if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{limitedSpec(1), limitedSpec(2)}}); err != nil {
				t.Fatal(err)
			}
			inst := n.table.subs[1].instance
			var err error
			for _, p := range tc.polls {
				req := api.PollRequest{Epoch: p.epoch, NodeID: p.nodeID, Seq: p.seq, Subscribers: refs(p.list...)}
				for _, g := range p.grants {
					l := api.Lease{CrawlerID: 1, Instance: inst, Seq: g.seq, Total: g.total, ExpiresAt: n.clock() + 60_000}
					if g.otherInstance {
						l.Instance++
					}
					req.Leases = append(req.Leases, l)
				}
				_, err = n.Poll(req)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("last poll: err %v, want %v", err, tc.wantErr)
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			got := make([]int64, 0, len(n.table.subs))
			for id := range n.table.subs {
				got = append(got, id)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.wantSubs) {
				t.Fatalf("subscribers %v, want %v", got, tc.wantSubs)
			}
			if s, ok := n.table.subs[1]; ok && s.leaseTotal != tc.wantLease {
				t.Fatalf("lease total %d, want %d", s.leaseTotal, tc.wantLease)
			}
			if detached := n.attach.state == api.NodeDetached; detached != tc.wantDetach {
				t.Fatalf("state %s, want detached %v", n.attach.state, tc.wantDetach)
			}
		})
	}
}

func TestLease_BoundsWhatIsCountedOnTheSpawnClock(t *testing.T) {
	// A step grants a lease (seq > 0), offers items at base+at on the
	// spawn's clock, or both (the grant first).
	type step struct {
		seq       uint64
		total     int64
		expiresIn int64 // ms after base
		items     int
		at        int64 // ms after base
	}
	const long = 60_000
	cases := []struct {
		name      string
		unlimited bool
		steps     []step
		want      int64 // comments counted (reserved)
		wantHeld  int   // items held for a lease
	}{
		{name: "without a lease nothing is counted",
			steps: []step{{items: 3}}, want: 0, wantHeld: 3},
		{name: "an unlimited subscriber needs no lease",
			unlimited: true, steps: []step{{items: 3}}, want: 3},
		{name: "a lease bounds what is counted",
			steps: []step{{seq: 1, total: 2, expiresIn: long, items: 3}}, want: 2, wantHeld: 1},
		{name: "grants are cumulative, not added up",
			steps: []step{{seq: 1, total: 2, expiresIn: long}, {seq: 2, total: 5, expiresIn: long, items: 7}}, want: 5, wantHeld: 2},
		{name: "a larger grant releases the items held",
			steps: []step{{seq: 1, total: 1, expiresIn: long, items: 3}, {seq: 2, total: 3, expiresIn: long}}, want: 3},
		{name: "a lease is live until its expiry on the spawn clock",
			steps: []step{{seq: 1, total: 5, expiresIn: 100, items: 2, at: 99}}, want: 2},
		{name: "an expired lease counts nothing",
			steps: []step{{seq: 1, total: 5, expiresIn: 100, items: 2, at: 100}}, want: 0, wantHeld: 2},
		{name: "a grant already expired counts nothing",
			steps: []step{{seq: 1, total: 5, expiresIn: -1, items: 2}}, want: 0, wantHeld: 2},
		{name: "an older grant does not replace a newer one",
			steps: []step{{seq: 2, total: 2, expiresIn: long}, {seq: 1, total: 9, expiresIn: long, items: 5}}, want: 2, wantHeld: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, _, _ := attachedNode(t)
			sp := limitedSpec(1)
			sp.Limited = !tc.unlimited
			if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{sp}}); err != nil {
				t.Fatal(err)
			}
			n.mu.Lock()
			s := n.table.subs[1]
			n.mu.Unlock()
			base := n.clock()
			pollSeq, item := uint64(1), 0
			for _, st := range tc.steps {
				if st.seq > 0 {
					pollSeq++
					l := api.Lease{CrawlerID: 1, Instance: s.instance, Seq: st.seq, Total: st.total, ExpiresAt: base + st.expiresIn}
					if _, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: pollSeq, Subscribers: refs(1), Leases: []api.Lease{l}}); err != nil {
						t.Fatal(err)
					}
				}
				n.mu.Lock()
				for range st.items {
					item++
					it := source.Item{ID: fmt.Sprint("item-", item), Text: "x", PublishedAt: time.Now()}
					if p, ok := s.acceptLocked(it, "test", base+st.at); ok {
						n.usage.pendingLocked(p.comment.CrawlerID, 1)
					}
				}
				n.mu.Unlock()
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			if s.reserved != tc.want || len(s.backlog) != tc.wantHeld {
				t.Fatalf("counted %d and held %d, want %d and %d", s.reserved, len(s.backlog), tc.want, tc.wantHeld)
			}
		})
	}
}

func TestPoll_IncrementsAreResentUntilAcknowledged(t *testing.T) {
	type poll struct {
		epoch string
		seq   uint64
		acks  []uint64
	}
	cases := []struct {
		name    string
		polls   []poll
		wantErr error    // of the last poll
		want    []uint64 // increments the spawn still holds
	}{
		{name: "unacknowledged increments are sent on every poll",
			polls: []poll{{epoch: "e1", seq: 2}, {epoch: "e1", seq: 3}}, want: []uint64{1, 2, 3}},
		{name: "acknowledged increments are pruned",
			polls: []poll{{epoch: "e1", seq: 2, acks: []uint64{1, 3}}, {epoch: "e1", seq: 3}}, want: []uint64{2}},
		{name: "acknowledgements add up over polls",
			polls: []poll{{epoch: "e1", seq: 2, acks: []uint64{2}}, {epoch: "e1", seq: 3, acks: []uint64{1, 3}}}, want: []uint64{}},
		{name: "a repeated acknowledgement changes nothing more",
			polls: []poll{{epoch: "e1", seq: 2, acks: []uint64{1}}, {epoch: "e1", seq: 3, acks: []uint64{1}}}, want: []uint64{2, 3}},
		{name: "an unknown id acknowledges nothing",
			polls: []poll{{epoch: "e1", seq: 2, acks: []uint64{7}}}, want: []uint64{1, 2, 3}},
		{name: "a stale poll's acknowledgements still hold",
			polls: []poll{{epoch: "e1", seq: 5}, {epoch: "e1", seq: 4, acks: []uint64{2}}}, want: []uint64{1, 3}},
		{name: "another epoch acknowledges nothing",
			polls:   []poll{{epoch: "e2", seq: 2, acks: []uint64{1, 2, 3}}},
			wantErr: ErrEpoch, want: []uint64{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, _, _ := attachedNode(t)
			// Three crawlers' comments, written: increments 1, 2 and 3.
			batch := make([]pending, 3)
			for i := range batch {
				batch[i] = pending{comment: api.Comment{ID: "c", CrawlerID: int64(i + 1), PublishedAt: time.Now()}, userID: 1, instance: 1, leaseSeq: 1}
			}
			n.assignIncrements(batch)
			n.recordWritten(batch, []bool{true, true, true})

			var resp api.PollResponse
			var err error
			for _, p := range tc.polls {
				resp, err = n.Poll(api.PollRequest{Epoch: p.epoch, Seq: p.seq, Acks: p.acks})
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("last poll: err %v, want %v", err, tc.wantErr)
			}
			n.mu.Lock()
			held := make([]uint64, 0, len(n.usage.incs))
			for _, inc := range n.usage.incs {
				held = append(held, inc.Seq)
			}
			n.mu.Unlock()
			if !slices.Equal(held, tc.want) {
				t.Fatalf("spawn holds increments %v, want %v", held, tc.want)
			}
			if err != nil {
				return
			}
			// What the spawn holds is what the last poll reported.
			sent := make([]uint64, 0, len(resp.Increments))
			for _, inc := range resp.Increments {
				if inc.Count != 1 {
					t.Fatalf("increment %d counts %d comments, want 1", inc.Seq, inc.Count)
				}
				sent = append(sent, inc.Seq)
			}
			if !slices.Equal(sent, tc.want) {
				t.Fatalf("last poll reported increments %v, want %v", sent, tc.want)
			}
		})
	}
}
