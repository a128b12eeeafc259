package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// sentSince adds up the subscribers the hub's reloads delivered after t
// (sent, less the sends that failed and went again) and those they moved,
// from the "N sent, M moved, R removed, F failed" of its reload events.
func (c *cluster) sentSince(t time.Time) (sent, moved int) {
	c.t.Helper()
	status, body := c.adminDo(http.MethodGet, "/v1/events", clustertest.AdminToken, "")
	if status != http.StatusOK {
		c.t.Fatalf("GET /v1/events: %d %s", status, body)
	}
	var events []api.Event
	if err := json.Unmarshal([]byte(body), &events); err != nil {
		c.t.Fatal(err)
	}
	for _, e := range events {
		if !e.Time.After(t) || !strings.HasPrefix(e.Kind, "reload_") {
			continue
		}
		var s, m, r, f int
		var kind string
		if _, err := fmt.Sscanf(e.Message, "%s reload: %d sent, %d moved, %d removed, %d failed", &kind, &s, &m, &r, &f); err != nil {
			c.t.Fatalf("unexpected reload event %q: %v", e.Message, err)
		}
		// A send that failed (a node too slow to take it in time) is sent
		// again by the next reload: it reached no node the first time.
		sent, moved = sent+s-f, moved+m
	}
	return sent, moved
}

// TestReload_HardTouchesOnlyMovedSubscribers adds a node to a running
// cluster in both routing modes: the hard reload it causes sends exactly
// the subscribers that move, and a hard reload with nothing to move sends
// nothing.
func TestReload_HardTouchesOnlyMovedSubscribers(t *testing.T) {
	for _, routing := range []string{"modulo", "rendezvous"} {
		t.Run(routing, func(t *testing.T) {
			c := newCluster(t, clusterOpts{spawns: 3, routing: routing})
			ids := c.crawlers("r", 30)
			// placement waits for a snapshot in which every crawler runs on
			// exactly one node.
			placement := func(what string) map[int64][]string {
				var on map[int64][]string
				testkit.WaitFor(t, clustertest.WaitTimeout, what, func() bool {
					on = c.runningOn()
					return onOne(on, ids)
				})
				return on
			}
			before := placement("every crawler on one of three nodes")
			joined := time.Now()
			added := c.addSpawn()
			c.WaitNodes(4)
			// The join's hard reload is done once the new node runs its
			// share (30 crawlers leave it none with odds below 1 in 4,000).
			testkit.WaitFor(t, clustertest.WaitTimeout, "the new node running subscribers", func() bool {
				h, ok := spawnHealth(t, added)
				return ok && len(h.Subscribers) > 0
			})
			after := placement("every crawler on one of four nodes")
			moved := 0
			for _, id := range ids {
				if before[id][0] != after[id][0] {
					moved++
				}
			}
			sent, reported := c.sentSince(joined)
			t.Logf("%s: node joined, %d of %d subscribers moved, the hub sent %d (reported %d moved)", routing, moved, len(ids), sent, reported)
			if sent != moved || reported != moved {
				t.Errorf("hub sent %d and reported %d moved, but %d subscribers changed node", sent, reported, moved)
			}
			resp, err := c.Client.Reload(c.Ctx, "hard")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Assigned != 0 || resp.Moved != 0 {
				t.Errorf("a hard reload with nothing to move sent %+v", resp)
			}
		})
	}
}
