package match

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// benchAuthors is how many distinct authors the benchmark's items have.
const benchAuthors = 1000

// BenchmarkQueryIndex measures matching throughput (items/s) of a query
// index of one subscriber and of 10,000 subscribers with boolean queries
// over the benchmark vocabulary — ORs, ANDs, negations, phrases, #tags,
// from: and lang: — against the tweet-length texts of BenchmarkMatch,
// with an author and a language each. The "interleaved" sub-benchmark
// times both in alternating blocks and reports the ratio of their
// throughputs (10,000 subscribers / 1), which should stay at 0.5 or more:
//
//	go test -run '^$' -bench QueryIndex -count 3 ./spawn/internal/match/
func BenchmarkQueryIndex(b *testing.B) {
	vocab := vocabulary(benchVocabulary)
	r := rand.New(rand.NewPCG(3, 4))
	corpus := texts(r, vocab, benchTexts)
	items := make([]Item, len(corpus))
	for i, text := range corpus {
		items[i] = Item{Text: text, Author: fmt.Sprintf("user%d", r.IntN(benchAuthors)), Lang: []string{"en", "en-US", "fr", "de"}[r.IntN(4)]}
	}
	one, many := benchQueryIndex(b, vocab, 1), benchQueryIndex(b, vocab, 10000)
	for _, c := range []struct {
		n  int
		ix *QueryIndex
	}{{1, one}, {10000, many}} {
		b.Run(fmt.Sprintf("subscribers=%d", c.n), func(b *testing.B) {
			b.ReportAllocs()
			var buf []QueryHit
			hits, i := 0, 0
			for b.Loop() {
				buf = c.ix.AppendMatch(buf[:0], items[i%len(items)])
				hits += len(buf)
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(hits)/float64(i), "hits/item")
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		const block = 100 // items timed per index in a row
		var took [2]time.Duration
		var buf []QueryHit
		n := 0
		for b.Loop() {
			for k, ix := range []*QueryIndex{one, many} {
				start := time.Now()
				for j := range block {
					buf = ix.AppendMatch(buf[:0], items[(n+j)%len(items)])
				}
				took[k] += time.Since(start)
			}
			n += block
		}
		perSec := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
		b.ReportMetric(perSec(took[0]), "items/s(1)")
		b.ReportMetric(perSec(took[1]), "items/s(10000)")
		b.ReportMetric(perSec(took[1])/perSec(took[0]), "ratio")
	})
}

// benchQueryIndex indexes n subscribers with random boolean queries.
func benchQueryIndex(b *testing.B, vocab []string, n int) *QueryIndex {
	r := rand.New(rand.NewPCG(1, 2))
	term := func() string {
		k := vocab[r.IntN(len(vocab))]
		if strings.Contains(k, " ") {
			return `"` + k + `"`
		}
		if r.IntN(5) == 0 {
			return "#" + k
		}
		return k
	}
	subs := make(map[int64]*query.Query, n)
	for id := int64(1); len(subs) < n; id++ {
		var s string
		switch r.IntN(6) {
		case 0:
			s = term() + " OR " + term() + " OR " + term()
		case 1:
			s = term() + " " + term()
		case 2:
			s = "(" + term() + " OR " + term() + ") -" + term()
		case 3:
			s = term() + " OR " + term() + " lang:en"
		case 4:
			s = fmt.Sprintf("from:user%d OR %s", r.IntN(benchAuthors), term())
		default:
			s = term() + " -(" + term() + " OR " + term() + ")"
		}
		q, err := query.Parse(s)
		if err != nil {
			b.Fatalf("Parse(%q): %v", s, err)
		}
		subs[id] = q
	}
	return NewQueries(subs)
}
