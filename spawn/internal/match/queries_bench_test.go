package match

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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
// with an author and a language each. It does so for two mixes of
// queries: "boolean", those alone, and "proximity", where a third of the
// queries have NEAR (between vocabulary terms, groups of them, and the
// common words of opinions) or a prefix wildcard. The "interleaved"
// sub-benchmark of each mix times one and 10,000 subscribers in
// alternating blocks and reports the ratio of their throughputs (10,000
// subscribers / 1), which should stay at 0.5 or more, by the clock and
// by the processor time of its own thread (ratio(cpu), which a machine
// shared with other work does not skew); "proximity-vs-boolean" times the
// two 10,000-subscriber indexes alike and reports the throughput of the
// proximity mix against the boolean one:
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
	many := map[string]*QueryIndex{}
	for _, mix := range []string{"boolean", "proximity"} {
		one, ten := benchQueryIndex(b, vocab, 1, mix), benchQueryIndex(b, vocab, 10000, mix)
		many[mix] = ten
		b.Run("mix="+mix, func(b *testing.B) {
			for _, c := range []struct {
				n  int
				ix *QueryIndex
			}{{1, one}, {10000, ten}} {
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
				wall, cpu := interleave(b, items, one, ten)
				reportInterleaved(b, [2]string{"1", "10000"}, wall, cpu)
			})
		})
	}
	b.Run("proximity-vs-boolean", func(b *testing.B) {
		wall, cpu := interleave(b, items, many["boolean"], many["proximity"])
		reportInterleaved(b, [2]string{"boolean", "proximity"}, wall, cpu)
	})
}

// interleave times two indexes on the same items in alternating blocks,
// so that a busy machine slows both alike, and returns their throughputs
// (items/s) by the clock and by the processor time of the benchmark's own
// thread (zero where it cannot be read), which other processes on a
// shared machine do not inflate.
func interleave(b *testing.B, items []Item, first, second *QueryIndex) (wall, cpu [2]float64) {
	const block = 100 // items timed per index in a row
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var took, used [2]time.Duration
	var buf []QueryHit
	n := 0
	for b.Loop() {
		for k, ix := range []*QueryIndex{first, second} {
			start, startCPU := time.Now(), threadCPU()
			for j := range block {
				buf = ix.AppendMatch(buf[:0], items[(n+j)%len(items)])
			}
			took[k] += time.Since(start)
			used[k] += threadCPU() - startCPU
		}
		n += block
	}
	for k := range 2 {
		wall[k] = float64(n) / took[k].Seconds()
		if used[k] > 0 {
			cpu[k] = float64(n) / used[k].Seconds()
		}
	}
	return wall, cpu
}

// reportInterleaved reports what interleave measured: each index's
// throughput, and the ratio of the second's to the first's by the clock
// and, where it was read, by the thread's processor time.
func reportInterleaved(b *testing.B, names [2]string, wall, cpu [2]float64) {
	for k := range 2 {
		b.ReportMetric(wall[k], "items/s("+names[k]+")")
	}
	b.ReportMetric(wall[1]/wall[0], "ratio")
	if cpu[0] > 0 && cpu[1] > 0 {
		b.ReportMetric(cpu[1]/cpu[0], "ratio(cpu)")
	}
}

// opinion are common words of the benchmark's texts that proximity
// queries put beside a topic, as analysts do to find what people think
// of it.
var opinion = []string{"love", "hate", "great", "awesome", "terrible", "bad", "good", "amazing"}

// benchQueryIndex indexes n subscribers with random queries of a mix:
// "boolean" or "proximity" (see BenchmarkQueryIndex).
func benchQueryIndex(b testing.TB, vocab []string, n int, mix string) *QueryIndex {
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
	// prefix is the stem of a topic word, cut by up to three letters
	// and kept to four at least, as an analyst writes kubernet* or
	// bitco*.
	prefix := func() string {
		w := topics[r.IntN(len(topics))]
		for len(w) < 5 {
			w = topics[r.IntN(len(topics))]
		}
		return w[:len(w)-r.IntN(min(4, len(w)-3))] + "*"
	}
	near := func() string {
		op := fmt.Sprintf(" NEAR/%d", r.IntN(6))
		if r.IntN(3) == 0 {
			op += "f"
		}
		return op + " "
	}
	kinds := 6
	if mix == "proximity" {
		kinds = 9
	}
	subs := make(map[int64]*query.Query, n)
	for id := int64(1); len(subs) < n; id++ {
		var s string
		switch r.IntN(kinds) {
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
		case 5:
			s = term() + " -(" + term() + " OR " + term() + ")"
		case 6:
			s = term() + near() + "(" + term() + " OR " + term() + ")"
		case 7:
			s = term() + near() + "(" + strings.Join(opinion[r.IntN(5):][:3], " OR ") + ")"
		default:
			s = prefix() + []string{" OR ", " "}[r.IntN(2)] + term()
		}
		q, err := query.Parse(s)
		if err != nil {
			b.Fatalf("Parse(%q): %v", s, err)
		}
		subs[id] = q
	}
	return NewQueries(subs)
}
