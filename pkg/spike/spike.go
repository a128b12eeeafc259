// Package spike tells when a count per step (comments per minute) is far
// above what the recent past and the same hour of earlier days lead one to
// expect, and larger than anything the series did in the last weeks. The
// hub runs it for every spike alert rule, and bwctl alert backtest runs the
// same code over a CSV file.
//
// The method (docs/decisions/0019-alert-spike-records.md) looks at three
// spans at once — one step, an hour and six hours — so a sharp minute and
// a swell that builds over an afternoon are both seen. A span fires when it
// sets a record over the last two weeks in one of three measures: its
// count (the most comments in such a span), its excess over the expected
// count in units of the series' mean level (the biggest surge above the
// usual), or its variance-stabilised excess (the most improbable, which
// is what catches a burst at night that is small beside the day), and
// when it is also well above what was expected. A cooldown makes one event
// one alert. Records are maxima, so replaying steps the detector has
// already seen changes nothing: a new leader that restores the state and
// replays the last hours decides as the old one would have.
package spike

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// hourStat is one hour of one day: the sum of its steps and their number.
type hourStat struct {
	sum float64
	n   int32
}

// measures are the record-keeping measures of a span.
const (
	measureCount = iota
	measureExcess
	measureZ
	measures
)

// daySlot is what the detector remembers of one day: its total, its
// number of steps and the largest value of each measure and span.
type daySlot struct {
	day   int64 // UTC day number; noDay when empty
	sum   float64
	steps float64
	max   []float64 // [span*measures+measure]
}

const noDay = math.MinInt64

// Detector follows one series. It is not safe for concurrent use.
type Detector struct {
	th    Thresholds
	pmax  float64 // the tail probability a span must be below
	step  time.Duration
	spans []int // steps per span, ascending, the first 1
	level int   // steps in the level window

	// The ring of the last len(vals) steps: values, their expectations
	// and the expectation a span counts for each (the seasonal one when
	// earlier days know the hour).
	vals, exps, slows []float32
	next, filled      int
	sumV, sumE, sumS  []float64 // per span
	levelSum          float64
	// The ring of the level window's seasonal expectations (NaN when
	// unknown), for the daily cycle's correction.
	seas                 []float32
	seasNext, seasFilled int
	seasSum              float64
	seasN                int
	sinceRecompute       int

	days    map[int64]*[24]hourStat
	med     [24]float64 // the seasonal medians of medDay's hours
	medOK   [24]int8    // 0 not computed, 1 known, -1 unknown
	medDay  int64
	scratch []float64

	slots   []daySlot
	prevMax []float64 // per span and measure: the max over the days before today
	prevFor int64     // the day prevMax was computed for

	first, last time.Time
	covered     time.Time // steps up to then are already in the restored state
	quietUntil  time.Time
	// seeded are the last seeded hours' sums, for the spans of whole hours.
	seeded []seededHour
}

type seededHour struct {
	at  time.Time
	sum float64
}

// New returns a detector, or an error naming a bad setting.
func New(cfg Config) (*Detector, error) {
	th, err := ThresholdsOf(cfg.Sensitivity)
	if err != nil {
		return nil, err
	}
	if cfg.thresholds != nil {
		th = *cfg.thresholds
	}
	switch {
	case cfg.MinVolume > 0:
		th.MinVolume = cfg.MinVolume
	case cfg.MinVolume < 0:
		th.MinVolume = 0
	}
	step := cfg.Step
	if step == 0 {
		step = DefaultStep
	}
	if step < time.Second || step > 24*time.Hour {
		return nil, fmt.Errorf("%w: step must be between a second and a day, got %s", ErrInvalid, step)
	}
	if th.Memory < 1 || th.Cooldown < 0 || th.Warmup < 0 {
		return nil, fmt.Errorf("%w: memory must be positive", ErrInvalid)
	}
	d := &Detector{th: th, step: step, days: map[int64]*[24]hourStat{}, medDay: noDay, prevFor: noDay,
		pmax: th.Noise * float64(step) / float64(time.Duration(th.Memory)*24*time.Hour)}
	for _, s := range Spans {
		k := min(maxStepsPerSpan, max(1, int(s/step)))
		if !slices.Contains(d.spans, k) {
			d.spans = append(d.spans, k)
		}
	}
	d.level = min(maxStepsPerSpan, max(1, int(levelWindow/step)))
	n := max(d.level, d.spans[len(d.spans)-1])
	d.vals, d.exps, d.slows, d.seas = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, d.level)
	d.sumV, d.sumE, d.sumS = make([]float64, len(d.spans)), make([]float64, len(d.spans)), make([]float64, len(d.spans))
	d.slots = make([]daySlot, th.Memory+1)
	for i := range d.slots {
		d.slots[i] = daySlot{day: noDay, max: newMaxes(len(d.spans))}
	}
	d.prevMax = newMaxes(len(d.spans))
	return d, nil
}

func newMaxes(spans int) []float64 {
	m := make([]float64, spans*measures)
	for i := range m {
		m[i] = math.Inf(-1)
	}
	return m
}

// push adds a step to the rings and the running sums: its value v, its
// expectation e, the seasonal expectation s (NaN when unknown) and the
// expectation a span counts for it. The rings hold float32, and the sums
// add and take away the same rounded values, so they stay exact sums of
// what the rings hold.
func (d *Detector) push(v, e, s, slow float64) {
	v32, e32, slow32, s32 := float32(v), float32(e), float32(slow), float32(s)
	n := len(d.vals)
	for i, k := range d.spans {
		d.sumV[i] += float64(v32)
		d.sumE[i] += float64(e32)
		d.sumS[i] += float64(slow32)
		if d.filled >= k {
			old := (d.next - k + n) % n
			d.sumV[i] -= float64(d.vals[old])
			d.sumE[i] -= float64(d.exps[old])
			d.sumS[i] -= float64(d.slows[old])
		}
	}
	d.levelSum += float64(v32)
	if d.filled >= d.level {
		d.levelSum -= float64(d.vals[(d.next-d.level+n)%n])
	}
	// The seasonal ring covers the level window only.
	if d.seasFilled == d.level {
		if old := float64(d.seas[d.seasNext]); !math.IsNaN(old) {
			d.seasSum -= old
			d.seasN--
		}
	}
	d.seas[d.seasNext] = s32
	if !math.IsNaN(s) {
		d.seasSum += float64(s32)
		d.seasN++
	}
	d.seasNext = (d.seasNext + 1) % d.level
	d.seasFilled = min(d.seasFilled+1, d.level)
	d.vals[d.next], d.exps[d.next], d.slows[d.next] = v32, e32, slow32
	d.next = (d.next + 1) % n
	d.filled = min(d.filled+1, n)
	if d.sinceRecompute++; d.sinceRecompute >= n {
		d.recompute()
	}
}

// recompute sums the rings afresh, so rounding errors of the running sums
// do not build up.
func (d *Detector) recompute() {
	d.sinceRecompute = 0
	n := len(d.vals)
	for i, k := range d.spans {
		d.sumV[i], d.sumE[i], d.sumS[i] = 0, 0, 0
		for j := 1; j <= min(k, d.filled); j++ {
			at := (d.next - j + n) % n
			d.sumV[i] += float64(d.vals[at])
			d.sumE[i] += float64(d.exps[at])
			d.sumS[i] += float64(d.slows[at])
		}
	}
	d.levelSum = 0
	for j := 1; j <= min(d.level, d.filled); j++ {
		d.levelSum += float64(d.vals[(d.next-j+n)%n])
	}
	d.seasSum, d.seasN = 0, 0
	for _, v := range d.seas[:d.seasFilled] {
		if !math.IsNaN(float64(v)) {
			d.seasSum += float64(v)
			d.seasN++
		}
	}
}

// z is the variance-stabilised excess of a count v over its expectation
// e (Anscombe's transform: about one standard deviation per unit for
// Poisson counts).
func z(v, e float64) float64 {
	return 2 * (math.Sqrt(math.Max(v, 0)+0.375) - math.Sqrt(math.Max(e, 0)+0.375))
}

// Observe takes the next step's value and reports an alert when the step
// fires. Steps must come in time order; a step not after the previous one
// is ignored.
func (d *Detector) Observe(at time.Time, v float64) (Alert, bool) {
	return d.observe(at, v, true)
}

// Warm takes a step as Observe does but never fires, though a step that
// would have opens or extends the cooldown: the hub replays the recent
// past through it when it starts leading.
func (d *Detector) Warm(at time.Time, v float64) {
	d.observe(at, v, false)
}

func (d *Detector) observe(at time.Time, v float64, fire bool) (Alert, bool) {
	at = at.UTC()
	if (!d.last.IsZero() && !at.After(d.last)) || math.IsNaN(v) || math.IsInf(v, 0) {
		return Alert{}, false
	}
	if d.first.IsZero() || at.Before(d.first) {
		d.first = at
	}
	known := d.filled > 0
	e, seas := d.expected(at)
	slow := seas // a span's expectation: earlier days' when they know the hour
	if math.IsNaN(slow) {
		slow = e
	}
	d.push(v, e, seas, slow)
	day := dayOf(at)
	s := d.slot(day)
	if s == nil {
		s = &daySlot{max: newMaxes(len(d.spans))} // a day the memory no longer holds
	}
	records := d.records(day)
	mean, haveMean := d.meanLevel(day)
	ready := known && at.Sub(d.first) >= d.th.Warmup
	var out Alert
	hot := false
	for i, k := range d.spans {
		if d.filled < k {
			continue
		}
		V := d.sumV[i]
		// A span's expectation: the steps' own for one step; for longer
		// spans the earlier days' sum when larger, so a swell that the
		// level has followed for hours is still judged against the usual.
		E := d.sumE[i]
		if k > 1 {
			E = math.Max(E, d.sumS[i])
		}
		var meas [measures]float64
		meas[measureCount] = V
		meas[measureExcess] = math.Inf(-1)
		if haveMean && mean > 0 {
			meas[measureExcess] = (V - E) / (float64(k) * mean)
		}
		meas[measureZ] = z(V, E)
		record := false
		for m, val := range meas {
			best := math.Max(records[i*measures+m], s.max[i*measures+m])
			switch m {
			case measureCount:
				record = record || (d.th.CountMargin > 0 && val > best*d.th.CountMargin)
			case measureExcess:
				record = record || (d.th.ExcessMargin >= 0 && val > 0 && val > best+d.th.ExcessMargin)
			case measureZ:
				record = record || (d.th.ZMargin >= 0 && val > 0 && val > best+d.th.ZMargin)
			}
		}
		if ready && record && !hot && V >= d.th.MinVolume && V >= d.th.Ratio*E && V > E && v > e {
			if p := poissonUpperTail(V, E); p < d.pmax {
				hot = true
				out = Alert{At: at, Observed: v, Expected: e, Span: time.Duration(k) * d.step, SpanObserved: V, SpanExpected: E, PValue: p}
				if k == 1 {
					out.Span = 0
				}
			}
		}
		for m, val := range meas {
			s.max[i*measures+m] = math.Max(s.max[i*measures+m], val)
		}
	}
	if at.After(d.covered) {
		s.sum += v
		s.steps++
	}
	d.last = at
	h := d.hour(at)
	h.sum += v
	h.n++
	if !hot {
		return Alert{}, false
	}
	fired := fire && !at.Before(d.quietUntil)
	d.quietUntil = at.Add(d.th.Cooldown)
	if !fired {
		return Alert{}, false
	}
	return out, true
}

// QuietUntil is when the detector may fire again (zero: at once); the hub
// keeps it in SQL so a new leader does not alert again for an event
// already told.
func (d *Detector) QuietUntil() time.Time { return d.quietUntil }

// SetQuietUntil makes the detector stay quiet before t.
func (d *Detector) SetQuietUntil(t time.Time) {
	if t.After(d.quietUntil) {
		d.quietUntil = t.UTC()
	}
}
