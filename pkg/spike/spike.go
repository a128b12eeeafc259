// Package spike tells when a count per step (comments per minute) is far
// above what the recent past and the same hour of earlier days lead one to
// expect. The hub runs it for every spike alert rule, and bwctl alert
// backtest runs the same code over a CSV file.
//
// The method is a cycle-corrected, over-dispersed Poisson test (see
// docs/decisions/0011-alert-spike-detector.md): the expected count of a step is
// the mean of the recent window scaled by the daily cycle — how the same
// hour compared with the recent window's hours on earlier days — and never
// below what the same hour held on earlier days (their median); the step
// fires when the observed count is improbable under a Poisson law with
// that mean, widened by the recent window's own dispersion, and also
// clears a ratio and a minimum volume, and is rarer than nearly all of
// the series' own past steps (a bursty series needs a bigger surprise). A
// cooldown makes one event one alert.
package spike

import (
	"encoding/binary"
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

// Defaults of Config.
const (
	// DefaultSensitivity is the sensitivity of a rule that names none.
	DefaultSensitivity = Medium
	// DefaultRecent is the length of the recent window in steps: an hour
	// of minutes in the hub.
	DefaultRecent = 60
	// DefaultCooldown is how many quiet steps must pass after a step that
	// fired (or would have) before the next alert: 30 minutes in the hub.
	// A spike that lasts keeps its event open, so it is one alert.
	DefaultCooldown = 30
	// DefaultDays is how many earlier days give the daily cycle.
	DefaultDays = 7
	// DefaultWarmup is how many steps the detector must have seen before
	// it may fire: a detector with no past expects nothing.
	DefaultWarmup = 30
	// minSeasonDays is how many earlier days must have the hour before the
	// daily cycle is used.
	minSeasonDays = 1
	// Until the detector knows the hour from an earlier day it cannot tell
	// a morning from a spike, so it asks for more: a ratio coldRatio times
	// the sensitivity's and a tail probability coldPValue times smaller.
	coldRatio  = 1.5
	coldPValue = 1e-3
	// maxCycleFactor bounds the cycle correction either way, so an hour
	// that was empty on earlier days cannot make the expectation explode
	// or vanish.
	maxCycleFactor = 10
	// madScale turns a median absolute deviation into a standard deviation
	// for normal data.
	madScale = 1.4826
)

// Thresholds decide when a step is far enough above its expectation.
type Thresholds struct {
	// PValue is the tail probability of the observed count under the
	// expectation below which the step is improbable.
	PValue float64
	// Ratio is how many times the expectation the step must reach.
	Ratio float64
	// MinVolume is the count the step must reach, so a quiet crawler's
	// 0 → 3 is not a spike.
	MinVolume float64
	// Rarity is the share of this series' own past steps whose surprise
	// the step must top: a bursty series, whose tails are heavier than
	// any Poisson law's, needs a rarer step than a calm one.
	Rarity float64
}

// thresholds are the sensitivities' thresholds.
var thresholds = map[string]Thresholds{
	Low:    {PValue: 1e-9, Ratio: 3, MinVolume: 20, Rarity: 0.99999},
	Medium: {PValue: 1e-6, Ratio: 2, MinVolume: 10, Rarity: 0.9999},
	High:   {PValue: 1e-4, Ratio: 1.5, MinVolume: 5, Rarity: 0.999},
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
	// Recent, Cooldown and Warmup are in steps; Days in days.
	Recent, Cooldown, Warmup, Days int
	// MinVolume replaces the sensitivity's minimum volume when positive;
	// a negative value removes it.
	MinVolume float64
	// MinDispersion is the least variance-to-mean ratio the test assumes:
	// 1, the default, for counts (at least Poisson); a negative value
	// lets the recent window's own spread decide alone, for series that
	// are not counts.
	MinDispersion float64
}

// Alert is a step that fired.
type Alert struct {
	At       time.Time
	Observed float64
	Expected float64
	// PValue is the tail probability of Observed under Expected.
	PValue float64
}

// hourStat is one hour of one day: the sum of its steps and their number.
type hourStat struct {
	sum float64
	n   int32
}

// Detector follows one series. It is not safe for concurrent use.
type Detector struct {
	cfg        Config
	th         Thresholds
	minDisp    float64
	recent     []float64 // ring of the last cfg.Recent values
	recentAt   []time.Time
	next       int // ring slot of the next value
	filled     int
	seen       int
	last       time.Time
	quietUntil int // seen count before which the detector stays quiet
	days       map[int64]*[24]hourStat
	scratch    []float64
	surprises  surpriseHistogram
}

// New returns a detector, or an error naming a bad setting.
func New(cfg Config) (*Detector, error) {
	th, err := ThresholdsOf(cfg.Sensitivity)
	if err != nil {
		return nil, err
	}
	if cfg.Recent == 0 {
		cfg.Recent = DefaultRecent
	}
	if cfg.Cooldown == 0 {
		cfg.Cooldown = DefaultCooldown
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = DefaultWarmup
	}
	if cfg.Days == 0 {
		cfg.Days = DefaultDays
	}
	if cfg.Recent < 2 || cfg.Cooldown < 1 || cfg.Warmup < 1 || cfg.Days < 1 {
		return nil, fmt.Errorf("%w: recent, cooldown, warmup and days must be positive", ErrInvalid)
	}
	switch {
	case cfg.MinVolume > 0:
		th.MinVolume = cfg.MinVolume
	case cfg.MinVolume < 0:
		th.MinVolume = 0
	}
	minDisp := 1.0
	switch {
	case cfg.MinDispersion > 0:
		minDisp = cfg.MinDispersion
	case cfg.MinDispersion < 0:
		minDisp = 0
	}
	return &Detector{cfg: cfg, th: th, minDisp: minDisp,
		recent: make([]float64, cfg.Recent), recentAt: make([]time.Time, cfg.Recent),
		days: map[int64]*[24]hourStat{}}, nil
}

// dayOf numbers the UTC day of t.
func dayOf(t time.Time) int64 { return int64(math.Floor(float64(t.Unix()) / 86400)) }

// SeedHour records an hour of an earlier day the detector did not see
// step by step: sum over steps steps starting at hour. The hub seeds a
// week of hourly counts this way when it starts.
func (d *Detector) SeedHour(hour time.Time, sum float64, steps int) {
	if steps <= 0 {
		return
	}
	h := d.hour(hour)
	h.sum += sum
	h.n += int32(steps)
}

// hour returns the statistics of the hour that holds t, creating its day.
func (d *Detector) hour(t time.Time) *hourStat {
	t = t.UTC()
	day := dayOf(t)
	hs := d.days[day]
	if hs == nil {
		hs = &[24]hourStat{}
		d.days[day] = hs
		for k := range d.days {
			if k < day-int64(d.cfg.Days) {
				delete(d.days, k)
			}
		}
	}
	return &hs[t.Hour()]
}

// seasonal is the median over the earlier days of the mean step of t's
// hour, and whether enough days had it.
func (d *Detector) seasonal(t time.Time) (float64, bool) {
	t = t.UTC()
	day := dayOf(t)
	vals := d.scratch[:0]
	for k := day - int64(d.cfg.Days); k < day; k++ {
		if hs := d.days[k]; hs != nil && hs[t.Hour()].n > 0 {
			vals = append(vals, hs[t.Hour()].sum/float64(hs[t.Hour()].n))
		}
	}
	d.scratch = vals
	if len(vals) < minSeasonDays {
		return 0, false
	}
	return median(vals), true
}

// Expected is what the detector expects of a step at t now, the
// variance-to-mean ratio its test assumes, and whether earlier days told
// it what the hour holds.
func (d *Detector) Expected(at time.Time) (expected, dispersion float64, seasonal bool) {
	if d.filled == 0 {
		return 0, math.Max(d.minDisp, 1), false
	}
	vals := make([]float64, 0, d.filled)
	var sum float64
	for i := range d.filled {
		vals = append(vals, d.recent[i])
		sum += d.recent[i]
	}
	level := sum / float64(d.filled)
	expected = level
	hours := hourCache{d: d}
	now, seasonal := hours.at(at)
	if seasonal {
		// The cycle: the same time of day against the recent window's
		// times, as earlier days had them.
		var past float64
		var n int
		for i := range d.filled {
			if s, ok := hours.at(d.recentAt[i]); ok {
				past += s
				n++
			}
		}
		if n > 0 && past > 0 {
			factor := now / (past / float64(n))
			factor = math.Max(1/float64(maxCycleFactor), math.Min(maxCycleFactor, factor))
			expected = level * factor
		}
		expected = math.Max(expected, now)
	}
	// Dispersion: the recent window's robust variance against its mean.
	m := median(vals)
	for i := range vals {
		vals[i] = math.Abs(vals[i] - m)
	}
	sd := madScale * median(vals)
	dispersion = d.minDisp
	if level > 0 {
		dispersion = math.Max(d.minDisp, sd*sd/level)
	}
	if dispersion <= 0 {
		dispersion = math.SmallestNonzeroFloat64
	}
	return expected, dispersion, seasonal
}

// test reports whether v at at clears the thresholds, with the
// expectation and the tail probability.
func (d *Detector) test(at time.Time, v float64) (hot bool, expected, p float64) {
	expected, disp, seasonal := d.Expected(at)
	if d.filled == 0 {
		return false, expected, 1
	}
	p = poissonUpperTail(v/disp, expected/disp)
	ratio, pmax := d.th.Ratio, d.th.PValue
	if !seasonal {
		ratio, pmax = ratio*coldRatio, pmax*coldPValue
	}
	hot = d.seen >= d.cfg.Warmup && v >= d.th.MinVolume && v >= ratio*expected && v > expected && p < pmax
	return hot, expected, p
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
	if !d.last.IsZero() && !at.After(d.last) {
		return Alert{}, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Alert{}, false
	}
	hot, expected, p := d.test(at, v)
	if d.seen >= d.cfg.Warmup && d.filled > 0 {
		s := surprise(p)
		if hot && d.surprises.weight >= minSurpriseHistory && s < d.surprises.quantile(d.th.Rarity) {
			hot = false
		}
		d.surprises.add(s)
	}
	var out Alert
	fired := false
	if hot {
		if d.seen >= d.quietUntil && fire {
			out, fired = Alert{At: at, Observed: v, Expected: expected, PValue: p}, true
		}
		d.quietUntil = d.seen + 1 + d.cfg.Cooldown
	}
	d.last = at
	d.seen++
	d.recent[d.next] = v
	d.recentAt[d.next] = at
	d.next = (d.next + 1) % len(d.recent)
	d.filled = min(d.filled+1, len(d.recent))
	h := d.hour(at)
	h.sum += v
	h.n++
	return out, fired
}

// QuietFor is how many more steps the detector stays quiet (0: it may fire
// at the next step); the hub keeps it in SQL so a new leader does not
// alert again for an event already told.
func (d *Detector) QuietFor() int { return max(0, d.quietUntil-d.seen) }

// SetQuietFor makes the detector stay quiet for n more steps.
func (d *Detector) SetQuietFor(n int) { d.quietUntil = d.seen + max(0, n) }

// Point is one step of a series.
type Point struct {
	At    time.Time
	Value float64
}

// Run runs a new detector over a series and returns its alerts.
func Run(cfg Config, points []Point) ([]Alert, error) {
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

// hourCache answers the seasonal expectation at any time of day: the
// hours' medians interpolated linearly between the middles of the hours,
// so a ramp does not turn into steps. It remembers the hours it looked up.
type hourCache struct {
	d    *Detector
	keys [8]time.Time
	vals [8]float64
	oks  [8]bool
	n    int
}

func (c *hourCache) hour(h time.Time) (float64, bool) {
	for i := range c.n {
		if c.keys[i].Equal(h) {
			return c.vals[i], c.oks[i]
		}
	}
	v, ok := c.d.seasonal(h)
	i := c.n % len(c.keys)
	c.keys[i], c.vals[i], c.oks[i] = h, v, ok
	c.n = min(c.n+1, len(c.keys))
	return v, ok
}

// at is the seasonal expectation at t.
func (c *hourCache) at(t time.Time) (float64, bool) {
	shifted := t.Add(-30 * time.Minute)
	h0 := shifted.Truncate(time.Hour)
	w := float64(shifted.Sub(h0)) / float64(time.Hour)
	a, okA := c.hour(h0)
	b, okB := c.hour(h0.Add(time.Hour))
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

// Surprises: how improbable each step was, −log10 of its tail
// probability, kept as a histogram that forgets with a half-life of about
// surpriseMemory steps, so the detector knows how surprising this series'
// ordinary steps are (the peaks-over-threshold idea of Siffer et al.,
// "Anomaly detection in streams with extreme value theory", KDD 2017, in
// its simplest form: an empirical quantile instead of a fitted tail).
const (
	surpriseBins     = 160
	surpriseBinWidth = 0.25
	// surpriseMemory is the steps the histogram remembers: a week of
	// minutes.
	surpriseMemory = 7 * 24 * 60
	// minSurpriseHistory is the weight of steps the histogram must hold
	// before its quantile counts: half a day of minutes.
	minSurpriseHistory = 720
)

type surpriseHistogram struct {
	bins   [surpriseBins]float32
	weight float64 // the decayed number of steps held
	scale  float64 // the weight of the next step, before renormalising
}

func surprise(p float64) float64 {
	return -math.Log10(math.Max(p, 1e-300))
}

func (h *surpriseHistogram) add(s float64) {
	const keep = 1 - 1.0/surpriseMemory
	if h.scale == 0 {
		h.scale = 1
	}
	i := min(surpriseBins-1, max(0, int(s/surpriseBinWidth)))
	h.bins[i] += float32(h.scale)
	h.weight = h.weight*keep + 1
	h.scale /= keep
	if h.scale > 1e12 { // renormalise: the bins hold weights times scale
		for j := range h.bins {
			h.bins[j] = float32(float64(h.bins[j]) / h.scale)
		}
		h.scale = 1
	}
}

// quantile is the surprise below which the share q of the remembered
// steps fall (the upper edge of its bin).
func (h *surpriseHistogram) quantile(q float64) float64 {
	var total float64
	for _, b := range h.bins {
		total += float64(b)
	}
	above := (1 - q) * total
	var acc float64
	for i := surpriseBins - 1; i >= 0; i-- {
		acc += float64(h.bins[i])
		if acc > above {
			return float64(i+1) * surpriseBinWidth
		}
	}
	return 0
}

// surpriseState is the size of State's answer.
const surpriseState = 8 + 4*surpriseBins

// State is what the detector knows of its series' surprises, for the hub
// to keep in SQL: a new leader that restores it judges rarity at once
// instead of after minSurpriseHistory steps.
func (d *Detector) State() []byte {
	h := &d.surprises
	out := make([]byte, surpriseState)
	binary.LittleEndian.PutUint64(out, math.Float64bits(h.weight))
	scale := h.scale
	if scale == 0 {
		scale = 1
	}
	for i, b := range h.bins {
		binary.LittleEndian.PutUint32(out[8+4*i:], math.Float32bits(float32(float64(b)/scale)))
	}
	return out
}

// SetState restores what State returned; anything else is ignored.
func (d *Detector) SetState(b []byte) {
	if len(b) != surpriseState {
		return
	}
	w := math.Float64frombits(binary.LittleEndian.Uint64(b))
	if math.IsNaN(w) || w < 0 || w > surpriseMemory*2 {
		return
	}
	h := surpriseHistogram{weight: w, scale: 1}
	for i := range h.bins {
		v := math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
		if v != v || v < 0 {
			return
		}
		h.bins[i] = v
	}
	d.surprises = h
}
