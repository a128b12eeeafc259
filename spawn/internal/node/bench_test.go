package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// BenchmarkThroughput pushes comments through one subscriber — filter,
// de-duplication, lease check, store buffer, store, usage increment — with
// leases off (an unlimited crawler) and on (a limited crawler holding a
// lease large enough never to run out). The ratio on/off is the cost of
// exact limits: go test -bench Throughput ./spawn/internal/node/
func BenchmarkThroughput(b *testing.B) {
	for _, limited := range []bool{false, true} {
		name := "leases=off"
		if limited {
			name = "leases=on"
		}
		b.Run(name, func(b *testing.B) {
			n, kind, st := attachedNode(b)
			sp := spec(1, 1, "f")
			sp.Limited = limited
			if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{sp}}); err != nil {
				b.Fatal(err)
			}
			if limited {
				n.mu.Lock()
				s := n.table.subs[1]
				s.leaseSeq, s.leaseTotal, s.leaseUntil = 1, 1<<62, n.clock()+int64(time.Hour/time.Millisecond)
				n.mu.Unlock()
			}
			const batch = 100
			b.ResetTimer()
			sent := 0
			for i := 0; i < b.N; i += batch {
				items := make([]source.Item, batch)
				for j := range items {
					items[j] = source.Item{ID: fmt.Sprint(i + j), Text: "a comment about golang", PublishedAt: time.Unix(int64(i+j), 0)}
				}
				kind.send("f", items...)
				sent += batch
			}
			deadline := time.Now().Add(time.Minute)
			for st.count(1) < sent {
				if time.Now().After(deadline) {
					n.mu.Lock()
					s := n.table.subs[1]
					b.Fatalf("stored %d of %d (reserved %d, rejected %d, node stored %d, buffered %d, backlog %d)", st.count(1), sent, s.reserved, s.rejected, s.stored, n.writer.queued(), len(s.backlog))
				}
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "comments/s")
		})
	}
}
