package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// read does the SQL part of a reload at the fixture's now and reports what
// kind of read it was and how many rows it brought.
func (f *fixture) read() (string, int) {
	f.t.Helper()
	f.h.reload.mu.Lock()
	defer f.h.reload.mu.Unlock()
	r, err := f.h.readSQL(context.Background(), f.now)
	if err != nil {
		f.t.Fatal(err)
	}
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	f.h.takeInLocked(r, f.now)
	return r.kind(), len(r.crawlers) + len(r.users) + len(r.deleted)
}

// wantRead checks the kind and size of the next read.
func (f *fixture) wantRead(kind string, rows int) {
	f.t.Helper()
	if k, n := f.read(); k != kind || n != rows {
		f.t.Fatalf("read %s of %d rows, want %s of %d", k, n, kind, rows)
	}
}

func (f *fixture) byUserHas(userID, crawlerID int64) bool {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	for _, c := range f.h.byUser[userID] {
		if c.row.ID == crawlerID {
			return true
		}
	}
	return false
}

func TestReload_IncrementalReadAppliesChangesDeletesAndUserLimits(t *testing.T) {
	f := newReloadFixture(t)
	ctx := context.Background()
	f.wantRead("full", len(f.crawlers)+1)
	f.wantRead("changes", 0)

	// Usage is not a change, and flows in through increments only.
	if _, err := f.st.ApplyIncrements(ctx, []api.Increment{{NodeID: "node-a", Seq: 1, CrawlerID: f.crawlers[0], UserID: f.user, Count: 4}}); err != nil {
		t.Fatal(err)
	}
	f.wantRead("changes", 0)

	// A changed crawler whose usage in memory ran ahead of SQL keeps it.
	f.h.mu.Lock()
	f.h.crawlers[f.crawlers[0]].row.Usage = 10
	f.h.users[f.user].row.Usage = 10
	f.h.mu.Unlock()
	f.update(f.crawlers[0], func(c *sqlstore.Crawler) { c.Keywords = []string{"golang"} })
	f.wantRead("changes", 1)
	c := f.crawlerOf(f.crawlers[0])
	if !slices.Equal(c.row.Keywords, []string{"golang"}) || len(f.h.specLocked(c).Keywords) != 1 || c.row.Usage != 10 {
		t.Fatalf("changed crawler: keywords %q, spec %v, usage %d; want golang and usage 10", c.row.Keywords, f.h.specLocked(c).Keywords, c.row.Usage)
	}
	plans, resp := f.plan(false)
	if resp.Assigned != 1 || len(plans) != 1 {
		t.Fatalf("reload after a change %+v, want the changed crawler sent", resp)
	}
	f.sendAll(plans)

	// A deleted crawler leaves the hub and its user's list.
	if err := f.st.DeleteCrawler(ctx, f.crawlers[3]); err != nil {
		t.Fatal(err)
	}
	f.wantRead("changes", 1)
	if f.crawlerOf(f.crawlers[3]) != nil || f.byUserHas(f.user, f.crawlers[3]) {
		t.Fatalf("deleted crawler %d is still known", f.crawlers[3])
	}

	// A new crawler joins its user's list.
	added := f.crawler(f.user, 0, "")
	f.wantRead("changes", 1)
	if f.crawlerOf(added) == nil || !f.byUserHas(f.user, added) {
		t.Fatalf("new crawler %d is not known", added)
	}

	// A user limit makes every crawler of the user limited, and one already
	// reached (usage 10 in memory, 4 in SQL) stops them all.
	if _, err := f.st.SetUserLimit(ctx, f.user, 10); err != nil {
		t.Fatal(err)
	}
	f.wantRead("changes", 1)
	f.h.mu.Lock()
	if u := f.h.users[f.user].row; u.CommentLimit != 10 || u.Usage != 10 {
		t.Errorf("user after its limit changed: %+v, want limit 10 and usage 10", u)
	}
	for _, c := range f.h.byUser[f.user] {
		if !c.limited {
			t.Errorf("crawler %d of a limited user is not limited", c.row.ID)
		}
	}
	f.h.mu.Unlock()
	if _, resp := f.plan(false); resp.Removed != len(f.crawlers)-1 {
		t.Fatalf("reload after the user reached its new limit %+v, want %d removed", resp, len(f.crawlers)-1)
	}
}

func TestReload_PeriodicFullReadRepairsMissedChanges(t *testing.T) {
	f := newReloadFixture(t)
	ctx := context.Background()
	if !f.h.fullReadDue() {
		t.Fatal("a new hub has no full read due")
	}
	f.wantRead("full", len(f.crawlers)+1)
	if f.h.fullReadDue() {
		t.Fatal("a full read is due right after one")
	}

	// The hub misses a change and a deletion: it believes it has read
	// past them.
	f.update(f.crawlers[1], func(c *sqlstore.Crawler) { c.Enabled = false })
	if err := f.st.DeleteCrawler(ctx, f.crawlers[2]); err != nil {
		t.Fatal(err)
	}
	seq, err := f.st.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.h.reload.mu.Lock()
	f.h.reload.view.seq = seq
	f.h.reload.mu.Unlock()
	f.wantRead("changes", 0)
	if !f.crawlerOf(f.crawlers[1]).row.Enabled || f.crawlerOf(f.crawlers[2]) == nil {
		t.Fatal("the missed changes arrived without a full read")
	}

	f.now = f.now.Add(fullReadEvery)
	f.h.reload.mu.Lock()
	due := f.h.reload.view.fullReadDue(f.now)
	f.h.reload.mu.Unlock()
	if !due {
		t.Fatalf("no full read due %s after the last", fullReadEvery)
	}
	f.wantRead("full", len(f.crawlers)-1+1)
	if f.crawlerOf(f.crawlers[1]).row.Enabled || f.crawlerOf(f.crawlers[2]) != nil || f.byUserHas(f.user, f.crawlers[2]) {
		t.Fatal("the full read did not repair the missed changes")
	}
	if _, resp := f.plan(false); resp.Removed != 1 {
		t.Fatalf("reload after the repair %+v, want the disabled crawler removed", resp)
	}
	f.wantRead("changes", 0)
}

// TestReload_IncrementalReadOrdersDeletionAndReuse: a row read before its
// deletion does not bring the crawler back, and a row newer than a
// deletion of the same id (SQLite may reuse ids) is a new crawler.
func TestReload_IncrementalReadOrdersDeletionAndReuse(t *testing.T) {
	f := newReloadFixture(t)
	f.wantRead("full", len(f.crawlers)+1)
	id := f.crawlers[0]
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	row := f.h.crawlers[id].row
	row.ChangeSeq = 10
	stale := sqlRead{seq: 11, crawlers: []sqlstore.Crawler{row}, deleted: []sqlstore.Deletion{{CrawlerID: id, ChangeSeq: 11}}}
	f.h.applyChangesLocked(stale)
	if _, ok := f.h.crawlers[id]; ok {
		t.Fatal("a row read before its deletion brought the crawler back")
	}
	row.ChangeSeq, row.Version, row.Keywords = 13, 1, []string{"reused"}
	reused := sqlRead{seq: 13, crawlers: []sqlstore.Crawler{row}, deleted: []sqlstore.Deletion{{CrawlerID: id, ChangeSeq: 12}}}
	f.h.applyChangesLocked(reused)
	c, ok := f.h.crawlers[id]
	if !ok || !slices.Equal(c.row.Keywords, []string{"reused"}) || c.node != nil {
		t.Fatalf("a row newer than the deletion of its id: %+v, want a new crawler", c)
	}
	n := 0
	for _, o := range f.h.byUser[row.UserID] {
		if o.row.ID == id {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the reused id is %d times in its user's list, want once", n)
	}
}
