package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Random histories of the lease protocol between a hub and simulated
// spawns. Each step is one of: a poll round (its request or its answer may
// be lost, or the request delivered late, after newer ones), spawns
// counting comments under their leases, a subscriber restarting as a new
// instance, and time passing. After every step no crawler or user may have
// stored more than its limit, nor may usage plus what the lease accounts can
// still add exceed it; at the end, usage in memory and in SQL equals what
// the spawns stored.
const (
	propertyHistories = 24
	propertySteps     = 300
)

// leaseRun is one run of a subscriber on a simulated spawn.
type leaseRun struct {
	crawler, user int64
	instance      uint64
	leaseSeq      uint64
	total         int64 // cumulative allowance of the lease held
	expires       int64 // spawn clock
	reserved      int64
	rate          float64
}

// leaseSpawn keeps a spawn's side of the contract: it counts only under a
// live lease, applies a grant only if newer than the one it holds, and
// reports each increment until it is acknowledged.
type leaseSpawn struct {
	n            *node
	runs         map[int64]*leaseRun // by crawler
	nextInstance uint64
	incSeq       uint64
	unacked      []api.Increment
	late         []api.PollRequest // delivered after newer requests
}

func (s *leaseSpawn) receive(req api.PollRequest) {
	acked := map[uint64]bool{}
	for _, a := range req.Acks {
		acked[a] = true
	}
	keep := s.unacked[:0]
	for _, inc := range s.unacked {
		if !acked[inc.Seq] {
			keep = append(keep, inc)
		}
	}
	s.unacked = keep
	for _, l := range req.Leases {
		r, ok := s.runs[l.CrawlerID]
		if !ok || r.instance != l.Instance || l.Seq <= r.leaseSeq {
			continue
		}
		r.leaseSeq, r.total, r.expires = l.Seq, l.Total, l.ExpiresAt
	}
}

func (s *leaseSpawn) answer(clock int64) api.PollResponse {
	resp := api.PollResponse{NodeID: s.n.id, Clock: clock}
	for _, r := range s.runs {
		resp.Subscribers = append(resp.Subscribers, api.SubscriberStatus{
			CrawlerID: r.crawler, State: api.StateRunning, Instance: r.instance, Reserved: r.reserved,
			RatePerSec: r.rate, LeaseSeq: r.leaseSeq, LeaseTotal: r.total,
		})
	}
	const batch = 3 // increments per answer; the rest wait
	resp.Increments = append(resp.Increments, s.unacked[:min(batch, len(s.unacked))]...)
	resp.MoreIncrements = len(s.unacked) > batch
	return resp
}

func TestLease_RandomHistoriesStayWithinLimits(t *testing.T) {
	reached := 0
	for seed := range uint64(propertyHistories) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			if runHistory(t, rand.New(rand.NewPCG(seed, 0x5eed))) {
				reached++
			}
		})
	}
	t.Logf("%d of %d histories stored up to a limit", reached, propertyHistories)
	if reached < propertyHistories/4 {
		t.Fatalf("only %d of %d histories stored up to a limit: they hardly test the limits", reached, propertyHistories)
	}
}

// runHistory runs one random history and reports whether a crawler or the
// user stored up to its limit.
func runHistory(t *testing.T, rng *rand.Rand) bool {
	f := newFixture(t)
	var userLimit int64
	if rng.IntN(3) > 0 {
		userLimit = 20 + rng.Int64N(100)
	}
	user := f.user(userLimit)
	var crawlers []int64
	limits := map[int64]int64{}
	for range 3 {
		limit := 5 + rng.Int64N(80)
		id := f.crawler(user, limit, "")
		crawlers = append(crawlers, id)
		limits[id] = limit
	}
	f.sync()
	spawns := []*leaseSpawn{}
	for _, id := range []string{"node-a", "node-b"} {
		spawns = append(spawns, &leaseSpawn{n: f.addNode(id), runs: map[int64]*leaseRun{}})
	}
	f.route()
	for _, id := range crawlers {
		for _, s := range spawns {
			if f.crawlerOf(id).nodeID() == s.n.id {
				s.nextInstance++
				s.runs[id] = &leaseRun{crawler: id, user: user, instance: s.nextInstance, rate: float64(rng.IntN(30))}
			}
		}
	}
	stored := map[int64]int64{} // comments the spawns stored, by crawler
	type grantKey struct {
		node     string
		crawler  int64
		instance uint64
	}
	grants := map[grantKey]api.Lease{}

	poll := func(s *leaseSpawn, lossy bool) {
		req := f.pollRequest(s.n)
		for _, l := range req.Leases {
			k := grantKey{s.n.id, l.CrawlerID, l.Instance}
			// A grant's sequence rises; its total falls only once the spawn
			// has shown it stopped counting under the previous one, which
			// expired before the answer the new one is anchored on.
			prev, ok := grants[k]
			if ok && (l.Seq <= prev.Seq || l.Total < prev.Total && l.ExpiresAt-fixtureTTL.Milliseconds() < prev.ExpiresAt) {
				t.Fatalf("grant %+v after %+v: the sequence must rise, the total fall only after expiry", l, prev)
			}
			grants[k] = l
		}
		switch r := rng.IntN(10); {
		case lossy && r == 0:
			return // request lost
		case lossy && r == 1:
			s.late = append(s.late, req) // delivered after newer ones
			return
		}
		s.receive(req)
		resp := s.answer(f.spawnClock())
		if lossy && rng.IntN(10) == 0 {
			return // answer lost
		}
		f.answer(s.n, resp, len(req.Acks))
	}

	for step := range propertySteps {
		s := spawns[rng.IntN(len(spawns))]
		switch rng.IntN(6) {
		case 0, 1:
			poll(s, true)
		case 2:
			if len(s.late) > 0 {
				i := rng.IntN(len(s.late))
				s.receive(s.late[i])
				s.late = append(s.late[:i], s.late[i+1:]...)
			}
		case 3:
			clock := f.spawnClock()
			for _, r := range s.runs {
				if clock >= r.expires || r.reserved >= r.total {
					continue
				}
				k := rng.Int64N(r.total-r.reserved) + 1
				r.reserved += k
				stored[r.crawler] += k
				s.incSeq++
				s.unacked = append(s.unacked, api.Increment{Seq: s.incSeq, CrawlerID: r.crawler, UserID: r.user, Instance: r.instance, LeaseSeq: r.leaseSeq, Count: k})
			}
		case 4:
			if rng.IntN(4) == 0 && len(s.runs) > 0 {
				for id, r := range s.runs {
					s.nextInstance++
					s.runs[id] = &leaseRun{crawler: id, user: user, instance: s.nextInstance, rate: r.rate}
					break
				}
			}
		case 5:
			f.now = f.now.Add(time.Duration(rng.Int64N(int64(fixtureTTL) * 3 / 4)))
		}
		if err := f.exactErr(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		var userStored int64
		for _, id := range crawlers {
			userStored += stored[id]
			if stored[id] > limits[id] {
				t.Fatalf("step %d: crawler %d stored %d over its limit %d", step, id, stored[id], limits[id])
			}
		}
		if userLimit > 0 && userStored > userLimit {
			t.Fatalf("step %d: user stored %d over its limit %d", step, userStored, userLimit)
		}
	}

	// Nothing is lost any more: every increment reaches the hub.
	for range 20 {
		f.now = f.now.Add(fixtureTTL / 4)
		for _, s := range spawns {
			poll(s, false)
		}
	}
	var total int64
	reached := false
	for _, id := range crawlers {
		reached = reached || stored[id] == limits[id]
		row, err := f.st.GetCrawler(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if mem := f.crawlerOf(id).row.Usage; mem != stored[id] || row.Usage != stored[id] {
			t.Fatalf("crawler %d: usage %d in memory, %d in SQL, %d stored", id, mem, row.Usage, stored[id])
		}
		total += stored[id]
	}
	if total == 0 {
		t.Fatal("no comment was stored: the history tested nothing")
	}
	return reached || total == userLimit
}
