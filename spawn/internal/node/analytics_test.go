package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// tweetLike is the text of item i: a few words, a shared and a varying
// hashtag, a mention and a URL, as a social post has.
func tweetLike(i int) string {
	return fmt.Sprintf("Go 1.%d released with faster generics and a new iterator package #golang #topic%d @gopher%d https://go.dev/blog/%d", i%30, i%50, i%20, i)
}

func TestNode_IncrementsCarryTheirCommentsAnalytics(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoAnalytics=%v", off), func(t *testing.T) {
			st := &memStore{}
			n, kind := attachedNodeConfig(t, Config{Store: st, NoAnalytics: off})
			if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
				t.Fatal(err)
			}
			const sent = 300
			for i := range sent {
				kind.send("f", source.Item{ID: fmt.Sprint(i), Author: fmt.Sprint("a", i%10), Text: tweetLike(i), PublishedAt: time.Unix(int64(i), 0), FetchedAt: time.Now()})
			}
			testkit.WaitFor(t, waitTimeout, "every comment stored and counted", func() bool {
				n.mu.Lock()
				defer n.mu.Unlock()
				var counted int64
				for _, inc := range n.usage.incs {
					counted += inc.Count
				}
				return st.count(1) == sent && counted == sent
			})
			n.mu.Lock()
			defer n.mu.Unlock()
			var golang int64
			for _, inc := range n.usage.incs {
				if off {
					if inc.Analytics != nil {
						t.Fatalf("increment %d carries analytics with analytics off", inc.Seq)
					}
					continue
				}
				var minutes int64
				for _, m := range inc.Analytics.Minutes {
					minutes += m.Comments
				}
				if minutes != inc.Count {
					t.Fatalf("increment %d: %d comments in its minutes, count %d", inc.Seq, minutes, inc.Count)
				}
				for _, h := range inc.Analytics.Terms {
					for _, tc := range h.Terms {
						if tc.Term == "#golang" {
							golang += tc.Count
						}
					}
				}
			}
			if !off && golang != sent {
				t.Fatalf("#golang counted %d times, want %d", golang, sent)
			}
		})
	}
}

// termsRound is how many comments a round of BenchmarkThroughputTerms
// sends to each node.
const termsRound = 20000

// benchLinger is the store writer's linger in the throughput benchmarks.
// A benchmark's round ends when its last comment is stored, and with the
// default linger (20 ms) the last partial batch of a round waits for it
// whenever the writer has caught up with the data source, and not when it
// is behind: a round's time would then swing by up to 20 ms on whether the
// spawn was slow enough. A steady stream never waits for the linger (a
// batch fills first), so a short one measures what the spawn does under
// load.
const benchLinger = time.Millisecond

// termsNode is a node of the term-counting benchmarks: one unlimited
// subscriber (crawler) on a channel-fed data source.
type termsNode struct {
	n       *Node
	kind    *chanKind
	crawler int64
	size    int                                    // items per round
	item    func(i int, now time.Time) source.Item // the i-th item sent
	after   func()                                 // between rounds, outside the timing; may be nil
	sent    int
	took    time.Duration
	acks    []uint64
}

// round sends size items in batches of 100 and waits until they are
// stored and recorded as usage, with their analytics (settled); the items
// are made before the clock starts. Between rounds, outside the timing,
// usage is acknowledged as the hub would, and after runs.
func (tn *termsNode) round(b *testing.B) {
	const batch = 100
	batches := make([][]source.Item, tn.size/batch)
	now := time.Now()
	for k := range batches {
		batches[k] = make([]source.Item, batch)
		for j := range batches[k] {
			batches[k][j] = tn.item(tn.sent+k*batch+j, now)
		}
	}
	start := time.Now()
	for _, items := range batches {
		tn.kind.send("f", items...)
	}
	tn.sent += tn.size
	deadline := start.Add(2 * time.Minute)
	for stored(tn.n, tn.crawler) < int64(tn.sent) || !settled(tn.n) { // a tight wait: a round takes tens of milliseconds
		if time.Now().After(deadline) {
			b.Fatalf("stored %d of %d comments", stored(tn.n, tn.crawler), tn.sent)
		}
		time.Sleep(50 * time.Microsecond)
	}
	tn.took += time.Since(start)
	tn.acks = ackUsage(b, tn.n, tn.acks)
	if tn.after != nil {
		tn.after()
	}
}

// termsRatio runs the two nodes (analytics off, on) in alternating
// rounds until each has sent b.N items, in whole rounds, and reports
// their throughputs and the ratio on / off.
func termsRatio(b *testing.B, nodes [2]*termsNode) {
	b.ResetTimer()
	for i := 0; i < b.N; i += nodes[0].size {
		for _, tn := range nodes {
			tn.round(b)
		}
	}
	perSec := func(tn *termsNode) float64 { return float64(tn.sent) / tn.took.Seconds() }
	b.ReportMetric(perSec(nodes[0]), "comments/s(off)")
	b.ReportMetric(perSec(nodes[1]), "comments/s(on)")
	b.ReportMetric(perSec(nodes[1])/perSec(nodes[0]), "ratio")
}

// stored is how many comments a node's subscriber has stored and
// recorded as usage.
func stored(n *Node, crawlerID int64) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.table.subs[crawlerID]; ok {
		return s.stored
	}
	return 0
}

// BenchmarkThroughputTerms is BenchmarkThroughput's unlimited case with
// social-post texts, with the analytics off in one node and on in
// another: their cost is the ratio of the two throughputs. The nodes run
// in alternating rounds of 20,000 comments, so that a busy machine slows
// both alike, and the ratio (on / off) is measured in the same run. b.N
// counts the comments each node stores, in whole rounds:
//
//	go test -run '^$' -bench ThroughputTerms -benchtime 400000x -count 3 ./spawn/internal/node/
func BenchmarkThroughputTerms(b *testing.B) {
	var nodes [2]*termsNode // analytics off, on
	for k, off := range []bool{true, false} {
		st := &memStore{}
		n, kind := attachedNodeConfig(b, Config{Store: st, NoAnalytics: off, StoreLinger: benchLinger})
		if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
			b.Fatal(err)
		}
		nodes[k] = &termsNode{n: n, kind: kind, crawler: 1, size: termsRound,
			item: func(i int, now time.Time) source.Item {
				return source.Item{ID: fmt.Sprint(i), Author: fmt.Sprint("author", i%97), Text: tweetLike(i),
					PublishedAt: time.Unix(int64(i), 0), FetchedAt: now}
			},
			// The store is emptied, so that the comments kept in memory
			// do not make the garbage collector's work grow round after
			// round (a real store keeps them outside the spawn's heap).
			after: func() {
				st.mu.Lock()
				st.rows = nil
				st.mu.Unlock()
			}}
	}
	termsRatio(b, nodes)
}
