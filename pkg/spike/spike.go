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
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Sensitivities.
const (
	Low    = "low"
	Medium = "medium"
	High   = "high"
)

// Sensitivities lists the sensitivities, least sensitive first.
var Sensitivities = []string{Low, Medium, High}

// Defaults.
const (
	// DefaultSensitivity is the sensitivity of a rule that names none.
	DefaultSensitivity = Medium
	// DefaultStep is the time between two values: the hub counts
	// comments per minute.
	DefaultStep = time.Minute
	// DefaultDays is how many earlier days give the daily cycle.
	DefaultDays = 7
	// levelWindow is the recent past whose mean is the level.
	levelWindow = time.Hour
	// minSeasonDays is how many earlier days must have the hour before
	// the daily cycle is used.
	minSeasonDays = 1
	// maxCycleFactor bounds the cycle correction either way, so an hour
	// that was empty on earlier days cannot make the expectation explode
	// or vanish.
	maxCycleFactor = 10
	// maxStepsPerSpan bounds a span in steps, so a tiny step cannot ask
	// for a huge ring.
	maxStepsPerSpan = 1 << 16
)

// Spans are the lengths of time the detector sums steps over: one step
// (0), an hour and six hours.
var Spans = []time.Duration{0, time.Hour, 6 * time.Hour}

// Thresholds decide when a step is far enough above its expectation.
type Thresholds struct {
	// PValue is the tail probability of the observed count under the
	// expectation (a Poisson law) below which a count is improbable: what
	// term rules, judged once an hour or so, ask.
	PValue float64
	// Noise is how many alerts Poisson noise alone may give over the
	// memory: a span's tail probability must be below Noise divided by
	// the steps the memory holds, so a series of a minute's steps needs a
	// rarer count than one of an hour's.
	Noise float64
	// Ratio is how many times the expectation a span must reach.
	Ratio float64
	// MinVolume is the count a span must reach, so a quiet crawler's
	// 0 → 3 is not a spike.
	MinVolume float64
	// Memory is how many days of records a span must top.
	Memory int
	// Cooldown is how long after a step that fired (or would have) the
	// next alert waits; a spike that lasts keeps extending it.
	Cooldown time.Duration
	// Warmup is how much history the detector needs before it may fire.
	Warmup time.Duration
	// CountMargin, ExcessMargin and ZMargin are how far a span must top
	// the records of its count (a factor), its excess over the expected
	// in units of the mean level, and its variance-stabilised excess
	// (both added).
	CountMargin, ExcessMargin, ZMargin float64
}

// thresholds are the sensitivities' thresholds. Medium's were chosen by
// leave-one-out over NAB's ten Twitter-volume series (TestNAB_LeaveOneOut);
// low and high move the memory, the ratio and the volume either way.
var thresholds = map[string]Thresholds{
	Low: {PValue: 1e-9, Noise: 0.01, Ratio: 2, MinVolume: 20, Memory: 28, Cooldown: 6 * time.Hour, Warmup: 24 * time.Hour,
		CountMargin: 1, ExcessMargin: 0.5, ZMargin: 1},
	Medium: {PValue: 1e-6, Noise: 0.1, Ratio: 1, MinVolume: 10, Memory: 14, Cooldown: 6 * time.Hour, Warmup: 24 * time.Hour,
		CountMargin: 1, ExcessMargin: 0.5, ZMargin: 1},
	High: {PValue: 1e-4, Noise: 1, Ratio: 1, MinVolume: 5, Memory: 7, Cooldown: 6 * time.Hour, Warmup: 24 * time.Hour,
		CountMargin: 1, ExcessMargin: 0.5, ZMargin: 1},
}

// ErrInvalid is wrapped by every configuration error.
var ErrInvalid = errors.New("spike: invalid")

// ThresholdsOf returns the thresholds of a sensitivity ("" is the default).
func ThresholdsOf(sensitivity string) (Thresholds, error) {
	if sensitivity == "" {
		sensitivity = DefaultSensitivity
	}
	t, ok := thresholds[sensitivity]
	if !ok {
		return Thresholds{}, fmt.Errorf("%w: sensitivity must be low, medium or high, got %q", ErrInvalid, sensitivity)
	}
	return t, nil
}

// Config configures a Detector. Zero fields take the defaults.
type Config struct {
	Sensitivity string
	// Step is the time between two values (default a minute).
	Step time.Duration
	// MinVolume replaces the sensitivity's minimum volume when positive;
	// a negative value removes it.
	MinVolume float64
	// thresholds, when set, replace the sensitivity's (the tests tune
	// them).
	thresholds *Thresholds
}

// Alert is a step that fired.
type Alert struct {
	At time.Time
	// Observed and Expected are the step's count and what was expected
	// of it.
	Observed float64
	Expected float64
	// Span is the length of time whose count set the record (0: the
	// step itself), and SpanObserved and SpanExpected its count and
	// what was expected of it.
	Span                       time.Duration
	SpanObserved, SpanExpected float64
	// PValue is the tail probability of SpanObserved under SpanExpected.
	PValue float64
}

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

// dayOf numbers the UTC day of t.
func dayOf(t time.Time) int64 { return int64(math.Floor(float64(t.Unix()) / 86400)) }

// slot returns the day slot of day, emptying it if it held an older day.
func (d *Detector) slot(day int64) *daySlot {
	n := int64(len(d.slots))
	s := &d.slots[((day%n)+n)%n]
	if s.day != day {
		if s.day > day {
			return nil // a day older than the memory
		}
		s.day, s.sum, s.steps = day, 0, 0
		for i := range s.max {
			s.max[i] = math.Inf(-1)
		}
		d.prevFor = noDay
	}
	return s
}

// records returns the max of each span and measure over the memory's days
// before today; with today's own maxima the caller has the record.
func (d *Detector) records(day int64) []float64 {
	if d.prevFor == day {
		return d.prevMax
	}
	for i := range d.prevMax {
		d.prevMax[i] = math.Inf(-1)
	}
	for _, s := range d.slots {
		if s.day == noDay || s.day >= day || s.day < day-int64(d.th.Memory) {
			continue
		}
		for i, m := range s.max {
			d.prevMax[i] = math.Max(d.prevMax[i], m)
		}
	}
	d.prevFor = day
	return d.prevMax
}

// meanLevel is the mean step over the memory's days, or false when they
// hold nothing.
func (d *Detector) meanLevel(day int64) (float64, bool) {
	var sum, steps float64
	for _, s := range d.slots {
		if s.day != noDay && s.day <= day && s.day >= day-int64(d.th.Memory) {
			sum += s.sum
			steps += s.steps
		}
	}
	if steps == 0 {
		return 0, false
	}
	return sum / steps, true
}

// SeedHour records an hour of an earlier day the detector did not see
// step by step: sum over steps steps starting at hour. The hub seeds a
// week of hourly counts this way when it starts; seeded hours give the
// daily cycle, the mean level and the count records of the spans made of
// whole hours. Hours must be seeded in time order, before any step.
func (d *Detector) SeedHour(hour time.Time, sum float64, steps int) {
	if steps <= 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return
	}
	hour = hour.UTC()
	h := d.hour(hour)
	h.sum += sum
	h.n += int32(steps)
	d.medDay = noDay
	if d.first.IsZero() || hour.Before(d.first) {
		d.first = hour
	}
	day := dayOf(hour)
	s := d.slot(day)
	if s == nil {
		return
	}
	s.sum += sum
	s.steps += float64(steps)
	if time.Duration(steps)*d.step != time.Hour {
		return
	}
	if n := len(d.seeded); n > 0 && !hour.Equal(d.seeded[n-1].at.Add(time.Hour)) {
		d.seeded = d.seeded[:0]
	}
	d.seeded = append(d.seeded, seededHour{at: hour, sum: sum})
	if len(d.seeded) > 24 {
		d.seeded = d.seeded[1:]
	}
	for i, k := range d.spans {
		hours := int(time.Duration(k) * d.step / time.Hour)
		if time.Duration(k)*d.step%time.Hour != 0 || hours < 1 || hours > len(d.seeded) {
			continue
		}
		var v float64
		for _, sh := range d.seeded[len(d.seeded)-hours:] {
			v += sh.sum
		}
		m := &s.max[i*measures+measureCount]
		*m = math.Max(*m, v)
	}
}

// hour returns the statistics of the hour that holds t, creating its day.
func (d *Detector) hour(t time.Time) *hourStat {
	day := dayOf(t)
	hs := d.days[day]
	if hs == nil {
		hs = &[24]hourStat{}
		d.days[day] = hs
		for k := range d.days {
			if k < day-DefaultDays {
				delete(d.days, k)
			}
		}
	}
	return &hs[t.UTC().Hour()]
}

// seasonalHour is the median over the earlier days of the mean step of
// hour h of day, and whether enough days had it.
func (d *Detector) seasonalHour(day int64, h int) (float64, bool) {
	cached := day == d.medDay
	if cached && d.medOK[h] != 0 {
		return d.med[h], d.medOK[h] > 0
	}
	vals := d.scratch[:0]
	for k := day - DefaultDays; k < day; k++ {
		if hs := d.days[k]; hs != nil && hs[h].n > 0 {
			vals = append(vals, hs[h].sum/float64(hs[h].n))
		}
	}
	d.scratch = vals
	v, ok := 0.0, len(vals) >= minSeasonDays
	if ok {
		v = median(vals)
	}
	if cached {
		d.med[h], d.medOK[h] = v, -1
		if ok {
			d.medOK[h] = 1
		}
	}
	return v, ok
}

// seasonal is the seasonal expectation at t: the hours' medians
// interpolated linearly between the middles of the hours, so a ramp does
// not turn into steps.
func (d *Detector) seasonal(t time.Time) (float64, bool) {
	if today := dayOf(t); today != d.medDay {
		d.medDay, d.medOK = today, [24]int8{}
	}
	shifted := t.UTC().Add(-30 * time.Minute)
	h0 := shifted.Truncate(time.Hour)
	w := float64(shifted.Sub(h0)) / float64(time.Hour)
	h1 := h0.Add(time.Hour)
	a, okA := d.seasonalHour(dayOf(h0), h0.Hour())
	b, okB := d.seasonalHour(dayOf(h1), h1.Hour())
	switch {
	case okA && okB:
		return a*(1-w) + b*w, true
	case okA:
		return a, true
	case okB:
		return b, true
	}
	return 0, false
}

// expected is what the detector expects of a step at t, before seeing
// it, and the seasonal expectation (NaN when earlier days do not know
// the hour): the mean of the last hour scaled by how the same time of day
// compared with the last hour's times on earlier days, and never below
// what the same time held on earlier days.
func (d *Detector) expected(at time.Time) (expected, seasonal float64) {
	seasonal = math.NaN()
	n := min(d.filled, d.level)
	if n == 0 {
		return 0, seasonal
	}
	level := d.levelSum / float64(n)
	expected = level
	now, ok := d.seasonal(at)
	if !ok {
		return expected, seasonal
	}
	seasonal = now
	if d.seasN > 0 && d.seasSum > 0 {
		factor := now / (d.seasSum / float64(d.seasN))
		factor = math.Max(1/float64(maxCycleFactor), math.Min(maxCycleFactor, factor))
		expected = level * factor
	}
	return math.Max(expected, now), seasonal
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
