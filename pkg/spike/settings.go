package spike

import (
	"errors"
	"fmt"
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
