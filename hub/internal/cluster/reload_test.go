package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// reloadFixture is a hub with two nodes and five crawlers of one user, two
// of them on the same query, all routed and sent.
type reloadFixture struct {
	*fixture
	user     int64
	crawlers []int64
}

func newReloadFixture(t *testing.T) *reloadFixture {
	t.Helper()
	f := newFixture(t)
	u := f.user(0)
	shared := uuid.NewString()
	ids := []int64{f.crawler(u, 0, ""), f.crawler(u, 0, ""), f.crawler(u, 0, ""), f.crawler(u, 0, shared), f.crawler(u, 0, shared)}
	f.sync()
	f.addNode("node-a")
	f.addNode("node-b")
	f.route()
	return &reloadFixture{fixture: f, user: u, crawlers: ids}
}

// placement is where each crawler is routed and which version it was sent.
func (f *reloadFixture) placement() map[int64]string {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	out := map[int64]string{}
	for _, id := range f.crawlers {
		if c, ok := f.h.crawlers[id]; ok {
			out[id] = c.nodeID()
		}
	}
	return out
}

func (f *reloadFixture) update(id int64, fn func(*sqlstore.Crawler)) {
	f.t.Helper()
	if _, err := f.st.UpdateCrawler(context.Background(), id, func(c *sqlstore.Crawler) error { fn(c); return nil }); err != nil {
		f.t.Fatal(err)
	}
}

func TestReload_Plan(t *testing.T) {
	cases := []struct {
		name string
		// change alters SQL or the node set and returns the crawlers whose
		// spec changed (sent again where they stay).
		change func(f *reloadFixture) []int64
		// want checks what is particular to the case.
		want func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse)
	}{
		{
			name:   "nothing changed: nothing sent",
			change: func(f *reloadFixture) []int64 { return nil },
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				if resp != (api.ReloadResponse{}) {
					t.Errorf("reload %+v, want nothing", resp)
				}
			},
		},
		{
			name: "a node joins: only moved subscribers travel",
			change: func(f *reloadFixture) []int64 {
				f.addNode("node-c")
				return nil
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				moved := 0
				for id := range before {
					if before[id] != after[id] {
						moved++
					}
				}
				if resp.Moved != moved || resp.Assigned != moved {
					t.Errorf("reload %+v, want %d moved and sent", resp, moved)
				}
				if after[f.crawlers[3]] != after[f.crawlers[4]] {
					t.Errorf("crawlers on one query split over %s and %s", after[f.crawlers[3]], after[f.crawlers[4]])
				}
			},
		},
		{
			name: "a node is lost: its subscribers go to the other",
			change: func(f *reloadFixture) []int64 {
				f.h.mu.Lock()
				defer f.h.mu.Unlock()
				f.h.removeNodeLocked(f.h.nodes["node-b"], "test")
				return nil
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				for id, n := range after {
					if n != "node-a" {
						t.Errorf("crawler %d on %q, want node-a", id, n)
					}
				}
			},
		},
		{
			name: "a changed subscriber with the same query is updated in place",
			change: func(f *reloadFixture) []int64 {
				f.update(f.crawlers[0], func(c *sqlstore.Crawler) { c.Keywords = []string{"golang"} })
				return []int64{f.crawlers[0]}
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				if resp.Assigned != 1 || resp.Moved != 0 || resp.Removed != 0 {
					t.Errorf("reload %+v, want 1 sent in place", resp)
				}
			},
		},
		{
			name: "a disabled crawler is removed",
			change: func(f *reloadFixture) []int64 {
				f.update(f.crawlers[1], func(c *sqlstore.Crawler) { c.Enabled = false })
				return nil
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				if resp.Removed != 1 || f.crawlerOf(f.crawlers[1]).state != api.StateDisabled {
					t.Errorf("reload %+v, state %s: want 1 removed, disabled", resp, f.crawlerOf(f.crawlers[1]).state)
				}
			},
		},
		{
			name: "a crawler at its limit is removed",
			change: func(f *reloadFixture) []int64 {
				if err := f.st.SetLimitReached(context.Background(), f.crawlers[2], true); err != nil {
					f.t.Fatal(err)
				}
				return nil
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				if resp.Removed != 1 || f.crawlerOf(f.crawlers[2]).state != api.StateLimitReached {
					t.Errorf("reload %+v: want 1 removed, limit reached", resp)
				}
			},
		},
		{
			name: "a user at its limit has every crawler removed",
			change: func(f *reloadFixture) []int64 {
				ctx := context.Background()
				if _, err := f.st.SetUserLimit(ctx, f.user, 1); err != nil {
					f.t.Fatal(err)
				}
				if _, err := f.st.ApplyIncrements(ctx, []api.Increment{{NodeID: "node-a", Seq: 1, CrawlerID: f.crawlers[0], UserID: f.user, Count: 1}}); err != nil {
					f.t.Fatal(err)
				}
				return nil
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				if resp.Removed != len(f.crawlers) {
					t.Errorf("reload %+v, want all %d removed", resp, len(f.crawlers))
				}
			},
		},
		{
			name: "a deleted crawler leaves its node's exact set",
			change: func(f *reloadFixture) []int64 {
				if err := f.st.DeleteCrawler(context.Background(), f.crawlers[3]); err != nil {
					f.t.Fatal(err)
				}
				return nil
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				f.h.mu.Lock()
				defer f.h.mu.Unlock()
				for _, n := range f.h.nodes {
					req := f.h.pollRequestLocked(n, f.now)
					if slices.ContainsFunc(req.Subscribers, func(r api.SubscriberRef) bool { return r.CrawlerID == f.crawlers[3] }) {
						t.Errorf("the poll of %s still names deleted crawler %d", n.id, f.crawlers[3])
					}
					if len(req.Subscribers) != len(n.want) {
						t.Errorf("the poll of %s names %d subscribers, want %d", n.id, len(req.Subscribers), len(n.want))
					}
				}
			},
		},
		{
			name: "a failed send is sent again to the same node",
			change: func(f *reloadFixture) []int64 {
				f.h.mu.Lock()
				defer f.h.mu.Unlock()
				c := f.h.crawlers[f.crawlers[4]]
				f.h.sentLocked(f.h.nodes[c.nodeID()], []api.SubscriberSpec{f.h.specLocked(c)}, api.SubscribersResponse{}, context.DeadlineExceeded)
				return []int64{f.crawlers[4]}
			},
			want: func(t *testing.T, f *reloadFixture, before, after map[int64]string, resp api.ReloadResponse) {
				if resp.Assigned != 1 || resp.Moved != 0 {
					t.Errorf("reload %+v, want the failed one sent again", resp)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newReloadFixture(t)
			before := f.placement()
			changed := tc.change(f)
			f.sync()
			plans, resp := f.plan(false)
			after := f.placement()

			// The rules every reload keeps: a subscriber travels only to a
			// node it is new on or changed on, is removed only from a live
			// node it left, and is otherwise left alone.
			f.h.mu.Lock()
			for _, id := range f.crawlers {
				was, is := before[id], after[id]
				_, lives := f.h.nodes[was]
				_, exists := f.h.crawlers[id] // a deleted one leaves with the node's next exact set
				wantUpsert := is != "" && (is != was || slices.Contains(changed, id))
				wantRemove := exists && was != "" && was != is && lives
				for nodeID, p := range plans {
					up := slices.ContainsFunc(p.upserts, func(s api.SubscriberSpec) bool { return s.CrawlerID == id })
					rm := slices.Contains(p.removes, id)
					if up != (wantUpsert && nodeID == is) {
						t.Errorf("crawler %d (%q→%q): upsert on %s %v, want %v", id, was, is, nodeID, up, wantUpsert && nodeID == is)
					}
					if rm != (wantRemove && nodeID == was) {
						t.Errorf("crawler %d (%q→%q): removal from %s %v, want %v", id, was, is, nodeID, rm, wantRemove && nodeID == was)
					}
				}
				if wantUpsert && plans[is] == nil {
					t.Errorf("crawler %d (%q→%q): no plan for %s", id, was, is, is)
				}
				if wantRemove && plans[was] == nil {
					t.Errorf("crawler %d (%q→%q): not removed from %s", id, was, is, was)
				}
			}
			for _, p := range plans {
				if _, lives := f.h.nodes[p.n.id]; !lives {
					t.Errorf("a plan for lost node %s", p.n.id)
				}
			}
			f.h.mu.Unlock()
			tc.want(t, f, before, after, resp)

			// Once sent, the next reload has nothing to do.
			f.sendAll(plans)
			if again, resp := f.plan(false); len(again) != 0 {
				t.Errorf("a second reload sends again: %+v", resp)
			}
		})
	}
}
