package cassandra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// BenchmarkWriteCluster compares the store's Write path on the lone test
// node (BW_TEST_CASSANDRA: one copy, LOCAL_ONE) with the same path on the
// three-node test cluster (BW_TEST_CASSANDRA_CLUSTER from
// scripts/cassandra-cluster.sh: three copies, QUORUM), in one run.
// scripts/bench-store.sh --cluster runs it and prints the ratio.
func BenchmarkWriteCluster(b *testing.B) {
	single := testAddr(b)
	cluster := os.Getenv("BW_TEST_CASSANDRA_CLUSTER")
	if cluster == "" {
		b.Skip("BW_TEST_CASSANDRA_CLUSTER not set (scripts/cassandra-cluster.sh up starts the cluster)")
	}
	ctx := context.Background()
	open := func(b *testing.B, uri string) *Store {
		b.Helper()
		st, err := Open(ctx, uri, testLogger(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}
	singleStore := open(b, "cassandra://"+single+"/"+newKeyspace(b))
	clusterStore := open(b, "cassandra://"+cluster+"/"+clusterKeyspace(b, cluster)+"?replication=3&consistency=quorum")

	b.Run("single", benchWrites(ctx, singleStore, benchComments))
	b.Run("cluster", benchWrites(ctx, clusterStore, benchComments))
}

// clusterKeyspace names a fresh keyspace on the cluster at hosts and drops
// it when the benchmark ends.
func clusterKeyspace(tb testing.TB, hosts string) string {
	tb.Helper()
	ks := newKeyspaceName(tb)
	tb.Cleanup(func() {
		c := gocql.NewCluster(strings.Split(hosts, ",")...)
		c.ProtoVersion = 4
		c.Consistency = gocql.Quorum
		c.Timeout = 30 * time.Second
		c.Logger = log.New(io.Discard, "", 0)
		s, err := c.CreateSession()
		if err != nil {
			tb.Errorf("connect to %s: %v", hosts, err)
			return
		}
		defer s.Close()
		if err := s.Query(`DROP KEYSPACE IF EXISTS ` + ks).Exec(); err != nil {
			tb.Errorf("drop keyspace %s: %v", ks, err)
		}
	})
	return ks
}

// newKeyspaceName is a keyspace name no other run uses.
func newKeyspaceName(tb testing.TB) string {
	tb.Helper()
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "bwcluster_" + hex.EncodeToString(b[:])
}
