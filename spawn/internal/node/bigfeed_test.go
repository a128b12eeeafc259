package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/rss"
)

// pollBound is how long a poll may wait while items flow: half the default
// poll timeout (2 s). A poll takes milliseconds; the margin is for a test
// machine running the race detector with many more runnable threads than
// cores.
const pollBound = time.Second

// bigFeed is an RSS document of n items, newest first, about 85 bytes an
// item.
func bigFeed(name string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>` + name + `</title>`)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := n; i > 0; i-- {
		fmt.Fprintf(&b, "<item><guid>%s-%d</guid><pubDate>%s</pubDate></item>\n", name, i, base.Add(time.Duration(i)*time.Second).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	return b.Bytes()
}

// TestNode_BigFeedsDoNotStarvePolls runs four rss crawlers on feeds of
// 100,000 items (8 MB each, under the 10 MiB document cap) on one node
// and polls it every few milliseconds while the items flow. Every poll is
// answered promptly, far within a poll timeout, whatever the data path is
// doing; a fetch takes a bounded number of items; and memory stays bounded.
func TestNode_BigFeedsDoNotStarvePolls(t *testing.T) {
	const (
		feeds, items = 4, 100_000
		// kept is what one fetch takes of a huge feed (rss's
		// maxItemsPerFetch): its newest items.
		kept = 1000
	)
	docs := map[string][]byte{}
	for i := range feeds {
		name := fmt.Sprintf("big%d", i)
		docs["/"+name+".xml"] = bigFeed(name, items)
	}
	t.Logf("feeds of %d items, %d bytes each", items, len(docs["/big0.xml"]))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)

	kind := rss.New(rss.Options{
		Client:   netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
		Interval: 50 * time.Millisecond,
	})
	st := &memStore{}
	n, err := New(Config{HubURL: "http://127.0.0.1:1", Store: st, Sources: source.Registry{"rss": kind},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OrphanAfter: time.Hour, DetachAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.mu.Lock()
	n.runCtx = ctx
	n.state, n.epoch, n.lastContact = api.NodeAttached, "e1", time.Now()
	n.mu.Unlock()
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); n.writer.run(ctx, ctx) }()
	t.Cleanup(func() { cancel(); <-writerDone; n.wg.Wait() })

	// Sample poll latency and heap while the items flow.
	var mu sync.Mutex
	var slowest time.Duration
	var polls int
	var peak uint64
	sampling, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for i := 0; sampling.Err() == nil; i++ {
			began := time.Now()
			if _, err := n.Poll(api.PollRequest{Epoch: "e1"}); err != nil {
				t.Error(err)
				return
			}
			took := time.Since(began)
			if i%4 == 0 {
				runtime.ReadMemStats(&ms)
			}
			mu.Lock()
			slowest, polls, peak = max(slowest, took), polls+1, max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-tick.C:
			case <-sampling.Done():
			}
		}
	}()

	began := time.Now()
	report := func() (slow time.Duration, heap uint64) {
		stopSampling()
		<-sampled
		mu.Lock()
		defer mu.Unlock()
		t.Logf("after %s: stored per crawler %d %d %d %d; %d polls, slowest %s; peak heap in use %d MB",
			time.Since(began).Round(time.Millisecond), st.count(1), st.count(2), st.count(3), st.count(4), polls, slowest.Round(time.Microsecond), peak>>20)
		return slowest, peak
	}
	t.Cleanup(func() {
		if t.Failed() {
			report()
		}
	})
	var specs []api.SubscriberSpec
	for i := range feeds {
		specs = append(specs, spec(int64(i+1), 1, fmt.Sprintf("%s/big%d.xml", srv.URL, i)))
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 25*time.Second, "every crawler's feed stored", func() bool {
		for i := range feeds {
			if st.count(int64(i+1)) < kept {
				return false
			}
		}
		return true
	})
	slow, heap := report()
	if slow > pollBound {
		t.Errorf("a poll took %s while items flowed, over %s", slow, pollBound)
	}
	for i := range feeds {
		if got := st.count(int64(i + 1)); got != kept {
			t.Errorf("crawler %d stored %d items of one fetch, want the newest %d", i+1, got, kept)
		}
	}
	if heap > 512<<20 {
		t.Errorf("peak heap in use %d MB", heap>>20)
	}
}

// TestNode_BigBatchDoesNotHoldPolls hands four subscribers a batch of
// 25,000 items each at once, as a source replaying a big backlog does, and
// polls the node meanwhile: a poll waits at most for a chunk of a batch to
// be matched, never for the whole batch.
func TestNode_BigBatchDoesNotHoldPolls(t *testing.T) {
	const feeds, items = 4, 25_000
	n, kind, st := attachedNode(t)
	var specs []api.SubscriberSpec
	for i := range feeds {
		specs = append(specs, spec(int64(i+1), 1, fmt.Sprintf("f%d", i)))
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs}); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	polls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range feeds {
			batch := make([]source.Item, items)
			for j := range batch {
				batch[j] = source.Item{ID: fmt.Sprintf("%d-%d", i, j), Text: "news", PublishedAt: time.Unix(int64(j), 0)}
			}
			kind.send(fmt.Sprintf("f%d", i), batch...)
		}
	}()
	testkit.WaitFor(t, 25*time.Second, "every batch stored", func() bool {
		began := time.Now()
		if _, err := n.Poll(api.PollRequest{Epoch: "e1"}); err != nil {
			t.Fatal(err)
		}
		slowest, polls = max(slowest, time.Since(began)), polls+1
		for i := range feeds {
			if st.count(int64(i+1)) < items {
				return false
			}
		}
		return true
	})
	<-done
	t.Logf("%d polls while %d items flowed, slowest %s", polls, feeds*items, slowest.Round(time.Microsecond))
	if slowest > pollBound {
		t.Errorf("a poll took %s, over %s", slowest, pollBound)
	}
}
