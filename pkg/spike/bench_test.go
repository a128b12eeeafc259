package spike

import (
	"testing"
	"time"
)

// BenchmarkObserve is one step of one rule's detector: what the hub spends
// per spike rule and minute, with a week of history behind it.
func BenchmarkObserve(b *testing.B) {
	points := series(7, start, 8*24*60, dailyRate)
	d, _ := New(Config{})
	week := 7 * 24 * 60
	for _, p := range points[:week] {
		d.Observe(p.At, p.Value)
	}
	rest := points[week:]
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := rest[i%len(rest)]
		d.Observe(p.At.Add(time.Duration(i/len(rest))*24*time.Hour), p.Value)
	}
}
