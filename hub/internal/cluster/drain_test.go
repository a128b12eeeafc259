package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// polled lists the crawler ids of a node's next poll.
func (f *fixture) polled(n *node) []int64 {
	var ids []int64
	for _, r := range f.pollRequest(n).Subscribers {
		ids = append(ids, r.CrawlerID)
	}
	slices.Sort(ids)
	return ids
}

// runningAs answers a poll of n in which each crawler runs as the given
// instance, having reserved what it says.
func (f *fixture) runningAs(n *node, instance uint64, reserved map[int64]int64) {
	f.t.Helper()
	resp := api.PollResponse{NodeID: n.id, Clock: f.spawnClock()}
	for id, r := range reserved {
		resp.Subscribers = append(resp.Subscribers, api.SubscriberStatus{CrawlerID: id, State: api.StateRunning, Instance: instance, Reserved: r, Live: true})
	}
	f.answer(n, resp, 0)
}

// TestDrain_CrawlersLeaveMakeBeforeBreak: a draining node's crawlers are
// sent to another node at once, without a removal and without ever
// showing pending; the draining node keeps running each (it stays in its
// polls, with its whole status) until the new node reports it running;
// the drained node takes nothing new and shows as draining.
func TestDrain_CrawlersLeaveMakeBeforeBreak(t *testing.T) {
	f := newFixture(t)
	u := f.user(0)
	var ids []int64
	for range 6 {
		ids = append(ids, f.crawler(u, 0, ""))
	}
	f.sync()
	a, b := f.addNode("node-a"), f.addNode("node-b")
	f.route()
	onA := map[int64]int64{}
	for _, id := range ids {
		if f.crawlerOf(id).node == a {
			onA[id] = 0
		}
	}
	if len(onA) == 0 || len(onA) == len(ids) {
		t.Fatalf("%d of %d crawlers on node-a: want some on each node", len(onA), len(ids))
	}
	f.runningAs(a, 1, onA)
	before := f.polled(a)

	if v, err := f.h.DrainNode("node-a"); err != nil || v.State != api.NodeDraining {
		t.Fatalf("DrainNode = %+v, %v", v, err)
	}
	plans, resp := f.plan(true)
	if p := plans["node-a"]; p != nil && (len(p.removes) > 0 || len(p.upserts) > 0) {
		t.Fatalf("node-a is sent %d upserts and %d removals, want none", len(p.upserts), len(p.removes))
	}
	if p := plans["node-b"]; p == nil || len(p.upserts) != len(onA) || resp.Moved != len(onA) {
		t.Fatalf("node-b plan %+v, reload %+v: want the %d crawlers of node-a", p, resp, len(onA))
	}
	for id := range onA {
		if st := f.crawlerOf(id).state; st != api.StateRunning {
			t.Errorf("crawler %d is %s while it moves, want running", id, st)
		}
	}
	f.sendAll(plans)
	if got := f.polled(a); !slices.Equal(got, before) {
		t.Fatalf("node-a is polled for %v, want it to keep %v until node-b runs them", got, before)
	}
	if req := f.pollRequest(a); !req.Drain || req.StatusBase != 0 {
		t.Fatalf("node-a's poll drain=%v status_base=%d, want the drain said and every status asked", req.Drain, req.StatusBase)
	}

	// node-b runs them, but its data sources are not live yet (a stream
	// still subscribing): node-a keeps them all.
	notLive := api.PollResponse{NodeID: b.id, Clock: f.spawnClock()}
	for id := range onA {
		notLive.Subscribers = append(notLive.Subscribers, api.SubscriberStatus{CrawlerID: id, State: api.StateRunning, Instance: 1})
	}
	f.answer(b, notLive, 0)
	if got := f.polled(a); !slices.Equal(got, before) {
		t.Fatalf("node-a is polled for %v before node-b's sources are live, want %v", got, before)
	}

	// node-b runs all but one: only that one stays on node-a.
	var first int64
	for id := range onA {
		first = id
		break
	}
	runningB := map[int64]int64{}
	for id := range onA {
		if id != first {
			runningB[id] = 0
		}
	}
	f.runningAs(b, 1, runningB)
	if got := f.polled(a); !slices.Equal(got, []int64{first}) {
		t.Fatalf("node-a is polled for %v, want %d alone", got, first)
	}
	f.runningAs(b, 1, map[int64]int64{first: 0})
	if got := f.polled(a); len(got) != 0 {
		t.Fatalf("node-a is polled for %v, want nothing", got)
	}

	// A new crawler never goes to the draining node.
	late := f.crawler(u, 0, "")
	f.sync()
	f.route()
	if c := f.crawlerOf(late); c.node != b {
		t.Fatalf("a new crawler went to %q, want node-b", c.nodeID())
	}
}

// TestDrain_CrawlerWithNowhereToGoStays: when no other node can run a
// crawler, it stays on the draining node, running, and moves once a node
// joins.
func TestDrain_CrawlerWithNowhereToGoStays(t *testing.T) {
	f := newFixture(t)
	u := f.user(0)
	id := f.crawler(u, 0, "")
	f.sync()
	a := f.addNode("node-a")
	f.route()
	f.runningAs(a, 1, map[int64]int64{id: 0})
	if _, err := f.h.DrainNode("node-a"); err != nil {
		t.Fatal(err)
	}
	f.route()
	if c := f.crawlerOf(id); c.node != a || c.state != api.StateRunning {
		t.Fatalf("crawler on %v in state %s, want it running on the draining node", c.node, c.state)
	}
	if got := f.polled(a); !slices.Equal(got, []int64{id}) {
		t.Fatalf("node-a polled for %v", got)
	}
	b := f.addNode("node-b")
	f.route()
	if c := f.crawlerOf(id); c.node != b || c.leaving != a {
		t.Fatalf("crawler routed to %q leaving %v, want node-b leaving node-a", c.nodeID(), c.leaving != nil)
	}
	f.runningAs(b, 1, map[int64]int64{id: 0})
	if got := f.polled(a); len(got) != 0 {
		t.Fatalf("node-a still polled for %v", got)
	}
}

// TestDrain_NewCrawlerSaysItsSpawnsDrain: a crawler added while every
// spawn offering its source drains waits, and says that they drain rather
// than that no spawn offers the source.
func TestDrain_NewCrawlerSaysItsSpawnsDrain(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []string
		draining []string
		want     string
	}{
		{"the only spawn drains", []string{"node-a"}, []string{"node-a"},
			"no spawn node can take source rss: the one spawn offering it is draining"},
		{"every spawn drains", []string{"node-a", "node-b"}, []string{"node-a", "node-b"},
			"no spawn node can take source rss: all 2 spawns offering it are draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			for _, id := range tt.nodes {
				f.addNode(id)
			}
			for _, id := range tt.draining {
				if _, err := f.h.DrainNode(id); err != nil {
					t.Fatal(err)
				}
			}
			id := f.crawler(f.user(0), 0, "")
			f.sync()
			f.route()
			c := f.crawlerOf(id)
			if c.node != nil || c.state != api.StatePending || c.err != tt.want {
				t.Fatalf("crawler on %q in state %s with error %q, want pending with %q", c.nodeID(), c.state, c.err, tt.want)
			}
		})
	}
	// A spawn that does not offer the source is no reason given.
	f := newFixture(t)
	f.h.mu.Lock()
	f.h.nodes["node-x"] = &node{id: "node-x", sources: []string{api.SourceBluesky}, want: map[int64]*crawler{}, sent: map[int64]*crawler{},
		pending: map[int64]int{}, leased: map[int64]bool{}}
	f.h.mu.Unlock()
	if _, err := f.h.DrainNode("node-x"); err != nil {
		t.Fatal(err)
	}
	id := f.crawler(f.user(0), 0, "")
	f.sync()
	f.route()
	if c := f.crawlerOf(id); !strings.HasPrefix(c.err, "no spawn node offers source rss") {
		t.Fatalf("crawler error %q, want that no spawn node offers source rss", c.err)
	}
}

// TestDrain_LimitsHoldThroughTheOverlap: while a limited crawler runs on
// both nodes, what both may still count never exceeds its limit, and
// once the drained node left the hub forgets it with nothing to recover.
func TestDrain_LimitsHoldThroughTheOverlap(t *testing.T) {
	f := newFixture(t)
	u := f.user(0)
	id := f.crawler(u, 50, "")
	f.sync()
	a := f.addNode("node-a")
	f.route()
	f.runningAs(a, 1, map[int64]int64{id: 0})
	if l := f.grant(a)[id]; l.Total == 0 {
		t.Fatal("no lease granted on node-a")
	}
	f.runningAs(a, 1, map[int64]int64{id: 8})
	b := f.addNode("node-b")
	if _, err := f.h.DrainNode("node-a"); err != nil {
		t.Fatal(err)
	}
	f.route()
	for step := range 5 {
		f.now = f.now.Add(100 * time.Millisecond)
		f.runningAs(a, 1, map[int64]int64{id: int64(8 + step)})
		f.runningAs(b, 1, map[int64]int64{id: int64(step)})
		f.grant(b)
		if err := f.exactErr(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if got := f.polled(a); len(got) != 0 {
		t.Fatalf("node-a still polled for %v", got)
	}
	// node-a no longer runs it, and has nothing pending: it leaves.
	f.answer(a, api.PollResponse{NodeID: a.id, Clock: f.spawnClock()}, 0)
	if err := f.h.NodeDrained("node-a"); err != nil {
		t.Fatal(err)
	}
	f.h.mu.Lock()
	_, known := f.h.nodes["node-a"]
	recoveries := len(f.h.lost.recoveries)
	f.h.mu.Unlock()
	if known || recoveries != 0 {
		t.Fatalf("after leaving: known %v, %d recoveries; want forgotten with none", known, recoveries)
	}
	f.now = f.now.Add(time.Hour) // every lease long expired
	if err := f.exactErr(); err != nil {
		t.Fatal(err)
	}
}
