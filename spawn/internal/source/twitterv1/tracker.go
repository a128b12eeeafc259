package twitterv1

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	gotwitter "github.com/dghubble/go-twitter/twitter"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// counters are what the tracker has done, for tests and diagnostics.
type counters struct {
	attempts      atomic.Int64 // stream connection attempts
	connects      atomic.Int64 // attempts answered with 200
	keepAlives    atomic.Int64
	networkErrors atomic.Int64
	httpErrors    atomic.Int64
	rateLimited   atomic.Int64
	stalls        atomic.Int64
	tooLarge      atomic.Int64
	truncated     atomic.Int64
	malformed     atomic.Int64
	unmatched     atomic.Int64 // tweets matching no tracked term, dropped
	emitted       atomic.Int64 // items handed to the spawn
	backfills     atomic.Int64 // backfills completed
	backfilled    atomic.Int64 // items found by backfills and handed over
}

// tracker is the node's twitter data source.
type tracker struct {
	opts      Options
	apiURL    *url.URL
	filterURL string
	logger    *slog.Logger
	stream    *http.Client // signs; no overall timeout
	changed   chan struct{}
	matcher   atomic.Pointer[matcher]
	stats     counters

	mu        sync.Mutex
	want      []string        // sorted union of the subscribers' terms
	errs      source.ErrorSet // by part: "stream 3", "backfill"
	seen      map[string]struct{}
	seenOrder []string
}

func newTracker(opts Options, apiURL *url.URL, filterURL string) *tracker {
	base := opts.Client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	t := &tracker{
		opts:      opts,
		apiURL:    apiURL,
		filterURL: filterURL,
		logger:    opts.Logger.With("source", Key),
		stream:    &http.Client{Transport: signer(opts.Credentials, base), CheckRedirect: opts.Client.CheckRedirect},
		changed:   make(chan struct{}, 1),
		seen:      map[string]struct{}{},
	}
	t.matcher.Store(newMatcher(nil))
	return t
}

// searchClient is go-twitter's client for backfills, bound to ctx, with
// the API base rewritten, requests signed and responses capped.
func (t *tracker) searchClient(ctx context.Context) *gotwitter.Client {
	base := t.opts.Client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	var rt http.RoundTripper = limitTransport{max: maxSearchBodyBytes, base: base}
	rt = signer(t.opts.Credentials, rt)
	rt = rewriteTransport{to: t.apiURL, base: rt}
	rt = contextTransport{ctx: ctx, base: rt}
	return gotwitter.NewClient(&http.Client{Transport: rt, Timeout: t.opts.SearchTimeout, CheckRedirect: t.opts.Client.CheckRedirect})
}

// SetSubscribers takes the union of the track terms of the subscribers'
// queries. A changed union
// makes Run open or reopen the streams after ReopenDelay, which gathers a
// burst of changes into one reconnect. It never blocks: the node calls it
// under its lock.
func (t *tracker) SetSubscribers(subs []source.Sub) {
	var union []string
	for _, s := range subs {
		// A query that does not compile failed its subscriber in Keys.
		terms, _ := trackTerms(s.Query)
		union = append(union, terms...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	t.mu.Lock()
	same := slices.Equal(union, t.want)
	if !same {
		t.want = union
		t.matcher.Store(newMatcher(union))
	}
	t.mu.Unlock()
	if !same {
		source.Signal(t.changed)
	}
}

func (t *tracker) wantTerms() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.want)
}

// Err joins the current errors of the parts; nil when all is well.
func (t *tracker) Err() error { return t.errs.Err() }

// setErr records a part's error: reconnects and bad messages pass; wrong
// credentials do not.
func (t *tracker) setErr(part string, err error) {
	t.errs.Set(part, source.DegradedUnless(err, ErrUnauthorized))
}

// deliver hands over the items not handed over before. An item counts as
// handed over only once emit accepted it, so one lost to a stopping
// connection can still come from a backfill.
func (t *tracker) deliver(ctx context.Context, emit source.Emit, items []source.Item) error {
	t.mu.Lock()
	fresh := items[:0:0]
	for _, it := range items {
		if _, ok := t.seen[it.ID]; !ok {
			fresh = append(fresh, it)
		}
	}
	t.mu.Unlock()
	if len(fresh) == 0 {
		return nil
	}
	if err := emit(ctx, fresh); err != nil {
		return err
	}
	t.stats.emitted.Add(int64(len(fresh)))
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range fresh {
		if _, ok := t.seen[it.ID]; ok {
			continue
		}
		t.seen[it.ID] = struct{}{}
		t.seenOrder = append(t.seenOrder, it.ID)
	}
	if over := len(t.seenOrder) - t.opts.SeenLimit; over > 0 {
		for _, id := range t.seenOrder[:over] {
			delete(t.seen, id)
		}
		t.seenOrder = append(t.seenOrder[:0], t.seenOrder[over:]...)
	}
	return nil
}

// Run keeps the streams open for the current terms, and backfills after
// every reconnect, until ctx ends.
func (t *tracker) Run(ctx context.Context, emit source.Emit) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bf := newBackfiller(t, t.searchClient(ctx), emit)
	wg.Go(func() { bf.run(ctx) })
	m := &manager{t: t, emit: emit, bf: bf}
	m.run(ctx)
}

// manager shares the terms out among stream connections (workers) of at
// most MaxTrackTerms each, and reopens only the ones whose terms changed.
type manager struct {
	t       *tracker
	emit    source.Emit
	bf      *backfiller
	workers []*worker
	nextID  int
}

func (m *manager) run(ctx context.Context) {
	defer m.stopAll()
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.t.changed:
			// The first open waits too: a node adds the subscribers of
			// one request one by one, and they should share the first
			// connection instead of causing an immediate re-open.
			if debounce == nil {
				debounce = time.After(m.t.opts.ReopenDelay)
			}
		case <-debounce:
			debounce = nil
			m.apply(ctx)
		}
	}
}

// apply moves the workers to the current terms: terms no longer wanted
// leave their worker, new terms fill workers with room first, then new
// workers. When removals leave more workers than the terms need, all are
// rebuilt, so the connection count stays at its minimum.
func (m *manager) apply(ctx context.Context) {
	want := m.t.wantTerms()
	needed := (len(want) + MaxTrackTerms - 1) / MaxTrackTerms
	// A worker started now backfills from now on its first connection
	// when the tracker has streamed before: its terms may have been on
	// another connection until a moment ago, or belong to a subscriber
	// that is waiting for them.
	var from time.Time
	if m.t.stats.connects.Load() > 0 {
		from = time.Now()
	}
	if len(m.workers) > needed {
		m.stopAll()
	}
	wanted := make(map[string]bool, len(want))
	for _, term := range want {
		wanted[term] = true
	}
	assigned := map[string]bool{}
	changed := map[*worker]bool{}
	for _, w := range m.workers {
		kept := w.terms[:0:0]
		for _, term := range w.terms {
			if wanted[term] {
				kept = append(kept, term)
				assigned[term] = true
			}
		}
		if len(kept) != len(w.terms) {
			changed[w] = true
		}
		w.terms = kept
	}
	var rest []string
	for _, term := range want {
		if !assigned[term] {
			rest = append(rest, term)
		}
	}
	for _, w := range m.workers {
		if room := MaxTrackTerms - len(w.terms); room > 0 && len(rest) > 0 {
			n := min(room, len(rest))
			w.terms = append(w.terms, rest[:n]...)
			rest = rest[n:]
			changed[w] = true
		}
	}
	kept := m.workers[:0]
	for _, w := range m.workers {
		switch {
		case len(w.terms) == 0:
			w.stop()
			m.t.setErr(w.name, nil)
		case changed[w]:
			slices.Sort(w.terms)
			w.reopen(slices.Clone(w.terms))
			kept = append(kept, w)
		default:
			kept = append(kept, w)
		}
	}
	m.workers = kept
	for len(rest) > 0 {
		n := min(MaxTrackTerms, len(rest))
		m.start(ctx, slices.Clone(rest[:n]), from)
		rest = rest[n:]
	}
}

func (m *manager) start(ctx context.Context, terms []string, backfillFrom time.Time) {
	m.nextID++
	wctx, cancel := context.WithCancel(ctx)
	w := &worker{
		t:      m.t,
		bf:     m.bf,
		emit:   m.emit,
		id:     m.nextID,
		name:   fmt.Sprintf("stream %d", m.nextID),
		terms:  terms,
		update: make(chan []string, 1),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	m.workers = append(m.workers, w)
	go w.run(wctx, slices.Clone(terms), backfillFrom)
}

func (m *manager) stopAll() {
	for _, w := range m.workers {
		w.stop()
		m.t.setErr(w.name, nil)
	}
	m.workers = nil
}
