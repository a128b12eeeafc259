package node

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/rss"
)

// pollBound is how long a poll may wait while items flow: half the default
// poll timeout (2 s). A poll takes milliseconds; the margin is for a test
// machine running the race detector with many more runnable threads than
// cores.
const pollBound = time.Second

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
		docs["/"+name+".xml"] = feedserver.BigRSS(name, items)
	}
	t.Logf("feeds of %d items, %d bytes each", items, len(docs["/big0.xml"]))
	feedURL := feedserver.StartStatic(t, docs)

	kind := rss.New(rss.Options{
		Client:   netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
		Interval: 50 * time.Millisecond,
	})
	st := &memStore{}
	n := attachNode(t, Config{Store: st, Sources: source.Registry{"rss": kind}})

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
		specs = append(specs, spec(int64(i+1), 1, fmt.Sprintf("%s/big%d.xml", feedURL, i)))
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
