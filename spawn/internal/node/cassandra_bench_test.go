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

	var nodes [2]*termsNode // analytics off, on
	for k, off := range []bool{true, false} {
		n, kind := attachedNodeConfig(b, Config{Store: st, NoAnalytics: off, StoreLinger: benchLinger})
		// Each spawn has a crawler of its own: they write to partitions
		// of their own.
		crawler := int64(k + 1)
		if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(crawler, 1, "f")}}); err != nil {
			b.Fatal(err)
		}
		nodes[k] = &termsNode{n: n, kind: kind, crawler: crawler, size: cassandraRound,
			item: func(i int, now time.Time) source.Item {
				return source.Item{ID: fmt.Sprintf("%s-%d-%d", keyspace, k, i), Author: fmt.Sprint("author", i%97), Text: tweetLike(i),
					PublishedAt: now.Add(-time.Duration(i%cassandraRound) * time.Millisecond), FetchedAt: now}
			}}
	}
	termsRatio(b, nodes)
}
