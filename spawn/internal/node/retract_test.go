package node

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

// retractingSource is a chanSource that tells retractions.
type retractingSource struct {
	*chanSource
	mu   sync.Mutex
	tell func([]api.Retraction)
}

func (s *retractingSource) Retractions(fn func([]api.Retraction)) {
	s.mu.Lock()
	s.tell = fn
	s.mu.Unlock()
}

func (s *retractingSource) retract(rs ...api.Retraction) {
	s.mu.Lock()
	fn := s.tell
	s.mu.Unlock()
	fn(rs)
}

// retractingNode is an attached node on a file store whose "rss" sources
// tell retractions, with its retraction pipeline running.
func retractingNode(t *testing.T, st store.Store) (*Node, *chanKind, func() *retractingSource) {
	t.Helper()
	n, kind := attachedNodeWith(t, st)
	var ds *retractingSource
	var mu sync.Mutex
	kind.wrap = func(c *chanSource) source.DataSource {
		mu.Lock()
		defer mu.Unlock()
		ds = &retractingSource{chanSource: c}
		return ds
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.retracts.run(ctx, st) }()
	t.Cleanup(func() { cancel(); <-done })
	return n, kind, func() *retractingSource { mu.Lock(); defer mu.Unlock(); return ds }
}

func storedIDs(t *testing.T, st store.Store, crawler int64) []string {
	t.Helper()
	cs, err := st.Recent(context.Background(), crawler, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	slices.Sort(out)
	return out
}

func TestNode_SourceRetractionsAreAppliedAndReportedUntilAcknowledged(t *testing.T) {
	st, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n, kind, src := retractingNode(t, st)
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f"), spec(2, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	pub := time.Now().UTC().Add(-time.Minute)
	kind.send("f", source.Item{ID: "p1", Text: "one", PublishedAt: pub}, source.Item{ID: "p2", Text: "two", PublishedAt: pub})
	testkit.WaitFor(t, waitTimeout, "both posts stored by both crawlers", func() bool {
		return len(storedIDs(t, st, 1)) == 2 && len(storedIDs(t, st, 2)) == 2
	})
	edited := pub.Add(30 * time.Second)
	src().retract(
		api.Retraction{Op: api.RetractDelete, Source: "rss", ID: "p1"},
		api.Retraction{Op: api.RetractUpdate, Source: "rss", ID: "p2", Text: "two, edited", EditedAt: edited},
	)
	testkit.WaitFor(t, waitTimeout, "p1 removed from both crawlers", func() bool {
		return slices.Equal(storedIDs(t, st, 1), []string{"p2"}) && slices.Equal(storedIDs(t, st, 2), []string{"p2"})
	})
	testkit.WaitFor(t, waitTimeout, "p2 edited", func() bool {
		cs, _ := st.Recent(context.Background(), 2, 10)
		return len(cs) == 1 && cs[0].Text == "two, edited" && cs[0].EditedAt.Equal(edited)
	})
	// Reported in every answer until the hub acknowledges them.
	var reported []api.Retraction
	testkit.WaitFor(t, waitTimeout, "the retractions reported", func() bool {
		resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}, {CrawlerID: 2, Version: 1}}})
		reported = resp.Retractions
		return err == nil && len(reported) == 2
	})
	if reported[0].Op != api.RetractDelete || reported[0].ID != "p1" || reported[1].Op != api.RetractUpdate || reported[0].Seq == reported[1].Seq || reported[0].At.IsZero() {
		t.Errorf("reported %+v", reported)
	}
	resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 3, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}, {CrawlerID: 2, Version: 1}},
		RetractionAcks: []uint64{reported[0].Seq, reported[1].Seq}})
	if err != nil {
		t.Fatal(err)
	}
	if resp2, _ := n.Poll(api.PollRequest{Epoch: "e1", Seq: 4, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}, {CrawlerID: 2, Version: 1}}}); len(resp2.Retractions) != 0 {
		t.Errorf("acknowledged retractions reported again: %+v (answer before: %+v)", resp2.Retractions, resp.Retractions)
	}
	// The deleted post sent again (a replay) is neither stored nor counted.
	n.mu.Lock()
	stored := n.table.subs[1].stored
	n.mu.Unlock()
	kind.send("f", source.Item{ID: "p1", Text: "one", PublishedAt: pub}, source.Item{ID: "p3", Text: "three", PublishedAt: pub})
	counted := func() int64 {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.table.subs[1].stored - stored
	}
	// p1 and p3 are written, and counted, together.
	testkit.WaitFor(t, waitTimeout, "p3 counted", func() bool { return counted() > 0 })
	if got := storedIDs(t, st, 1); !slices.Equal(got, []string{"p2", "p3"}) {
		t.Errorf("after the replay crawler 1 holds %v", got)
	}
	if delta := counted(); delta != 1 {
		t.Errorf("the replay counted %d comments, want 1 (p3)", delta)
	}
}

func TestNode_HubRetractionsAreAppliedInOrderAndTheMarkKept(t *testing.T) {
	dir := t.TempDir()
	st, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, kind, _ := retractingNode(t, st)
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	pub := time.Now().UTC().Add(-time.Minute)
	kind.send("f",
		source.Item{ID: "a1", Author: "ann", AuthorID: "u:1", Text: "x", PublishedAt: pub},
		source.Item{ID: "a2", Author: "ann", AuthorID: "u:1", Text: "x", PublishedAt: pub},
		source.Item{ID: "b1", Author: "bob", AuthorID: "u:2", Text: "x", PublishedAt: pub})
	testkit.WaitFor(t, waitTimeout, "three stored", func() bool { return len(storedIDs(t, st, 1)) == 3 })
	refs := []api.SubscriberRef{{CrawlerID: 1, Version: 1}}
	entries := []api.Retraction{
		{Seq: 5, Op: api.RetractForget, Source: "rss", Author: "ANN", At: time.Now()},
		{Seq: 6, Op: api.RetractDelete, Source: "rss", ID: "b1"},
	}
	if _, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 2, Subscribers: refs, Retractions: entries}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, waitTimeout, "the log applied", func() bool {
		resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 3, Subscribers: refs, Retractions: entries})
		return err == nil && resp.RetractionsApplied == 6
	})
	if got := storedIDs(t, st, 1); len(got) != 0 {
		t.Errorf("crawler 1 holds %v after the forget and the delete", got)
	}
	if mark, err := st.Applied(context.Background()); err != nil || mark != 6 {
		t.Errorf("the store's mark: %d, %v; want 6", mark, err)
	}
	if id, applied := n.storeFacts(context.Background()); id == "" || applied != 6 {
		t.Errorf("registration facts %q, %d", id, applied)
	}
	// A forget handed over directly counts what it removed, per crawler.
	kind.send("f", source.Item{ID: "c1", Author: "cat", AuthorID: "u:3", Text: "x", PublishedAt: pub})
	testkit.WaitFor(t, waitTimeout, "c1 stored", func() bool { return len(storedIDs(t, st, 1)) == 1 })
	resp, err := n.Retract(context.Background(), api.RetractRequest{Epoch: "e1", Retractions: []api.Retraction{{Op: api.RetractForget, Source: "rss", Author: "u:3", At: time.Now()}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Removed[1] != 1 || resp.Store != st.ID() {
		t.Errorf("Retract answered %+v", resp)
	}
	if _, err := n.Retract(context.Background(), api.RetractRequest{Epoch: "other"}); err == nil {
		t.Error("a retraction from another epoch was applied")
	}
}
