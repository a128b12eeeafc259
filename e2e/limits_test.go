package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// TestLimits_NeverExceededAndUsageEqualsStored spreads a user's crawlers
// over three spawns with more items than the limits allow, and checks that
// the comments stored never exceed any limit and equal the usage in SQL.
func TestLimits_NeverExceededAndUsageEqualsStored(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3})
	const userLimit = 60
	u := c.user(userLimit)
	limits := []int64{25, 0, 0, 15}
	var crawlers []api.Crawler
	for i, l := range limits {
		crawlers = append(crawlers, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("lim%d", i))}, nil, l))
	}
	base := time.Now().Add(-time.Hour)
	for round := range 40 {
		for i := range limits {
			c.Feeds.Publish(fmt.Sprintf("lim%d", i), feedItem(fmt.Sprintf("l%d-%d", i, round), base.Add(time.Duration(round)*time.Second)))
		}
	}
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "the user's limit used up", func() bool {
		us, err := c.Client.GetUser(c.Ctx, u.ID)
		return err == nil && us.Usage == userLimit
	})
	t.Logf("user reached its limit of %d after %s", userLimit, took)
	testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler stopped", func() bool {
		for _, cr := range crawlers {
			if st := c.crawler(cr.ID).State; st != api.StateLimitReached {
				return false
			}
		}
		return len(c.runningOn()) == 0
	})
	var total int
	for i, cr := range crawlers {
		stored := len(c.storedComments(cr.ID))
		usage := c.crawler(cr.ID).Usage
		t.Logf("crawler %d (limit %d): stored %d, usage %d", cr.ID, limits[i], stored, usage)
		if int64(stored) != usage {
			t.Errorf("crawler %d: stored %d comments, usage says %d", cr.ID, stored, usage)
		}
		if limits[i] > 0 && int64(stored) > limits[i] {
			t.Errorf("crawler %d: stored %d, over its limit of %d", cr.ID, stored, limits[i])
		}
		total += stored
	}
	if total != userLimit {
		t.Errorf("user stored %d comments, limit %d", total, userLimit)
	}

	// Raising the user's limit resumes the crawlers that have room.
	more := int64(userLimit + 10)
	if _, err := c.Client.UpdateUser(c.Ctx, u.ID, api.UserUpdate{CommentLimit: &more}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage reaches the raised limit", func() bool {
		us, err := c.Client.GetUser(c.Ctx, u.ID)
		return err == nil && us.Usage == more
	})
	testkit.WaitFor(t, clustertest.WaitTimeout, "stored equals raised limit", func() bool {
		n := 0
		for _, cr := range crawlers {
			n += len(c.storedComments(cr.ID))
		}
		return n == int(more)
	})
}

// TestLimits_ExactAcrossHubRestart restarts the hub while limited crawlers
// of one user are storing comments on several spawns: every crawler still
// stops at exactly its limit, the user at exactly theirs, and what is stored
// equals SQL usage.
func TestLimits_ExactAcrossHubRestart(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3})
	const userLimit = 150
	u := c.user(userLimit)
	limits := []int64{40, 60, 0, 0}
	var ids []int64
	for i, l := range limits {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("hr%d", i))}, nil, l).ID)
	}
	ctx, stop := context.WithCancel(c.Ctx)
	defer stop()
	go func() { // every feed keeps publishing
		base := time.Now().Add(-time.Hour)
		for round := 0; ctx.Err() == nil; round++ {
			for i := range limits {
				c.Feeds.Publish(fmt.Sprintf("hr%d", i), feedItem(fmt.Sprintf("hr%d-%d", i, round), base.Add(time.Duration(round)*time.Second)))
			}
			time.Sleep(15 * time.Millisecond)
		}
	}()
	testkit.WaitFor(t, clustertest.WaitTimeout, "the user a third of the way to the limit", func() bool {
		us, err := c.Client.GetUser(c.Ctx, u.ID)
		return err == nil && us.Usage >= userLimit/3
	})
	if err := c.Hub.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	c.StartHub()
	c.waitLimited(u.ID, ids, "the user's limit used up", func() bool {
		us, err := c.Client.GetUser(c.Ctx, u.ID)
		return err == nil && us.Usage == userLimit
	})
	t.Logf("user at its limit of %d %s after the hub restarted", userLimit, time.Since(restarted).Round(time.Millisecond))
	c.waitLimited(u.ID, ids, "nothing running", func() bool { return len(c.runningOn()) == 0 })
	c.checkStoredEqualsUsage(ids)
	var total int64
	for i, id := range ids {
		cr := c.crawler(id)
		total += cr.Usage
		if limits[i] > 0 && cr.Usage > limits[i] {
			t.Errorf("crawler %d: usage %d over its limit %d", id, cr.Usage, limits[i])
		}
	}
	if total != userLimit {
		t.Errorf("the user's crawlers used %d, limit %d", total, userLimit)
	}
}

// TestLimits_ExactWhenASpawnIsCutOffAcrossHubRestart restarts the hub while
// the spawn running most of a user's crawlers is cut off from it. What that
// spawn stored under the previous run's leases reaches the new hub late:
// read back from the store once the spawn can no longer write, or reported
// by the spawn itself when the link heals. Until then the new hub cannot
// know how much of the user's limit is left, so it grants nothing; the
// user still stops at exactly the limit.
func TestLimits_ExactWhenASpawnIsCutOffAcrossHubRestart(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 3, proxied: true})
	const userLimit = 120
	u := c.user(userLimit)
	var ids []int64
	for i := range 4 {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("cut%d", i))}, nil, 0).ID)
	}
	ctx, stop := context.WithCancel(c.Ctx)
	defer stop()
	go func() { // every feed keeps publishing
		base := time.Now().Add(-time.Hour)
		for round := 0; ctx.Err() == nil; round++ {
			for i := range ids {
				c.Feeds.Publish(fmt.Sprintf("cut%d", i), feedItem(fmt.Sprintf("cut%d-%d", i, round), base.Add(time.Duration(round)*time.Second)))
			}
			time.Sleep(15 * time.Millisecond)
		}
	}()
	c.waitLimited(u.ID, ids, "the user a third of the way to the limit, every crawler running", func() bool {
		us, err := c.Client.GetUser(c.Ctx, u.ID)
		return err == nil && us.Usage >= userLimit/3 && c.eachOnOne(ids)
	})
	x := c.busiest()
	// Cut off while it stores under its leases: what it counts from here
	// on, the hub that granted them never hears of.
	c.links[x].cut()
	if err := c.Hub.Stop(); err != nil {
		t.Fatal(err)
	}
	c.StartHub()
	restarted := time.Now()
	c.waitLimited(u.ID, ids, "the user's limit used up", func() bool {
		us, err := c.Client.GetUser(c.Ctx, u.ID)
		return err == nil && us.Usage >= userLimit
	})
	t.Logf("user at its limit %s after the hub restarted, spawn%d still cut off", time.Since(restarted).Round(time.Millisecond), x+1)
	c.links[x].heal()
	c.WaitNodes(3)
	c.waitLimited(u.ID, ids, "nothing running", func() bool { return len(c.runningOn()) == 0 })
	c.checkStoredEqualsUsage(ids)
	var total int64
	for _, id := range ids {
		total += c.crawler(id).Usage
	}
	us, err := c.Client.GetUser(c.Ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if total != userLimit || us.Usage != userLimit {
		c.logLimits(u.ID, ids)
		t.Errorf("the user's crawlers used %d, the user's usage is %d, limit %d", total, us.Usage, userLimit)
	}
}

// waitLimited waits for cond like testkit.WaitFor and, when it times out,
// logs every crawler's state, node and usage and the user's usage before
// failing: a limit test that stalls says which side of the limit it is on.
func (c *cluster) waitLimited(userID int64, ids []int64, what string, cond func() bool) time.Duration {
	c.t.Helper()
	start := time.Now()
	deadline := start.Add(clustertest.WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.logLimits(userID, ids)
			c.t.Fatalf("timed out after %s waiting for %s", clustertest.WaitTimeout, what)
		}
		time.Sleep(limitWaitEvery)
	}
	return time.Since(start)
}

// limitWaitEvery is how often waitLimited checks its condition.
const limitWaitEvery = 10 * time.Millisecond

// logLimits logs the user's usage and limit and each crawler's state, node,
// usage, limit and comments stored.
func (c *cluster) logLimits(userID int64, ids []int64) {
	c.t.Helper()
	if us, err := c.Client.GetUser(c.Ctx, userID); err != nil {
		c.t.Logf("user %d: %v", userID, err)
	} else {
		c.t.Logf("user %d: usage %d, limit %d", userID, us.Usage, us.CommentLimit)
	}
	for _, id := range ids {
		cr, err := c.Client.GetCrawler(c.Ctx, id)
		if err != nil {
			c.t.Logf("crawler %d: %v", id, err)
			continue
		}
		c.t.Logf("crawler %d: state %s %s, node %q, usage %d, limit %d, stored %d",
			id, cr.State, cr.Error, cr.Node, cr.Usage, cr.CommentLimit, len(c.storedComments(id)))
	}
}
