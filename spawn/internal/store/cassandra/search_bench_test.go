package cassandra

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/storetest"
)

// BenchmarkSearch measures search over a million stored comments of one
// crawler against exporting them all (docs/benchmarks.md). The comments are
// written once into the keyspace BW_BENCH_KEYSPACE (default
// bw_search_bench_v<version>_<count>, kept for the next run).
func BenchmarkSearch(b *testing.B) {
	addr := testAddr(b)
	ks := os.Getenv("BW_BENCH_KEYSPACE")
	if ks == "" {
		ks = fmt.Sprintf("bw_search_bench_v%d_%d", storetest.BenchVersion, storetest.BenchComments())
	}
	s, err := Open(context.Background(), "cassandra://"+addr+"/"+ks, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	// A loaded node takes the load better with fewer writes in flight.
	if n, err := strconv.Atoi(os.Getenv("BW_BENCH_STORE_INFLIGHT")); err == nil && n > 0 {
		s.inFlight = n
	}
	storetest.BenchSearch(b, s, true)
}
