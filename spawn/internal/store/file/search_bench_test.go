package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/storetest"
)

// BenchmarkSearch measures search over a million stored comments of one
// crawler against exporting them all (docs/benchmarks.md). The comments are
// written once into BW_BENCH_DIR (default: a directory under the system's
// temporary directory named for the benchmark's version and count, kept for
// the next run).
func BenchmarkSearch(b *testing.B) {
	dir := os.Getenv("BW_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("bw-search-bench-v%d-%d", storetest.BenchVersion, storetest.BenchComments()))
	}
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	storetest.BenchSearch(b, s, false)
}
