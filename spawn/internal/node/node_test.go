package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// memStore keeps comments in memory; it can be told to fail.
type memStore struct {
	mu   sync.Mutex
	rows map[int64]map[string]api.Comment
	fail atomic.Bool
}

func (m *memStore) Write(ctx context.Context, cs []api.Comment) error {
	if m.fail.Load() {
		return errors.New("store down")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[int64]map[string]api.Comment{}
	}
	for _, c := range cs {
		if m.rows[c.CrawlerID] == nil {
			m.rows[c.CrawlerID] = map[string]api.Comment{}
		}
		m.rows[c.CrawlerID][c.ID] = c
	}
	return nil
}

func (m *memStore) count(id int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.rows[id])
}

func (m *memStore) Recent(context.Context, int64, int) ([]api.Comment, error) { return nil, nil }
func (m *memStore) Close() error                                              { return nil }

// chanKind is a source kind whose data sources emit what the test sends.
type chanKind struct {
	mu      sync.Mutex
	started map[string]int
	feeds   map[string]chan []source.Item
	// wrap, when set, dresses each new data source (to give it more
	// interfaces).
	wrap func(*chanSource) source.DataSource
}

func newChanKind() *chanKind {
	return &chanKind{started: map[string]int{}, feeds: map[string]chan []source.Item{}}
}

func (k *chanKind) Keys(sub source.Sub) ([]string, error) { return sub.Spec.Query, nil }

func (k *chanKind) New(key string) (source.DataSource, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.started[key]++
	if k.feeds[key] == nil {
		k.feeds[key] = make(chan []source.Item, 16)
	}
	ds := &chanSource{in: k.feeds[key]}
	if k.wrap != nil {
		return k.wrap(ds), nil
	}
	return ds, nil
}

func (k *chanKind) starts(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started[key]
}

func (k *chanKind) send(key string, items ...source.Item) {
	k.mu.Lock()
	ch := k.feeds[key]
	k.mu.Unlock()
	ch <- items
}

type chanSource struct {
	in   chan []source.Item
	mu   sync.Mutex
	err  error
	sets int // SetSubscribers calls
}

func (s *chanSource) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *chanSource) Run(ctx context.Context, emit source.Emit) {
	for {
		select {
		case <-ctx.Done():
			return
		case items := <-s.in:
			if emit(ctx, items) != nil {
				return
			}
		}
	}
}
func (s *chanSource) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
func (s *chanSource) SetSubscribers([]source.Sub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets++
}

// attachedNode returns a running node attached to epoch "e1" without a hub.
func attachedNode(t testing.TB) (*Node, *chanKind, *memStore) {
	t.Helper()
	st := &memStore{}
	n, kind := attachedNodeWith(t, st)
	return n, kind, st
}

// attachedNodeWith is attachedNode writing to st.
func attachedNodeWith(t testing.TB, st store.Store) (*Node, *chanKind) {
	t.Helper()
	return attachedNodeConfig(t, Config{Store: st})
}

// attachedNodeConfig is attachedNode built from cfg, whose sources it sets
// to one controllable "rss" kind.
func attachedNodeConfig(t testing.TB, cfg Config) (*Node, *chanKind) {
	t.Helper()
	kind := newChanKind()
	cfg.Sources = source.Registry{"rss": kind}
	return attachNode(t, cfg), kind
}

// attachNode returns a node built from cfg (its store and sources) and
// attached to epoch "e1" without a hub: the hub address refuses, orphan and
// detach times are an hour so no test loses its epoch, and a cfg without a
// logger gets one that discards. The node and its store writer stop when
// the test ends.
func attachNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	cfg.HubURL, cfg.OrphanAfter, cfg.DetachAfter = "http://127.0.0.1:1", time.Hour, time.Hour
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.mu.Lock()
	n.table.runCtx = ctx
	n.attach.state, n.attach.epoch, n.attach.lastContact = api.NodeAttached, "e1", time.Now()
	n.mu.Unlock()
	done, extracted := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); n.writer.run(ctx, ctx) }()
	go func() { defer close(extracted); n.extractTerms(ctx) }()
	t.Cleanup(func() { cancel(); <-done; <-extracted; n.table.wg.Wait() })
	return n
}

// waitTimeout bounds every wait for the node's goroutines (data sources,
// the store writer) to get somewhere.
const waitTimeout = 5 * time.Second

func spec(id, version int64, feed string) api.SubscriberSpec {
	return api.SubscriberSpec{CrawlerID: id, UserID: 1, Version: version, Source: "rss", Query: []string{feed}, QueryUUID: "q-" + feed}
}

func TestNode_ResendIsNoOpAndChangeUpdatesInPlace(t *testing.T) {
	n, kind, _ := attachedNode(t)
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	inst := n.table.subs[1].instance
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	changed := spec(1, 2, "f")
	changed.Keywords = []string{"go"}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 3, Subscribers: []api.SubscriberSpec{changed}}); err != nil {
		t.Fatal(err)
	}
	if got := n.table.subs[1]; got.instance != inst || got.spec.Version != 2 || len(got.spec.Keywords) != 1 {
		t.Fatalf("subscriber was replaced or not updated: %+v", got.spec)
	}
	if s := kind.starts("f"); s != 1 {
		t.Fatalf("data source started %d times, want 1", s)
	}
}

func TestNode_DataSourceSharedAndStoppedWithLastSubscriber(t *testing.T) {
	n, kind, _ := attachedNode(t)
	_, _ = n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f"), spec(2, 1, "f")}})
	if len(n.table.sources) != 1 || len(n.table.sources["f"].subs) != 2 || kind.starts("f") != 1 {
		t.Fatalf("want one data source with two subscribers, have %d sources", len(n.table.sources))
	}
	_ = n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 2, CrawlerIDs: []int64{1}})
	if len(n.table.sources) != 1 {
		t.Fatal("data source stopped while a subscriber remained")
	}
	_ = n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 3, CrawlerIDs: []int64{2}})
	if len(n.table.sources) != 0 {
		t.Fatal("data source kept running without subscribers")
	}
}

func TestNode_StaleAndForeignRequestsChangeNothing(t *testing.T) {
	n, _, _ := attachedNode(t)
	_, _ = n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 5, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}})
	// A delayed remove from before the upsert must not undo it.
	if err := n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 4, CrawlerIDs: []int64{1}}); !errors.Is(err, ErrStale) {
		t.Fatalf("stale remove: %v", err)
	}
	// A stale poll that does not list the subscriber must not drop it.
	if _, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 3}); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.table.subs[1]; !ok {
		t.Fatal("stale requests removed the subscriber")
	}
	// A request from another hub epoch detaches the node.
	if _, err := n.Poll(api.PollRequest{Epoch: "e2", Seq: 9}); !errors.Is(err, ErrEpoch) {
		t.Fatalf("foreign epoch: %v", err)
	}
	if n.attach.state != api.NodeDetached || len(n.table.subs) != 0 {
		t.Fatalf("after a new epoch: state %s, %d subscribers", n.attach.state, len(n.table.subs))
	}
}

func TestNode_FreshPollDropsUnlistedSubscribers(t *testing.T) {
	n, _, _ := attachedNode(t)
	_, _ = n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f"), spec(2, 1, "g")}})
	resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberRef{{CrawlerID: 2, Version: 1}, {CrawlerID: 3, Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.table.subs[1]; ok {
		t.Fatal("subscriber not listed by a fresh poll kept running")
	}
	states := map[int64]string{}
	for _, s := range resp.Subscribers {
		states[s.CrawlerID] = s.State
	}
	if states[2] != api.StateRunning || states[3] != api.StateMissing {
		t.Fatalf("statuses %v", states)
	}
}

func TestNode_LeaseBoundsWhatIsStored(t *testing.T) {
	n, kind, st := attachedNode(t)
	sp := spec(1, 1, "f")
	sp.Limited = true
	_, _ = n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{sp}})
	items := func(prefix string, k int) []source.Item {
		out := make([]source.Item, k)
		for i := range out {
			out[i] = source.Item{ID: prefix + string(rune('a'+i)), Text: "x", PublishedAt: time.Now()}
		}
		return out
	}
	// No lease yet: nothing is stored, the items wait.
	kind.send("f", items("a", 2)...)
	testkit.WaitFor(t, waitTimeout, "items held", func() bool { n.mu.Lock(); defer n.mu.Unlock(); return len(n.table.subs[1].backlog) == 2 })
	if st.count(1) != 0 {
		t.Fatal("stored without a lease")
	}
	inst := n.table.subs[1].instance
	_, _ = n.Poll(api.PollRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}},
		Leases: []api.Lease{{CrawlerID: 1, Instance: inst, Seq: 1, Total: 3, ExpiresAt: n.clock() + 60_000}}})
	testkit.WaitFor(t, waitTimeout, "held items stored once a lease came", func() bool { return st.count(1) == 2 })
	kind.send("f", items("b", 10)...)
	testkit.WaitFor(t, waitTimeout, "three stored", func() bool { return st.count(1) == 3 })
	// A lease for another instance, or an older grant, changes nothing.
	_, _ = n.Poll(api.PollRequest{Epoch: "e1", Seq: 3, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}},
		Leases: []api.Lease{{CrawlerID: 1, Instance: inst + 1, Seq: 9, Total: 100, ExpiresAt: n.clock() + 60_000}, {CrawlerID: 1, Instance: inst, Seq: 1, Total: 50, ExpiresAt: n.clock() + 60_000}}})
	kind.send("f", items("c", 10)...)
	testkit.WaitFor(t, waitTimeout, "usage reported", func() bool {
		r, _ := n.Poll(api.PollRequest{Epoch: "e1", Seq: 0})
		var sum int64
		for _, inc := range r.Increments {
			sum += inc.Count
		}
		return sum == 3
	})
	if got := st.count(1); got != 3 {
		t.Fatalf("stored %d comments against a lease of 3", got)
	}
	// An expired lease stores nothing either.
	_, _ = n.Poll(api.PollRequest{Epoch: "e1", Seq: 4, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}},
		Leases: []api.Lease{{CrawlerID: 1, Instance: inst, Seq: 2, Total: 100, ExpiresAt: n.clock() - 1}}})
	kind.send("f", items("d", 10)...)
	testkit.WaitFor(t, waitTimeout, "items held under an expired lease", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.table.subs[1].backlog) >= 10
	})
	if got := st.count(1); got != 3 {
		t.Fatalf("stored %d comments with an expired lease", got)
	}
}

func TestNode_StoreOutageLosesNothingCounted(t *testing.T) {
	n, kind, st := attachedNode(t)
	_, _ = n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}})
	st.fail.Store(true)
	kind.send("f", source.Item{ID: "1", Text: "x"}, source.Item{ID: "2", Text: "y"})
	testkit.WaitFor(t, waitTimeout, "store degraded", func() bool { return n.writer.health() == "degraded" })
	st.fail.Store(false)
	testkit.WaitFor(t, waitTimeout, "both written after recovery", func() bool { return st.count(1) == 2 && n.writer.health() == "ok" })
	resp, _ := n.Poll(api.PollRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}}})
	if len(resp.Increments) != 1 || resp.Increments[0].Count != 2 {
		t.Fatalf("increments %+v, want one of 2", resp.Increments)
	}
	// Acknowledged increments are not reported again.
	resp, _ = n.Poll(api.PollRequest{Epoch: "e1", Seq: 3, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}}, Acks: []uint64{resp.Increments[0].Seq}})
	if len(resp.Increments) != 0 {
		t.Fatalf("acknowledged increments reported again: %+v", resp.Increments)
	}
}

func TestNode_PassingSourceErrorsDoNotFailSubscribers(t *testing.T) {
	n, _, _ := attachedNode(t)
	_, _ = n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}})
	ds := n.table.sources["f"].ds.(*chanSource)
	cases := []struct {
		name      string
		err       error
		wantState string
	}{
		{"healthy", nil, api.StateRunning},
		{"a fetch failed, retrying", source.Degraded(errors.New("rss: timeout")), api.StateRunning},
		{"failing for good", errors.New("twitter: credentials refused"), api.StateFailed},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds.setErr(tc.err)
			resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: uint64(10 + i), Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			st := resp.Subscribers[0]
			if st.State != tc.wantState {
				t.Fatalf("state %s, want %s", st.State, tc.wantState)
			}
			if (tc.err != nil) != (st.Error != "") {
				t.Fatalf("error %q shown for source error %v", st.Error, tc.err)
			}
		})
	}
}

func TestNode_UpsertBatchTellsEachSourceOnce(t *testing.T) {
	n, _, _ := attachedNode(t)
	var specs []api.SubscriberSpec
	for i := range 500 {
		specs = append(specs, spec(int64(i+1), 1, "f"))
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs}); err != nil {
		t.Fatal(err)
	}
	ds := n.table.sources["f"]
	src := ds.ds.(*chanSource)
	src.mu.Lock()
	sets := src.sets
	src.mu.Unlock()
	if len(ds.subs) != 500 || sets != 1 {
		t.Fatalf("%d subscribers, source told %d times; want 500 subscribers, told once", len(ds.subs), sets)
	}
	// Outside a batch a change is told at once.
	_ = n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 2, CrawlerIDs: []int64{1}})
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.sets != 2 {
		t.Fatalf("after a removal the source was told %d times in all, want 2", src.sets)
	}
}
