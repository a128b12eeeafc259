// Package spawntest holds what the data source packages' tests share: a
// recorder of emitted items, and a real spawn node to run against their
// local servers, with an in-memory comment store, subscriber specs and the
// registration-only hub of internal/fakes/fakehub.
package spawntest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehub"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// MemStore keeps comment ids in memory, by crawler.
type MemStore struct {
	mu   sync.Mutex
	rows map[int64][]string
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{rows: map[int64][]string{}} }

// Write records the comments' ids, once each.
func (m *MemStore) Write(_ context.Context, cs []api.Comment) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		if !slices.Contains(m.rows[c.CrawlerID], c.ID) {
			m.rows[c.CrawlerID] = append(m.rows[c.CrawlerID], c.ID)
		}
	}
	return nil
}

// IDs lists a crawler's stored comment ids, sorted.
func (m *MemStore) IDs(crawler int64) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.rows[crawler])
	slices.Sort(out)
	return out
}

// Recent is not used by the tests.
func (m *MemStore) Recent(context.Context, int64, int) ([]api.Comment, error) { return nil, nil }

// Close does nothing.
func (m *MemStore) Close() error { return nil }

// WaitTimeout bounds every condition a source test waits for.
const WaitTimeout = 10 * time.Second

// Spec is a subscriber of source kind as the hub sends it: for a kind
// whose query is a list of URLs (rss), terms are the URLs and keywords a
// filter in the query language; for every other kind, terms are a query
// in the language (a list is their OR). The query is in canonical form
// with its query uuid.
func Spec(kind string, id int64, keywords []string, terms ...string) api.SubscriberSpec {
	s := api.SubscriberSpec{CrawlerID: id, UserID: 1, Version: 1, Source: kind}
	info, _ := api.NewSourceRegistry(api.BuiltinSources()...).Lookup(kind)
	if info.Query == api.QueryURLs {
		canon, err := query.URLs(terms)
		if err != nil {
			panic(err)
		}
		s.Query, s.QueryUUID = canon, query.UUID(kind, canon).String()
		if len(keywords) > 0 {
			f, err := query.ParseList(keywords)
			if err != nil {
				panic(err)
			}
			s.Keywords = []string{f.String()}
		}
		return s
	}
	q, err := query.ParseFields(terms, info.QueryFields)
	if err != nil {
		panic(err)
	}
	s.Query, s.QueryUUID = []string{q.String()}, q.UUID(kind).String()
	return s
}

// Recorder collects what a data source emits; Emit is its source.Emit.
type Recorder struct {
	mu    sync.Mutex
	items []source.Item
}

// Emit records items.
func (r *Recorder) Emit(ctx context.Context, items []source.Item) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, items...)
	return ctx.Err()
}

// All returns every item emitted so far, in order.
func (r *Recorder) All() []source.Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

// Count is how many emitted items carry id.
func (r *Recorder) Count(id string) int {
	n := 0
	for _, it := range r.All() {
		if it.ID == id {
			n++
		}
	}
	return n
}

// ByID returns the first emitted item with id.
func (r *Recorder) ByID(id string) (source.Item, bool) {
	for _, it := range r.All() {
		if it.ID == id {
			return it, true
		}
	}
	return source.Item{}, false
}

// Has reports whether every id was emitted.
func (r *Recorder) Has(ids ...string) bool {
	for _, id := range ids {
		if r.Count(id) == 0 {
			return false
		}
	}
	return true
}

// ExpectStored waits until each crawler has stored as many comments as want
// lists for it, then checks they are exactly those.
func ExpectStored(t *testing.T, st *MemStore, want map[int64][]string) {
	t.Helper()
	for crawler, ids := range want {
		slices.Sort(ids)
		testkit.WaitFor(t, WaitTimeout, "crawler comments", func() bool { return len(st.IDs(crawler)) >= len(ids) })
	}
	for crawler, ids := range want {
		if got := st.IDs(crawler); !slices.Equal(got, ids) {
			t.Errorf("crawler %d stored %v, want %v", crawler, got, ids)
		}
	}
}

// StartNode runs a real spawn node with kind registered as source name,
// storing into a new MemStore and registered with a fake hub, until the
// test ends. It returns once the node is attached.
func StartNode(t *testing.T, name string, kind source.Kind) (*node.Node, *MemStore) {
	t.Helper()
	st := NewMemStore()
	n, err := node.New(node.Config{
		HubURL: fakehub.Start(t), Store: st, Sources: source.Registry{name: kind},
		Logger: slog.New(slog.DiscardHandler), OrphanAfter: time.Hour, DetachAfter: time.Hour,
		// What the source reads, as it reads it: no detected language
		// or sentiment (the node's own tests cover those).
		NoSentiment: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx, nodeStopTimeout) }()
	t.Cleanup(func() { cancel(); <-done })
	testkit.WaitFor(t, WaitTimeout, "registration", func() bool { return n.Health(true).State == api.NodeAttached })
	return n, st
}

// Subscribe hands n specs as its first subscribers of epoch "e1" and fails
// the test when the node refuses any of them.
func Subscribe(t *testing.T, n *node.Node, specs ...api.SubscriberSpec) {
	t.Helper()
	resp, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.Error != "" {
			t.Fatalf("crawler %d: %s", r.CrawlerID, r.Error)
		}
	}
}

// nodeStopTimeout is how long StartNode's node may take to stop.
const nodeStopTimeout = 5 * time.Second

// runStopTimeout bounds how long Run may take to return once cancelled.
const runStopTimeout = 5 * time.Second

// Start builds the data source kind serves for specs (every spec must map
// to key alone), runs it into a Recorder until the test ends, and checks
// that Run returns promptly once cancelled.
func Start(t *testing.T, kind source.Kind, key string, specs ...api.SubscriberSpec) (source.DataSource, *Recorder) {
	t.Helper()
	for _, s := range specs {
		keys, err := kind.Keys(Sub(t, s))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(keys, []string{key}) {
			t.Fatalf("keys %v, want [%s]", keys, key)
		}
	}
	ds, err := kind.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ds.SetSubscribers(Subs(t, specs...))
	rec := &Recorder{}
	Run(t, ds, rec.Emit)
	return ds, rec
}

// Run runs ds into emit until the test ends, and checks that Run returns
// promptly once cancelled.
func Run(t *testing.T, ds source.DataSource, emit source.Emit) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ds.Run(ctx, emit)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(runStopTimeout):
			t.Error("Run did not return after its context ended")
		}
	})
}

// Sub is spec as the node hands it to its data sources: its query parsed
// once (for a kind whose query is URLs, its keyword filter; nil without
// one). A query that does not parse gives a nil Query: the node refuses
// such a subscriber before any kind sees it, and a kind handed no query
// must refuse it too.
func Sub(tb testing.TB, spec api.SubscriberSpec) source.Sub {
	tb.Helper()
	terms := spec.Query
	info, _ := api.NewSourceRegistry(api.BuiltinSources()...).Lookup(spec.Source)
	if info.Query == api.QueryURLs {
		if terms = spec.Keywords; len(terms) == 0 {
			return source.Sub{Spec: spec}
		}
	}
	q, err := query.ParseFields(terms, info.QueryFields)
	if err != nil {
		return source.Sub{Spec: spec}
	}
	return source.Sub{Spec: spec, Query: q}
}

// Subs is Sub of each spec.
func Subs(tb testing.TB, specs ...api.SubscriberSpec) []source.Sub {
	tb.Helper()
	out := make([]source.Sub, len(specs))
	for i, s := range specs {
		out[i] = Sub(tb, s)
	}
	return out
}
