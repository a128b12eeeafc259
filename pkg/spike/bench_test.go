package spike

import (
	"runtime"
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

// BenchmarkDetectorBytes reports what one rule's detector holds in memory
// after a week of minutes (the heap it keeps, measured over 100
// detectors) and the size of the state the hub saves in SQL.
func BenchmarkDetectorBytes(b *testing.B) {
	points := series(7, start, 8*24*60, dailyRate)
	const n = 100
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ds := make([]*Detector, n)
		for i := range ds {
			ds[i], _ = New(Config{})
			for _, p := range points {
				ds[i].Observe(p.At, p.Value)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/rule")
		b.ReportMetric(float64(ds[0].StateSize()), "sql-bytes/rule")
		runtime.KeepAlive(ds)
	}
}
