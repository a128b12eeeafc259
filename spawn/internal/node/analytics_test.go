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
				for _, inc := range n.incs {
					counted += inc.Count
				}
				return st.count(1) == sent && counted == sent
			})
			n.mu.Lock()
			defer n.mu.Unlock()
			var golang int64
			for _, inc := range n.incs {
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

// BenchmarkThroughputTerms is BenchmarkThroughput's unlimited case with
// social-post texts, with the analytics on and off: their cost is the
// ratio of the two.
func BenchmarkThroughputTerms(b *testing.B) {
	for _, off := range []bool{true, false} {
		name := "analytics=on"
		if off {
			name = "analytics=off"
		}
		b.Run(name, func(b *testing.B) {
			st := &memStore{}
			n, kind := attachedNodeConfig(b, Config{Store: st, NoAnalytics: off})
			if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
				b.Fatal(err)
			}
			const batch = 100
			b.ResetTimer()
			sent := 0
			for i := 0; i < b.N; i += batch {
				items := make([]source.Item, batch)
				for j := range items {
					items[j] = source.Item{ID: fmt.Sprint(i + j), Author: fmt.Sprint("author", (i+j)%97), Text: tweetLike(i + j),
						PublishedAt: time.Unix(int64(i+j), 0), FetchedAt: time.Now()}
				}
				kind.send("f", items...)
				sent += batch
			}
			testkit.WaitFor(b, time.Minute, "every comment stored", func() bool { return st.count(1) >= sent })
			b.StopTimer()
			b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "comments/s")
		})
	}
}
