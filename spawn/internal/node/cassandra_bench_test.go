package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/cassandra"
)

// cassandraRound is how many comments a node of
// BenchmarkThroughputTermsCassandra stores per round.
const cassandraRound = 5000

// BenchmarkThroughputTermsCassandra is BenchmarkThroughputTerms with the
// spawn's real store: Cassandra (BW_TEST_CASSANDRA; scripts/services.sh up
// starts one), written the way a spawn writes (usage intents first, then
// the keys of the batch read so a comment stored before is not counted
// twice, then the new rows). One spawn counts terms and one does not, in
// alternating rounds of 5,000 comments; the ratio of their throughputs
// (on / off) is what term counting costs a spawn that stores what it
// collects:
//
//	go test -run '^$' -bench ThroughputTermsCassandra -benchtime 50000x -count 3 ./spawn/internal/node/
func BenchmarkThroughputTermsCassandra(b *testing.B) {
	addr := os.Getenv("BW_TEST_CASSANDRA")
	if addr == "" {
		b.Skip("BW_TEST_CASSANDRA not set (scripts/services.sh up starts Cassandra)")
	}
	var tag [4]byte
	if _, err := rand.Read(tag[:]); err != nil {
		b.Fatal(err)
	}
	keyspace := "bw_bench_terms_" + hex.EncodeToString(tag[:])
	ctx := context.Background()
	st, err := cassandra.Open(ctx, "cassandra://"+addr+"/"+keyspace, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		st.Close()
		c := gocql.NewCluster(addr)
		c.ProtoVersion, c.Timeout, c.Logger = 4, 30*time.Second, log.New(io.Discard, "", 0)
		if s, err := c.CreateSession(); err == nil {
			_ = s.Query("DROP KEYSPACE IF EXISTS " + keyspace).Exec()
			s.Close()
		}
	})

	type node struct {
		n    *Node
		kind *chanKind
		sent int
		took time.Duration
		acks []uint64
	}
	var nodes [2]*node // analytics off, on
	for k, off := range []bool{true, false} {
		n, kind := attachedNodeConfig(b, Config{Store: st, NoAnalytics: off, StoreLinger: benchLinger})
		// Each spawn has a crawler of its own: they write to partitions
		// of their own.
		if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(int64(k+1), 1, "f")}}); err != nil {
			b.Fatal(err)
		}
		nodes[k] = &node{n: n, kind: kind}
	}
	round := func(k int, nd *node) {
		items := make([]source.Item, cassandraRound)
		now := time.Now()
		for j := range items {
			i := nd.sent + j
			items[j] = source.Item{ID: fmt.Sprintf("%s-%d-%d", keyspace, k, i), Author: fmt.Sprint("author", i%97), Text: tweetLike(i),
				PublishedAt: now.Add(-time.Duration(j) * time.Millisecond), FetchedAt: now}
		}
		start := time.Now()
		for j := 0; j < len(items); j += 100 {
			nd.kind.send("f", items[j:j+100]...)
		}
		nd.sent += cassandraRound
		deadline := start.Add(2 * time.Minute)
		for stored(nd.n, int64(k+1)) < int64(nd.sent) || !settled(nd.n) {
			if time.Now().After(deadline) {
				b.Fatalf("stored %d of %d comments", stored(nd.n, int64(k+1)), nd.sent)
			}
			time.Sleep(100 * time.Microsecond)
		}
		nd.took += time.Since(start)
		nd.acks = ackUsage(b, nd.n, nd.acks)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += cassandraRound {
		for k, nd := range nodes {
			round(k, nd)
		}
	}
	perSec := func(nd *node) float64 { return float64(nd.sent) / nd.took.Seconds() }
	b.ReportMetric(perSec(nodes[0]), "comments/s(off)")
	b.ReportMetric(perSec(nodes[1]), "comments/s(on)")
	b.ReportMetric(perSec(nodes[1])/perSec(nodes[0]), "ratio")
}

// stored is how many comments a node's subscriber has stored.
func stored(n *Node, crawlerID int64) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.subs[crawlerID]; ok {
		return s.stored
	}
	return 0
}
