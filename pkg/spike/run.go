package spike

import (
	"slices"
	"time"
)

// Point is one step of a series.
type Point struct {
	At    time.Time
	Value float64
}

// StepOf is the usual time between the points of a series: the median
// gap, or DefaultStep when there are fewer than two points.
func StepOf(points []Point) time.Duration {
	if len(points) < 2 {
		return DefaultStep
	}
	gaps := make([]float64, 0, min(len(points)-1, 10_000))
	for i := 1; i < len(points) && len(gaps) < cap(gaps); i++ {
		if g := points[i].At.Sub(points[i-1].At); g > 0 {
			gaps = append(gaps, float64(g))
		}
	}
	if len(gaps) == 0 {
		return DefaultStep
	}
	return time.Duration(median(gaps))
}

// Run runs a new detector over a series and returns its alerts; a zero
// step is the series' own (StepOf).
func Run(cfg Config, points []Point) ([]Alert, error) {
	if cfg.Step == 0 {
		cfg.Step = StepOf(points)
	}
	d, err := New(cfg)
	if err != nil {
		return nil, err
	}
	var out []Alert
	for _, p := range points {
		if a, ok := d.Observe(p.At, p.Value); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// median returns the median of vals, reordering them.
func median(vals []float64) float64 {
	n := len(vals)
	if n == 0 {
		return 0
	}
	slices.Sort(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}
