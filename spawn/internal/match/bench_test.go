package match

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Benchmark workload.
const (
	// benchVocabulary is how many distinct keywords subscribers choose from.
	benchVocabulary = 3000
	// benchKeywords is how many keywords each subscriber follows.
	benchKeywords = 3
	// benchTexts is how many distinct texts the benchmark cycles through.
	benchTexts = 1000
)

// BenchmarkMatch measures matching throughput (items/s) of an index of one
// subscriber and of 10,000 subscribers, each following 3 keywords drawn
// from a vocabulary of 3,000 topic words and phrases, against the same
// tweet-length texts that mention one to three vocabulary keywords. The
// point of the index is that the second is not 10,000 times slower. The
// index matches into a reused slice, as the spawn does. The
// "interleaved" sub-benchmark times both indexes in alternating blocks of
// texts, so that a busy machine slows both alike, and reports the ratio of
// their throughputs (10,000 subscribers / 1):
//
//	go test -run '^$' -bench Match -count 3 ./spawn/internal/match/
func BenchmarkMatch(b *testing.B) {
	vocab := vocabulary(benchVocabulary)
	corpus := texts(rand.New(rand.NewPCG(3, 4)), vocab, benchTexts)
	one, many := benchIndex(vocab, 1), benchIndex(vocab, 10000)
	for _, c := range []struct {
		n  int
		ix *Index
	}{{1, one}, {10000, many}} {
		b.Run(fmt.Sprintf("subscribers=%d", c.n), func(b *testing.B) {
			b.ReportAllocs()
			var buf []Hit
			bytes, hits, i := 0, 0, 0
			for b.Loop() {
				text := corpus[i%len(corpus)]
				buf = c.ix.AppendMatch(buf[:0], text)
				hits += len(buf)
				bytes += len(text)
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(hits)/float64(i), "hits/item")
			b.SetBytes(int64(bytes / i))
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		const block = 100 // texts timed per index in a row
		var took [2]time.Duration
		var buf []Hit
		items := 0
		for b.Loop() {
			for k, ix := range []*Index{one, many} {
				start := time.Now()
				for j := range block {
					buf = ix.AppendMatch(buf[:0], corpus[(items+j)%len(corpus)])
				}
				took[k] += time.Since(start)
			}
			items += block
		}
		perSec := func(d time.Duration) float64 { return float64(items) / d.Seconds() }
		b.ReportMetric(perSec(took[0]), "items/s(1)")
		b.ReportMetric(perSec(took[1]), "items/s(10000)")
		b.ReportMetric(perSec(took[1])/perSec(took[0]), "ratio")
	})
}

// benchIndex indexes n subscribers with benchKeywords random keywords each.
func benchIndex(vocab []string, n int) *Index {
	r := rand.New(rand.NewPCG(1, 2))
	subs := make(map[int64][]string, n)
	for id := range int64(n) {
		kws := make([]string, benchKeywords)
		for i := range kws {
			kws[i] = vocab[r.IntN(len(vocab))]
		}
		subs[id+1] = kws
	}
	return New(subs)
}
