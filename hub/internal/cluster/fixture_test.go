package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// fixtureTTL is the lease lifetime of fixture hubs. The fixture's clock is
// moved by hand, so it costs no test time.
const fixtureTTL = time.Second

// fixture is a hub whose loops do not run, over a fresh SQLite database.
// Tests call the hub's rules directly, under its lock, on a clock they move
// themselves; no request leaves the process.
type fixture struct {
	t   *testing.T
	h   *Hub
	st  *sqlstore.Store
	now time.Time
	// spawnZero is when every simulated spawn's clock read zero.
	spawnZero time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlstore.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h, err := New(Config{Store: st, Logger: logger, PollInterval: fixtureTTL, LeaseTTL: fixtureTTL})
	if err != nil {
		t.Fatal(err)
	}
	// A crawler reaching its limit is marked in SQL in the background.
	t.Cleanup(h.run.wg.Wait)
	now := time.Now()
	// Long past the first lease lifetime, in which a new hub grants nothing.
	h.started = now.Add(-time.Hour)
	// No spawn of a previous run has usage to report.
	h.loadPriorLocked(nil)
	return &fixture{t: t, h: h, st: st, now: now, spawnZero: now.Add(-time.Minute)}
}

// spawnClock is a spawn's clock reading (ms) at the fixture's now.
func (f *fixture) spawnClock() int64 { return f.now.Sub(f.spawnZero).Milliseconds() }

// user adds a user with a comment limit (0: none) to SQL.
func (f *fixture) user(limit int64) int64 {
	f.t.Helper()
	u, err := f.st.CreateUser(context.Background(), fmt.Sprintf("user-%d", time.Now().UnixNano()), limit)
	if err != nil {
		f.t.Fatal(err)
	}
	return u.ID
}

// crawler adds an enabled RSS crawler to SQL. queryUUID "" picks a new one.
func (f *fixture) crawler(userID, limit int64, queryUUID string) int64 {
	f.t.Helper()
	if queryUUID == "" {
		queryUUID = uuid.NewString()
	}
	c, err := f.st.CreateCrawler(context.Background(), sqlstore.Crawler{
		UserID: userID, Source: api.SourceRSS, Query: []string{"https://feeds.example/" + queryUUID + ".xml"},
		QueryUUID: queryUUID, CommentLimit: limit, Enabled: true,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return c.ID
}

// sync reads users and crawlers from SQL into the hub, as a reload does.
func (f *fixture) sync() {
	f.t.Helper()
	ctx := context.Background()
	rows, err := f.st.ListCrawlers(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	users, err := f.st.ListUsers(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	f.h.syncLocked(rows, users)
}

// addNode makes a spawn live, offering every source, with its clock
// anchored at now.
func (f *fixture) addNode(id string) *node {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	n := &node{
		id: id, url: "http://" + id + ".invalid", sources: offeredSources(nil), registeredAt: f.now, lastPoll: f.now,
		want: map[int64]*crawler{}, sent: map[int64]*crawler{}, anchorClock: f.spawnClock(), anchorAt: f.now, pending: map[int64]int{}, leased: map[int64]bool{},
	}
	f.h.nodes[id] = n
	return n
}

// plan routes every crawler, as a reload does, and returns what it would
// send by node id.
func (f *fixture) plan(hard bool) (map[string]*plan, api.ReloadResponse) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	var resp api.ReloadResponse
	out := map[string]*plan{}
	for _, p := range f.h.planLocked(hard, &resp) {
		out[p.n.id] = p
	}
	return out, resp
}

// sendAll records every plan's upserts as accepted by its node.
func (f *fixture) sendAll(plans map[string]*plan) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	for _, p := range plans {
		resp := api.SubscribersResponse{}
		for _, s := range p.upserts {
			resp.Results = append(resp.Results, api.SubscriberResult{CrawlerID: s.CrawlerID})
		}
		f.h.sentLocked(p.n, p.upserts, resp, nil)
	}
}

// route routes and sends until every subscriber is placed.
func (f *fixture) route() {
	plans, _ := f.plan(false)
	f.sendAll(plans)
}

// answer takes in a node's poll answer as it arrives at now: usage through
// SQL, then the rest under the hub lock.
func (f *fixture) answer(n *node, resp api.PollResponse, sentAcks int) {
	f.t.Helper()
	a := f.h.applyAnswer(context.Background(), n, resp, sentAcks, f.now)
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	a.resets = n.baseResets // an answer to a poll built since the last reset
	f.h.answerLocked(n, a, f.now)
}

// running answers a poll of n in which each crawler runs as instance 1
// (or the given instance) having reserved the given count.
func (f *fixture) running(n *node, reserved map[int64]int64, rate float64) {
	f.t.Helper()
	resp := api.PollResponse{NodeID: n.id, Clock: f.spawnClock()}
	for id, r := range reserved {
		resp.Subscribers = append(resp.Subscribers, api.SubscriberStatus{
			CrawlerID: id, State: api.StateRunning, Instance: 1, Reserved: r, RatePerSec: rate,
		})
	}
	f.answer(n, resp, 0)
}

// grant sizes the node's leases at now, by crawler.
func (f *fixture) grant(n *node) map[int64]api.Lease {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	out := map[int64]api.Lease{}
	for _, l := range f.h.grantLocked(n, f.now) {
		out[l.CrawlerID] = l
	}
	return out
}

// crawlerOf is the hub's live view of a crawler.
func (f *fixture) crawlerOf(id int64) *crawler {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.crawlers[id]
}

// exactErr reports a crawler or user whose usage plus what its lease
// accounts may still add exceeds its limit: the rule leases keep.
func (f *fixture) exactErr() error {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	byUser := map[int64]int64{}
	for id, c := range f.h.crawlers {
		out := c.leases.outstanding(f.now)
		byUser[c.row.UserID] += out
		if c.row.CommentLimit > 0 && c.row.Usage+out > c.row.CommentLimit {
			return fmt.Errorf("crawler %d: usage %d + outstanding %d > limit %d", id, c.row.Usage, out, c.row.CommentLimit)
		}
	}
	for id, u := range f.h.users {
		if u.row.CommentLimit > 0 && u.row.Usage+byUser[id] > u.row.CommentLimit {
			return fmt.Errorf("user %d: usage %d + outstanding %d > limit %d", id, u.row.Usage, byUser[id], u.row.CommentLimit)
		}
	}
	return nil
}

// pollRequest builds the node's next poll at now, as a poll round does.
func (f *fixture) pollRequest(n *node) api.PollRequest {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.h.pollRequestLocked(n, f.now)
}
