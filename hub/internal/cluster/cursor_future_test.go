package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// A cursor position saved in the future (before cursors were bounded) is
// sent as now, the crawler says so, and the first real position replaces
// it; an increment from the future never moves it.
func TestHub_CursorFromTheFutureReadsFromNowAndSaysSo(t *testing.T) {
	f := newReloadFixture(t)
	ctx := context.Background()
	f.wantRead("full", len(f.crawlers)+1)
	id := f.crawlers[0]
	future := time.Now().Add(10 * 365 * 24 * time.Hour).UnixMicro()
	c := f.crawlerOf(id)
	f.h.mu.Lock()
	c.row.CursorPos = future
	spec := f.h.specLocked(c)
	f.h.mu.Unlock()
	if spec.Cursor == nil || spec.Cursor.Position > time.Now().UnixMicro() {
		t.Fatalf("spec cursor %+v, want now instead of the saved future", spec.Cursor)
	}
	row, err := f.st.GetCrawler(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if v := f.h.CrawlerView(row); !strings.Contains(v.Error, "is in the future: reading from now") {
		t.Fatalf("crawler error %q, want it to say its cursor is in the future", v.Error)
	}

	const node = "node-a"
	f.h.mu.Lock()
	f.h.applyNodeUsageLocked(node, nil, []api.Increment{{NodeID: node, Seq: 1, CrawlerID: id, UserID: f.user, Count: 1, Position: future + 1}})
	stillFuture := c.row.CursorPos == future
	real := time.Now().Add(-time.Second).UnixMicro()
	f.h.applyNodeUsageLocked(node, nil, []api.Increment{{NodeID: node, Seq: 2, CrawlerID: id, UserID: f.user, Count: 1, Position: real}})
	got := c.row.CursorPos
	f.h.mu.Unlock()
	if !stillFuture || got != real {
		t.Fatalf("cursor %d after a real increment (kept through one from the future: %v), want %d", got, stillFuture, real)
	}
	if v := f.h.CrawlerView(row); v.Error != "" {
		t.Fatalf("crawler error %q once its cursor is real", v.Error)
	}
}
