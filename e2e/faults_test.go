package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/faultproxy"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// schedulingSlack absorbs timer and scheduling delays of a loaded test
// machine (two cores, the race detector) on top of a promised bound.
const schedulingSlack = 400 * time.Millisecond

// crawlers creates n unlimited RSS crawlers on distinct feeds and waits until
// each runs on exactly one node.
func (c *cluster) crawlers(prefix string, n int) []int64 {
	c.t.Helper()
	u := c.user(0)
	var ids []int64
	for i := range n {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("%s%d", prefix, i))}, nil, 0).ID)
	}
	testkit.WaitFor(c.t, clustertest.WaitTimeout, "every crawler running on one node", func() bool { return c.eachOnOne(ids, c.Spawns...) })
	return ids
}

// eachOnOne reports whether every crawler runs on exactly one of spawns.
func (c *cluster) eachOnOne(ids []int64, spawns ...*spawnapp.Spawn) bool {
	return onOne(c.runningOn(spawns...), ids)
}

// onOne reports whether a placement has every crawler on exactly one node.
func onOne(on map[int64][]string, ids []int64) bool {
	for _, id := range ids {
		if len(on[id]) != 1 {
			return false
		}
	}
	return true
}

// busiest returns the index of the spawn running the most subscribers.
func (c *cluster) busiest() int {
	count := map[string]int{}
	for _, nodes := range c.runningOn() {
		for _, n := range nodes {
			count[n]++
		}
	}
	best := 0
	for i, s := range c.Spawns {
		if count[s.ID()] > count[c.Spawns[best].ID()] {
			best = i
		}
	}
	return best
}

func TestFaults_PartitionedSpawnDetachesAndComesBack(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3, proxied: true})
	ids := c.crawlers("part", 24)
	i := c.busiest()
	victim := c.Spawns[i]
	survivors := slices.Delete(slices.Clone(c.Spawns), i, i+1)
	before, _ := spawnHealth(t, victim)
	t.Logf("cutting spawn%d off the hub; it runs %d subscribers", i+1, len(before.Subscribers))

	c.links[i].cut()
	cut := time.Now()
	// The spawn's own view, read directly rather than through the cut link.
	stopped := testkit.WaitFor(t, clustertest.WaitTimeout, "the cut-off spawn stops every subscriber", func() bool {
		h, ok := spawnHealth(t, victim)
		return ok && len(h.Subscribers) == 0 && len(h.DataSources) == 0
	})
	detached := testkit.WaitFor(t, clustertest.WaitTimeout, "the cut-off spawn detaches", func() bool {
		h, ok := spawnHealth(t, victim)
		return ok && h.State != api.NodeAttached
	}) + stopped
	testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler running on a survivor", func() bool { return c.eachOnOne(ids, survivors...) })
	t.Logf("partition: subscribers stopped %s after the cut (orphan_after %s), detached after %s (detach_after %s), all crawlers on survivors after %s",
		stopped.Round(time.Millisecond), clustertest.Fast.OrphanAfter, detached.Round(time.Millisecond), clustertest.Fast.DetachAfter, time.Since(cut).Round(time.Millisecond))
	if stopped > clustertest.Fast.OrphanAfter+schedulingSlack {
		t.Errorf("a subscriber ran unsupervised for %s, longer than orphan_after %s", stopped, clustertest.Fast.OrphanAfter)
	}
	if detached > clustertest.Fast.DetachAfter+schedulingSlack {
		t.Errorf("the spawn detached after %s, later than detach_after %s", detached, clustertest.Fast.DetachAfter)
	}

	c.links[i].heal()
	healed := time.Now()
	testkit.WaitFor(t, clustertest.WaitTimeout, "the healed spawn back in service with subscribers", func() bool {
		h, ok := spawnHealth(t, victim)
		return ok && h.State == api.NodeAttached && len(h.Subscribers) > 0 && c.eachOnOne(ids)
	})
	t.Logf("healed: spawn re-registered and running subscribers again after %s", time.Since(healed).Round(time.Millisecond))
	c.WaitNodes(3)
	// The hub tells operators the spawn detached, and why.
	events, err := c.Client.Events(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events, func(ev api.Event) bool {
		return ev.Kind == "node_detached" && strings.Contains(ev.Message, "hub silent for")
	}) {
		t.Fatalf("no node_detached event saying why among %+v", events)
	}
}

func TestFaults_FailedSendIsResentToTheSameNode(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2, proxied: true})
	for _, l := range c.links {
		l.down.FailNext(http.MethodPut, api.PathSubscribers, 1)
	}
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("resend")}, nil, 0)
	start := time.Now()
	var node string
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running after its first send failed", func() bool {
		on := c.runningOn()[cr.ID]
		if len(on) != 1 {
			return false
		}
		node = on[0]
		return true
	})
	t.Logf("crawler running %s after a failed send", time.Since(start).Round(time.Millisecond))
	for i, s := range c.Spawns {
		puts := c.links[i].down.Seen(http.MethodPut, api.PathSubscribers)
		if s.ID() == node && puts < 2 {
			t.Errorf("the crawler's node saw %d sends, want the failed one and its re-send", puts)
		}
	}
	if got := c.crawler(cr.ID).Node; got != node {
		t.Errorf("hub says the crawler is on %q, it runs on %q", got, node)
	}
	nodes, err := c.Client.ListNodes(c.Ctx)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("a failed send cost a node: %v %v", nodes, err)
	}
}

// placement watches where crawlers run, as their spawns report it, and keeps
// the longest time any crawler ran on two nodes at once or on none.
type placement struct {
	mu            sync.Mutex
	twiceSince    map[int64]time.Time
	noneSince     map[int64]time.Time
	maxTwice      time.Duration
	maxNone       time.Duration
	samples       int
	worstTwice    int64
	worstNoneID   int64
	watchedAlways []int64 // crawlers that must always run somewhere
}

func (p *placement) observe(now time.Time, on map[int64][]string, all []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples++
	for _, id := range all {
		n := len(on[id])
		track := func(since map[int64]time.Time, bad bool, worst *time.Duration, worstID *int64) {
			if !bad {
				delete(since, id)
				return
			}
			t0, ok := since[id]
			if !ok {
				since[id] = now
				return
			}
			if d := now.Sub(t0); d > *worst {
				*worst, *worstID = d, id
			}
		}
		track(p.twiceSince, n > 1, &p.maxTwice, &p.worstTwice)
		if slices.Contains(p.watchedAlways, id) {
			track(p.noneSince, n == 0, &p.maxNone, &p.worstNoneID)
		}
	}
}

// watch samples placements until ctx ends.
func (c *cluster) watch(ctx context.Context, p *placement, all []int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			p.observe(time.Now(), c.runningOn(), all)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return &wg
}

// TestFaults_LostDuplicatedReorderedMessages runs crawlers, limited and
// not, while every hub↔spawn message may be dropped, duplicated, delayed or
// replayed late, and one spawn is cut off for a while in the middle. No
// crawler may run on two nodes for longer than
// orphan_after or be left on none for longer than a reload cycle, and once
// the network is well again every limited crawler stops at exactly its limit
// with stored comments equal to SQL usage.
func TestFaults_LostDuplicatedReorderedMessages(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3, proxied: true})
	unlimited := c.crawlers("free", 9)
	u := c.user(0)
	limits := []int64{30, 45, 60}
	var limited []int64
	for i, l := range limits {
		limited = append(limited, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("lim%d", i))}, nil, l).ID)
	}
	all := append(slices.Clone(unlimited), limited...)

	faults := faultproxy.Faults{Drop: 0.05, Duplicate: 0.1, Replay: 0.1, ReplayAfter: 3 * clustertest.Fast.Poll, Delay: clustertest.Fast.Poll / 2}
	for _, l := range c.links {
		l.setFaults(faults)
	}
	p := &placement{twiceSince: map[int64]time.Time{}, noneSince: map[int64]time.Time{}, watchedAlways: unlimited}
	ctx, stop := context.WithCancel(c.Ctx)
	watching := c.watch(ctx, p, all)

	// Publish to every feed while the faults last: the limited crawlers
	// get more items than their limits allow.
	// Halfway through, one spawn is also cut off for a while, so crawlers
	// move away and back while messages are being lost and repeated.
	const chaos = 4 * time.Second
	base := time.Now().Add(-time.Hour)
	start := time.Now()
	deadline := start.Add(chaos)
	cutAt, healAt := start.Add(chaos/4), start.Add(chaos/2)
	cutDone, healDone := false, false
	for round := 0; time.Now().Before(deadline); round++ {
		if now := time.Now(); !cutDone && now.After(cutAt) {
			c.links[1].cut()
			cutDone = true
		} else if !healDone && now.After(healAt) {
			c.links[1].heal()
			healDone = true
		}
		for i := range limits {
			c.Feeds.Publish(fmt.Sprintf("lim%d", i), feedItem(fmt.Sprintf("l%d-%d", i, round), base.Add(time.Duration(round)*time.Second)))
		}
		for i := range unlimited {
			c.Feeds.Publish(fmt.Sprintf("free%d", i), feedItem(fmt.Sprintf("f%d-%d", i, round), base.Add(time.Duration(round)*time.Second)))
		}
		time.Sleep(40 * time.Millisecond)
	}
	for _, l := range c.links {
		l.setFaults(faultproxy.Faults{})
	}
	stop()
	watching.Wait()
	// The limited crawlers keep getting new items until they reach their
	// limits: what a waiting subscriber's bounded backlog let go is gone.
	more, stopMore := context.WithCancel(c.Ctx)
	defer stopMore()
	go func() {
		for round := 100000; more.Err() == nil; round++ {
			for i := range limits {
				c.Feeds.Publish(fmt.Sprintf("lim%d", i), feedItem(fmt.Sprintf("l%d-%d", i, round), base.Add(time.Duration(round)*time.Second)))
			}
			time.Sleep(40 * time.Millisecond)
		}
	}()
	var stats faultproxy.Stats
	for _, l := range c.links {
		s := l.down.Stats()
		stats.Forwarded += s.Forwarded
		stats.Dropped += s.Dropped
		stats.Duplicated += s.Duplicated
		stats.Replayed += s.Replayed
	}
	t.Logf("faults over %s: %d hub→spawn messages, %d answers dropped, %d duplicated, %d replayed late; %d placement samples",
		chaos, stats.Forwarded, stats.Dropped, stats.Duplicated, stats.Replayed, p.samples)
	t.Logf("longest on two nodes: %s (crawler %d); longest on none: %s (crawler %d)",
		p.maxTwice.Round(time.Millisecond), p.worstTwice, p.maxNone.Round(time.Millisecond), p.worstNoneID)
	if stats.Dropped+stats.Duplicated+stats.Replayed < 10 {
		t.Fatalf("too few faults happened to prove anything: %+v", stats)
	}
	c.WaitNodes(3)
	if p.maxTwice > clustertest.Fast.OrphanAfter+schedulingSlack {
		t.Errorf("crawler %d ran on two nodes for %s, longer than orphan_after %s", p.worstTwice, p.maxTwice, clustertest.Fast.OrphanAfter)
	}
	// A reload cycle: the hub notices the node's failed polls, reloads, and
	// the spawn drops what it no longer runs. The cut spawn stops its
	// subscribers at orphan_after, while the hub moves them after its
	// failed polls; the survivors start them within a reload.
	reloadCycle := time.Duration(defaultNodeFailures+1)*clustertest.Fast.Poll + clustertest.Fast.OrphanAfter
	if p.maxNone > reloadCycle+schedulingSlack {
		t.Errorf("crawler %d was on no node for %s, longer than a reload cycle (%s)", p.worstNoneID, p.maxNone, reloadCycle)
	}

	// Settled: every limited crawler reaches exactly its limit, and stored
	// equals usage for every crawler.
	for i, id := range limited {
		var cr api.Crawler
		deadline := time.Now().Add(clustertest.WaitTimeout)
		for {
			cr = c.crawler(id)
			if cr.State == api.StateLimitReached && cr.Usage == limits[i] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("crawler %d: state %s, usage %d, stored %d, want limit_reached at %d", id, cr.State, cr.Usage, len(c.storedComments(id)), limits[i])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	c.checkStoredEqualsUsage(all)
}

// checkStoredEqualsUsage waits until every crawler's comments are stored and
// counted, then checks the store and SQL agree exactly.
func (c *cluster) checkStoredEqualsUsage(ids []int64) {
	c.t.Helper()
	for _, id := range ids {
		var stored int
		var usage int64
		settled := func() bool {
			stored = len(c.storedComments(id))
			usage = c.crawler(id).Usage
			return int64(stored) == usage
		}
		deadline := time.Now().Add(clustertest.WaitTimeout)
		for !settled() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if int64(stored) != usage {
			c.t.Errorf("crawler %d: %d comments stored, usage in SQL %d", id, stored, usage)
		}
		if cr := c.crawler(id); cr.CommentLimit > 0 && usage > cr.CommentLimit {
			c.t.Errorf("crawler %d: usage %d over its limit %d", id, usage, cr.CommentLimit)
		}
	}
}

// defaultNodeFailures is the hub's default count of failed polls before it
// declares a node lost; the test cluster keeps the default.
const defaultNodeFailures = 3
