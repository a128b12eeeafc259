package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

// statuses polls the node for crawlers 1..n and returns their lines and
// the store's health.
func statuses(t *testing.T, n *Node, seq uint64, crawlers int) (map[int64]api.SubscriberStatus, api.PollResponse) {
	t.Helper()
	refs := make([]api.SubscriberRef, crawlers)
	for i := range refs {
		refs[i] = api.SubscriberRef{CrawlerID: int64(i + 1), Version: 1}
	}
	resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: seq, Subscribers: refs})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]api.SubscriberStatus{}
	for _, s := range resp.Subscribers {
		out[s.CrawlerID] = s
	}
	return out, resp
}

// TestNode_OneCrawlersFailingStoreHoldsUpNoOther makes one crawler's
// directory of the file store unusable (a regular file where the directory
// goes: root, which tests run as, ignores permissions but not that) while
// three crawlers on one spawn receive more comments than the failing one's
// share of the buffer. The other two store everything meanwhile, the
// failing one shows the store's error, and once the directory is usable
// again it stores all of its comments: each crawler's reported usage equals
// what the store holds.
func TestNode_OneCrawlersFailingStoreHoldsUpNoOther(t *testing.T) {
	dir := t.TempDir()
	st, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, kind := attachedNodeWith(t, st)
	// More comments per crawler than a crawler's share of the buffer
	// (writerLaneMax), so the failing one's source has to wait.
	const crawlers, broken, perCrawler, batch = 3, int64(2), 2000, 100
	var specs []api.SubscriberSpec
	for i := range crawlers {
		specs = append(specs, spec(int64(i+1), 1, fmt.Sprintf("f%d", i+1)))
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs}); err != nil {
		t.Fatal(err)
	}
	brokenDir := filepath.Join(dir, fmt.Sprint(broken))
	if err := os.WriteFile(brokenDir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each feed from its own goroutine: the failing crawler's source is
	// held back once its share of the buffer is full.
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for c := range crawlers {
		feed := fmt.Sprintf("f%d", c+1)
		go func() {
			for i := 0; i < perCrawler && ctx.Err() == nil; i += batch {
				items := make([]source.Item, batch)
				for j := range items {
					items[j] = source.Item{ID: fmt.Sprintf("%s-%d", feed, i+j), Text: "a comment", PublishedAt: day.Add(time.Duration(i+j) * time.Second)}
				}
				kind.send(feed, items...)
			}
		}()
	}
	stored := func(id int64) int {
		cs, err := st.Recent(context.Background(), id, 10*perCrawler)
		if err != nil {
			return -1
		}
		return len(cs)
	}

	seq := uint64(1)
	testkit.WaitFor(t, 3*waitTimeout, "the healthy crawlers store everything while one crawler's store fails", func() bool {
		return stored(1) == perCrawler && stored(3) == perCrawler
	})
	seq++
	lines, resp := statuses(t, n, seq, crawlers)
	t.Logf("while failing: store %s; stored 1:%d 2:%d 3:%d; crawler 2: %s %q", resp.Store, lines[1].Stored, lines[2].Stored, lines[3].Stored, lines[2].State, lines[2].Error)
	if resp.Store != "degraded" {
		t.Errorf("store %q while a crawler's writes fail, want degraded", resp.Store)
	}
	if !strings.Contains(lines[broken].Error, "store") || lines[broken].State != api.StateRunning {
		t.Errorf("the failing crawler shows %s %q, want running with the store's error", lines[broken].State, lines[broken].Error)
	}
	for _, id := range []int64{1, 3} {
		if lines[id].Error != "" || lines[id].Stored != perCrawler {
			t.Errorf("crawler %d: stored %d, error %q; want %d stored, no error", id, lines[id].Stored, lines[id].Error, perCrawler)
		}
	}
	if got := stored(broken); got > 0 {
		t.Fatalf("the broken crawler stored %d comments", got)
	}

	if err := os.Remove(brokenDir); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 3*waitTimeout, "the recovered crawler stores everything", func() bool {
		seq++
		lines, resp := statuses(t, n, seq, crawlers)
		return stored(broken) == perCrawler && resp.Store == "ok" && lines[broken].Error == ""
	})
	// Usage is what the store holds, crawler by crawler. A batch's
	// increment is recorded just after the store returns, so a poll may
	// come between the two: wait for the last one (polls that acknowledge
	// nothing report every increment again).
	var usage map[int64]int64
	testkit.WaitFor(t, waitTimeout, "every stored comment reported as usage", func() bool {
		seq++
		_, resp = statuses(t, n, seq, crawlers)
		usage = map[int64]int64{}
		for _, inc := range resp.Increments {
			usage[inc.CrawlerID] += inc.Count
		}
		for id := int64(1); id <= crawlers; id++ {
			if usage[id] < perCrawler {
				return false
			}
		}
		return true
	})
	for id := int64(1); id <= crawlers; id++ {
		if usage[id] != int64(stored(id)) || usage[id] != perCrawler {
			t.Errorf("crawler %d: usage %d, stored %d, sent %d", id, usage[id], stored(id), perCrawler)
		}
	}
}
