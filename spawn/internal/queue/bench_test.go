package queue

import (
	"context"
	"fmt"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// benchBatch is the writer's largest batch (node.writerBatch).
const benchBatch = 512

// BenchmarkPublish compares the ways of publishing a batch (see
// publishMode) against the test server; one op is one batch of 512
// comments, so comments/s is 512 × ops/s.
//
//	BW_TEST_NATS=nats://127.0.0.1:54222 go test -run '^$' -bench Publish -benchtime 200x -count 5 ./spawn/internal/queue/
func BenchmarkPublish(b *testing.B) {
	url := testkit.Service(b, "BW_TEST_NATS")
	modes := []struct {
		name string
		mode publishMode
	}{
		{"jetstream-async", modeJetStreamAsync},
		{"jetstream-sync", modeJetStreamSync},
		{"core", modeCore},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			prefix, stream := isolated(b, url)
			c := testConn(b, url, prefix, stream)
			if m.mode == modeCore {
				// Subjects no stream takes: plain core NATS.
				c.js, c.prefix = nil, prefix+"_core"
			}
			c.mode = m.mode
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				// New ids every op, so JetStream stores every message
				// instead of dropping duplicates.
				if err := c.Publish(ctx, comments(int64(i%16), fmt.Sprint("op", i), benchBatch)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "comments/s")
		})
	}
}
