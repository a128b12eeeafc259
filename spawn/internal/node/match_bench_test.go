package node

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/match"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/rss"
)

// storedComments returns a crawler's stored comments by id.
func storedComments(st *memStore, crawlerID int64) map[string]api.Comment {
	st.mu.Lock()
	defer st.mu.Unlock()
	return maps.Clone(st.rows[crawlerID])
}

func TestNode_KeywordIndexRoutesItemsToMatchingSubscribers(t *testing.T) {
	n, kind, st := attachedNode(t)
	golang := spec(1, 1, "f")
	golang.Keywords = []string{"golang"}
	both := spec(2, 1, "f")
	both.Keywords = []string{"rust", "golang"}
	all := spec(3, 1, "f")
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{golang, both, all}}); err != nil {
		t.Fatal(err)
	}
	at := func(s int64) time.Time { return time.Unix(1700000000+s, 0) }
	kind.send("f",
		source.Item{ID: "a", Text: "Golang and Rust", PublishedAt: at(1)},
		source.Item{ID: "b", Text: "rust only", PublishedAt: at(2)},
		source.Item{ID: "c", Text: "golangs are not golang's fans", PublishedAt: at(3)},
		source.Item{ID: "d", Text: "nothing to see", PublishedAt: at(4)},
	)
	testkit.WaitFor(t, waitTimeout, "comments stored", func() bool { return st.count(3) == 4 && st.count(2) == 3 && st.count(1) == 2 })
	want := map[int64]map[string][]string{
		1: {"a": {"golang"}, "c": {"golang"}},
		2: {"a": {"golang", "rust"}, "b": {"rust"}, "c": {"golang"}},
		3: {"a": nil, "b": nil, "c": nil, "d": nil},
	}
	for id, items := range want {
		got := storedComments(st, id)
		for item, matched := range items {
			if c, ok := got[item]; !ok || !slices.Equal(c.Matched, matched) {
				t.Errorf("crawler %d item %s: stored %v (matched %q), want matched %q", id, item, ok, c.Matched, matched)
			}
		}
	}

	// Changing a subscriber's keywords in place takes effect on the next
	// item, without restarting the data source.
	golang.Version, golang.Keywords = 2, []string{"zig"}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberSpec{golang, both, all}}); err != nil {
		t.Fatal(err)
	}
	kind.send("f",
		source.Item{ID: "e", Text: "zig news", PublishedAt: at(5)},
		source.Item{ID: "f", Text: "golang news", PublishedAt: at(6)},
	)
	testkit.WaitFor(t, waitTimeout, "comments after the change", func() bool { return st.count(3) == 6 && st.count(2) == 4 })
	if got := storedComments(st, 1); len(got) != 3 || got["e"].Matched[0] != "zig" {
		t.Fatalf("after the keyword change crawler 1 stored %v, want a, c and e", got)
	}
	if kind.starts("f") != 1 {
		t.Fatalf("data source started %d times, want 1", kind.starts("f"))
	}

	// A subscriber that leaves is no longer matched.
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 3, Exact: true, Subscribers: []api.SubscriberSpec{golang, all}}); err != nil {
		t.Fatal(err)
	}
	kind.send("f", source.Item{ID: "g", Text: "rust and zig", PublishedAt: at(7)})
	testkit.WaitFor(t, waitTimeout, "last comments", func() bool { return st.count(3) == 7 && st.count(1) == 4 })
	if st.count(2) != 4 {
		t.Fatalf("removed subscriber stored %d comments, want 4", st.count(2))
	}
}

// A keyword index is compiled without the node lock: while a large
// vocabulary compiles, the hub's calls go through, and an index that a
// change overtook is compiled again before any item is matched with it.
func TestNode_KeywordIndexCompilesWithoutTheNodeLock(t *testing.T) {
	n, kind, st := attachedNode(t)
	compiling := make(chan struct{})
	release := make(chan struct{})
	var builds atomic.Int32
	n.table.indexBuilder = func(prev *match.QueryIndex, byID map[int64]*query.Query) *match.QueryIndex {
		if builds.Add(1) == 1 {
			close(compiling)
			<-release
		}
		return buildIndex(prev, byID)
	}
	golang := spec(1, 1, "f")
	golang.Keywords = []string{"golang"}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{golang}}); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0)
	kind.send("f", source.Item{ID: "a", Text: "golang and rust", PublishedAt: at})
	select {
	case <-compiling:
	case <-time.After(5 * time.Second):
		t.Fatal("the emitter did not compile the keyword index")
	}

	// The hub adds a subscriber while the index compiles: the call must not
	// wait for the compile.
	rust := spec(2, 1, "f")
	rust.Keywords = []string{"rust"}
	upserted := make(chan error, 1)
	go func() {
		_, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberSpec{golang, rust}})
		upserted <- err
	}()
	select {
	case err := <-upserted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("an upsert waited for the keyword index to compile")
	}
	close(release)

	// The first compile missed the new subscriber, so it is compiled again
	// and the item reaches both.
	testkit.WaitFor(t, waitTimeout, "the item stored for both subscribers", func() bool { return st.count(1) == 1 && st.count(2) == 1 })
	if got := builds.Load(); got != 2 {
		t.Fatalf("index compiled %d times, want 2 (the overtaken one, then the current one)", got)
	}
}

// The hub carries, in a subscriber's spec, the published time of the newest
// comment the crawler has stored (its cursor). A subscriber moved to another
// node fetches the feed afresh there; the cursor keeps it from storing again
// what it stored on the node it left, while new items still come through.
func TestNode_CursorStopsReemittingAfterAMove(t *testing.T) {
	var mu sync.Mutex
	items := []string{"one", "two", "three"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprint(w, `<rss version="2.0"><channel><title>t</title>`)
		for i := len(items) - 1; i >= 0; i-- {
			fmt.Fprintf(w, `<item><title>%s golang</title><guid>%s</guid><pubDate>%s</pubDate></item>`,
				items[i], items[i], time.Date(2024, 1, 1+i, 0, 0, 0, 0, time.UTC).Format(time.RFC1123Z))
		}
		fmt.Fprint(w, `</channel></rss>`)
	}))
	t.Cleanup(srv.Close)
	newNode := func() (*Node, *memStore) {
		st := &memStore{}
		kind := rss.New(rss.Options{
			Client:      netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
			Interval:    20 * time.Millisecond,
			MinInterval: 20 * time.Millisecond,
		})
		return attachNode(t, Config{Store: st, Sources: source.Registry{api.SourceRSS: kind}}), st
	}
	sp := api.SubscriberSpec{CrawlerID: 1, UserID: 1, Version: 1, Source: api.SourceRSS, Query: []string{srv.URL + "/feed"}, QueryUUID: "q", Keywords: []string{"golang"}}

	first, st1 := newNode()
	if _, err := first.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{sp}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, waitTimeout, "three comments on the first node", func() bool { return st1.count(1) == 3 })
	var newest time.Time
	for _, c := range storedComments(st1, 1) {
		if c.PublishedAt.After(newest) {
			newest = c.PublishedAt
		}
	}
	if err := first.Remove(api.RemoveRequest{Epoch: "e1", Seq: 2, CrawlerIDs: []int64{1}}); err != nil {
		t.Fatal(err)
	}

	// Moved: the second node gets the spec with the cursor.
	second, st2 := newNode()
	moved := sp
	moved.Cursor = &api.Cursor{PublishedAt: newest}
	if _, err := second.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{moved}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	items = append(items, "four")
	mu.Unlock()
	testkit.WaitFor(t, waitTimeout, "the new item on the second node", func() bool { return st2.count(1) >= 1 })
	got := storedComments(st2, 1)
	if _, ok := got["four"]; !ok || len(got) != 1 {
		t.Fatalf("second node stored %v, want only the item published after the cursor", slices.Collect(maps.Keys(got)))
	}
}

// countStore counts what it is given and keeps nothing, so a benchmark's
// memory does not grow with its length.
type countStore struct{ n atomic.Int64 }

func (c *countStore) Write(_ context.Context, cs []api.Comment) error {
	c.n.Add(int64(len(cs)))
	return nil
}
func (c *countStore) Recent(context.Context, int64, int) ([]api.Comment, error) { return nil, nil }
func (c *countStore) Close() error                                              { return nil }

// Workload of BenchmarkEmitMatch.
const (
	emitVocabulary = 3000 // distinct keywords subscribers choose from
	emitKeywords   = 3    // keywords per subscriber
	emitBatch      = 100  // items per emit call
)

// emitText is a comment-length text mentioning one to three vocabulary
// keywords.
func emitText(r *rand.Rand) string {
	filler := strings.Fields("the a and so just really today this that what i you we they my is are was be have do can will think know love want need see look read watch about with from after still never always maybe thanks great good people time day week news update thread")
	var b strings.Builder
	words := 22 + r.IntN(18)
	kws := map[int]bool{}
	for range 1 + r.IntN(3) {
		kws[r.IntN(words)] = true
	}
	for w := range words {
		if w > 0 {
			b.WriteByte(' ')
		}
		if kws[w] {
			fmt.Fprintf(&b, "Topic%04d", r.IntN(emitVocabulary))
		} else {
			b.WriteString(filler[r.IntN(len(filler))])
		}
	}
	return b.String()
}

// BenchmarkEmitMatch pushes items through one data source's emitter —
// keyword index, de-duplication, cursor, lease check, store buffer — with
// one subscriber and with 10,000 subscribers on the source, each following
// 3 of 3,000 keywords, leases off. Items mention one to three keywords, so
// with 10,000 subscribers an item becomes about 20 comments (comments/item,
// as far as the counting in-memory store has received them), each counted,
// buffered and written. Between batches, outside the timing, the benchmark
// acknowledges usage as the hub would. "scan-all" is the keyword filter
// alone done the way the spawn did before the index — every subscriber's
// keywords against every item — for comparison:
//
//	go test -run '^$' -bench EmitMatch ./spawn/internal/node/
func BenchmarkEmitMatch(b *testing.B) {
	for _, subs := range []int{1, 10000} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			n, ds, st := emitBenchNode(b, subs)
			emit := n.emitter(ds)
			r := rand.New(rand.NewPCG(5, 6))
			texts := make([]string, 1000)
			for i := range texts {
				texts[i] = emitText(r)
			}
			ctx := context.Background()
			items := make([]source.Item, emitBatch)
			var acks []uint64
			sent := 0
			for b.Loop() {
				for j := range items {
					items[j] = source.Item{ID: fmt.Sprint(sent + j), Text: texts[(sent+j)%len(texts)], PublishedAt: time.Unix(int64(sent+j), 0)}
				}
				if err := emit(ctx, items); err != nil {
					b.Fatal(err)
				}
				sent += emitBatch
				b.StopTimer()
				acks = ackUsage(b, n, acks)
				b.StartTimer()
			}
			b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(st.n.Load())/float64(sent), "comments/item")
		})
	}
	b.Run("scan-all/subscribers=10000", func(b *testing.B) {
		_, ds, _ := emitBenchNode(b, 10000)
		r := rand.New(rand.NewPCG(5, 6))
		texts := make([]string, 1000)
		for i := range texts {
			texts[i] = emitText(r)
		}
		subs := slices.Collect(maps.Values(ds.subs))
		i := 0
		for b.Loop() {
			it := source.Item{Text: texts[i%len(texts)]}
			for _, s := range subs {
				matchFilter(it, s.filter)
			}
			i++
		}
		b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "items/s")
	})
}

// ackUsage plays the hub's part between batches: it acknowledges the usage
// increments reported last time and returns those reported now, so that
// unacknowledged usage does not pile up over a long benchmark. A stale
// sequence number keeps the subscribers as they are.
// settled reports whether a node has nothing on its way to the store or
// to its usage: every comment it counted is stored and recorded as usage,
// with its analytics. A benchmark round ends there, so that no work of a
// round is left to slow the next.
func settled(n *Node) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.usage.pending) == 0
}

func ackUsage(b *testing.B, n *Node, acks []uint64) []uint64 {
	resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 0, Acks: acks})
	if err != nil {
		b.Fatal(err)
	}
	acks = acks[:0]
	for _, inc := range resp.Increments {
		acks = append(acks, inc.Seq)
	}
	return acks
}

// emitBenchNode returns a running node with one data source shared by subs
// subscribers, added in one upsert, and the store it writes to.
func emitBenchNode(b *testing.B, subs int) (*Node, *dataSource, *countStore) {
	b.Helper()
	st := &countStore{}
	n, _ := attachedNodeWith(b, st)
	r := rand.New(rand.NewPCG(1, 2))
	specs := make([]api.SubscriberSpec, subs)
	for i := range specs {
		specs[i] = spec(int64(i+1), 1, "f")
		kws := make([]string, emitKeywords)
		for k := range kws {
			kws[k] = fmt.Sprintf("topic%04d", r.IntN(emitVocabulary))
		}
		specs[i].Keywords = kws
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs}); err != nil {
		b.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n, n.table.sources["f"], st
}
