package spike

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// start is a Monday at midnight UTC.
var start = time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)

// dailyRate is comments per minute with a daily cycle: quiet at night, a
// morning ramp over an hour, a plateau and an evening decline.
func dailyRate(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60
	night, day := 3.0, 40.0
	switch {
	case h < 7:
		return night
	case h < 8: // the morning ramp: an hour from night to day
		return night + (day-night)*(h-7)
	case h < 18:
		return day + 8*math.Sin(2*math.Pi*(h-8)/10)
	case h < 22: // the evening decline
		return day - (day-night)*(h-18)/4
	}
	return night
}

// poisson draws a Poisson count with mean lambda.
func poisson(r *rand.Rand, lambda float64) float64 {
	if lambda > 50 {
		return math.Max(0, math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64()))
	}
	l, k, p := math.Exp(-lambda), 0.0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// series draws minutes from from for n minutes with the rate of rate.
func series(seed uint64, from time.Time, n int, rate func(time.Time) float64) []Point {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]Point, n)
	for i := range out {
		at := from.Add(time.Duration(i) * time.Minute)
		out[i] = Point{At: at, Value: poisson(r, rate(at))}
	}
	return out
}

// burstAt is a five-minute burst added to the daily cycle on the eighth
// day.
type burstAt struct {
	name  string
	at    time.Duration // into the eighth day
	extra float64       // comments per minute added during the burst
}

var bursts = []burstAt{
	{"at night", 3*time.Hour + 17*time.Minute, 30},
	{"during the morning ramp", 7*time.Hour + 30*time.Minute, 60},
	{"at the daytime plateau", 13*time.Hour + 5*time.Minute, 80},
	{"in the evening decline", 20*time.Hour + 40*time.Minute, 50},
}

func (b burstAt) rate() (time.Time, func(time.Time) float64) {
	begin := start.Add(7*24*time.Hour + b.at)
	return begin, func(at time.Time) float64 {
		r := dailyRate(at)
		if !at.Before(begin) && at.Before(begin.Add(5*time.Minute)) {
			r += b.extra
		}
		return r
	}
}

// synthetic runs the synthetic cases with th: the alerts in five quiet
// weeks, and how many of twenty bursts (four times of day, five seeds)
// were the one alert of their eight days, within three minutes of their
// start.
func synthetic(t *testing.T, th Thresholds) (quiet, caught, total int) {
	t.Helper()
	cfg := Config{thresholds: &th}
	for seed := uint64(1); seed <= 5; seed++ {
		alerts, err := Run(cfg, series(seed, start, 7*24*60, dailyRate))
		if err != nil {
			t.Fatal(err)
		}
		quiet += len(alerts)
	}
	for _, b := range bursts {
		begin, rate := b.rate()
		for seed := uint64(1); seed <= 5; seed++ {
			alerts, err := Run(cfg, series(seed, start, 8*24*60, rate))
			if err != nil {
				t.Fatal(err)
			}
			total++
			if len(alerts) == 1 && !alerts[0].At.Before(begin) && alerts[0].At.Sub(begin) < 3*time.Minute {
				caught++
			}
		}
	}
	return quiet, caught, total
}

func TestDetector_DailyCycleWithoutSpikeNeverAlertsInSevenDays(t *testing.T) {
	for _, sens := range Sensitivities {
		allowed := 0
		if sens == High {
			allowed = 3 // high trades false alarms for reach
		}
		for seed := uint64(1); seed <= 5; seed++ {
			alerts, err := Run(Config{Sensitivity: sens}, series(seed, start, 7*24*60, dailyRate))
			if err != nil {
				t.Fatal(err)
			}
			if len(alerts) > allowed {
				for _, a := range alerts {
					t.Errorf("%s, seed %d: alert at %s: observed %.0f, expected %.1f (span %s: %.0f, %.1f)", sens, seed,
						a.At.Format(time.RFC3339), a.Observed, a.Expected, a.Span, a.SpanObserved, a.SpanExpected)
				}
			}
		}
	}
}

func TestDetector_FiveMinuteBurstIsOneAlertWithinThreeMinutes(t *testing.T) {
	for _, b := range bursts {
		t.Run(b.name, func(t *testing.T) {
			begin, rate := b.rate()
			for seed := uint64(1); seed <= 5; seed++ {
				alerts, err := Run(Config{}, series(seed, start, 8*24*60, rate))
				if err != nil {
					t.Fatal(err)
				}
				if len(alerts) != 1 {
					t.Fatalf("seed %d: %d alerts, want 1: %+v", seed, len(alerts), alerts)
				}
				a := alerts[0]
				if a.At.Before(begin) || a.At.Sub(begin) >= 3*time.Minute {
					t.Errorf("seed %d: alert at %s, want within 3 minutes of %s", seed, a.At.Format(time.RFC3339), begin.Format(time.RFC3339))
				}
				if a.Observed <= a.Expected || a.SpanObserved < a.SpanExpected {
					t.Errorf("seed %d: observed %.0f, expected %.1f (span %s: %.0f, %.1f)", seed, a.Observed, a.Expected, a.Span, a.SpanObserved, a.SpanExpected)
				}
			}
		})
	}
}

// flat is days of minutes at level, then the values given, minute by
// minute.
func flat(days int, level float64, then ...float64) []Point {
	n := days * 24 * 60
	out := make([]Point, n+len(then))
	for i := range out {
		v := level
		if i >= n {
			v = then[i-n]
		}
		out[i] = Point{At: start.Add(time.Duration(i) * time.Minute), Value: v}
	}
	return out
}

func TestDetector_GuardsAndCooldown(t *testing.T) {
	quiet := func(n int, v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	join := func(parts ...[]float64) []float64 { return slices.Concat(parts...) }
	day := 24 * 60
	for _, tt := range []struct {
		name   string
		cfg    Config
		points []Point
		want   []int // minutes that fire
	}{
		{"a quiet crawler's 0 to 3 is below the minimum volume", Config{}, flat(2, 0, 3, 3, 3), nil},
		{"the same rise fires once the minimum volume is lifted", Config{MinVolume: -1}, flat(2, 0, 3, 3, 3), []int{2 * day}},
		{"nothing fires before a day of history", Config{}, flat(0, 2, join(quiet(300, 2), []float64{80, 90})...), nil},
		{"one event is one alert", Config{}, flat(2, 2, 50, 60, 40, 55), []int{2 * day}},
		{"a second burst inside the cooldown is the same event", Config{}, flat(2, 2, join([]float64{50}, quiet(120, 2), []float64{200})...), []int{2 * day}},
		{"a bigger burst after a quiet cooldown alerts again", Config{}, flat(2, 2, join([]float64{50}, quiet(7*60, 2), []float64{200})...), []int{2 * day, 2*day + 7*60 + 1}},
		{"a burst no bigger than the last one is not news", Config{}, flat(2, 2, join([]float64{50}, quiet(7*60, 2), []float64{50})...), []int{2 * day}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			alerts, err := Run(tt.cfg, tt.points)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, a := range alerts {
				got = append(got, int(a.At.Sub(start)/time.Minute))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("fired at minutes %v, want %v", got, tt.want)
			}
		})
	}
}

// hourly sums points by hour.
func hourly(points []Point) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for _, p := range points {
		out[p.At.Truncate(time.Hour)] += p.Value
	}
	return out
}

// TestDetector_ANewLeaderDecidesAsTheOldOne restores a detector as the hub
// does when it starts leading — hours seeded up to the replay, the state
// saved up to an hour before, the last seven hours replayed, the cooldown
// from SQL — and checks that it fires exactly when the one that ran all
// along does.
func TestDetector_ANewLeaderDecidesAsTheOldOne(t *testing.T) {
	// A big burst on day 5 sets the record; a smaller one on day 9 is
	// under way at the takeover; one on day 10, smaller than day 5's, is no news to a
	// detector that remembers day 5 (the state: the seeded hours alone
	// cannot tell a minute's record); one on day 11 tops them all.
	type burst struct {
		at    time.Duration
		extra float64
	}
	bs := []burst{{5*24*time.Hour + 3*time.Hour, 250}, {9*24*time.Hour + 3*time.Hour, 100}, {10*24*time.Hour + 3*time.Hour, 150}, {11*24*time.Hour + 15*time.Hour, 400}}
	rate := func(at time.Time) float64 {
		r := dailyRate(at)
		for _, b := range bs {
			if off := at.Sub(start.Add(b.at)); off >= 0 && off < 20*time.Minute {
				r += b.extra
			}
		}
		return r
	}
	points := series(11, start, 12*24*60, rate)
	old, _ := New(Config{})
	var state []byte
	var stateAt time.Time
	takeover := start.Add(9*24*time.Hour + 3*time.Hour + 17*time.Minute) // during the day-9 burst
	var oldAlerts []Alert
	for _, p := range points {
		if !p.At.Before(takeover) {
			break
		}
		if a, ok := old.Observe(p.At, p.Value); ok {
			oldAlerts = append(oldAlerts, a)
		}
		if p.At.Minute() == 59 && takeover.Sub(p.At) < time.Hour {
			state, stateAt = old.State(), p.At
		}
	}
	if state == nil || len(oldAlerts) == 0 {
		t.Fatalf("no state saved (%v) or no alert before the takeover (%d)", stateAt, len(oldAlerts))
	}
	quietUntil := old.QuietUntil()
	hours := hourly(points)
	replayFrom := takeover.Add(-7 * time.Hour).Truncate(time.Hour)
	restored, _ := New(Config{})
	for h := replayFrom.Add(-8 * 24 * time.Hour); h.Before(replayFrom); h = h.Add(time.Hour) {
		restored.SeedHour(h, hours[h], 60)
	}
	restored.SetState(state)
	for _, p := range points {
		if !p.At.Before(replayFrom) && p.At.Before(takeover) {
			restored.Warm(p.At, p.Value)
		}
	}
	restored.SetQuietUntil(quietUntil)
	var a1, a2 []Alert
	for _, p := range points {
		if p.At.Before(takeover) {
			continue
		}
		if a, ok := old.Observe(p.At, p.Value); ok {
			a1 = append(a1, a)
		}
		if a, ok := restored.Observe(p.At, p.Value); ok {
			a2 = append(a2, a)
		}
	}
	if len(a1) == 0 {
		t.Fatal("the detector that ran all along fired nothing after the takeover: the test proves nothing")
	}
	if len(a1) != len(a2) {
		t.Fatalf("after the takeover the old detector fired %d times, the restored one %d: %+v, %+v", len(a1), len(a2), a1, a2)
	}
	for i := range a1 {
		if !a1[i].At.Equal(a2[i].At) || a1[i].Span != a2[i].Span {
			t.Errorf("alert %d: old at %s (span %s), restored at %s (span %s)", i, a1[i].At, a1[i].Span, a2[i].At, a2[i].Span)
		}
	}
}

func TestDetector_SeededHoursGiveTheCycleAndTheHistory(t *testing.T) {
	// A week seeded hour by hour knows the morning: a new rule on a crawler
	// with a week behind it neither fires at 9:00 nor waits a day to
	// catch a burst.
	day8 := start.Add(7 * 24 * time.Hour)
	morning := func(at time.Time) float64 {
		if h := at.Hour(); h >= 9 && h < 17 {
			return 60
		}
		return 4
	}
	seeded, _ := New(Config{})
	for h := range 7 * 24 {
		at := start.Add(time.Duration(h) * time.Hour)
		seeded.SeedHour(at, morning(at)*60, 60)
	}
	var alerts []time.Time
	for m := range 180 { // 08:00 to 11:00 of the eighth day, a burst at 10:30
		at := day8.Add(8*time.Hour + time.Duration(m)*time.Minute)
		v := morning(at)
		if m >= 150 && m < 155 {
			v += 200
		}
		if a, ok := seeded.Observe(at, v); ok {
			alerts = append(alerts, a.At)
		}
	}
	if want := day8.Add(10*time.Hour + 30*time.Minute); len(alerts) != 1 || !alerts[0].Equal(want) {
		t.Fatalf("alerts %v, want one at %s", alerts, want)
	}
}

func TestDetector_StateRoundTripsAndRefusesGarbage(t *testing.T) {
	points := series(3, start, 3*24*60, dailyRate)
	d, _ := New(Config{})
	for _, p := range points {
		d.Observe(p.At, p.Value)
	}
	state := d.State()
	if len(state) != d.StateSize() {
		t.Fatalf("state of %d bytes, StateSize says %d", len(state), d.StateSize())
	}
	t.Logf("state kept in SQL: %d bytes", len(state))
	restored, _ := New(Config{})
	restored.SetState(state)
	if !slices.Equal(restored.State(), state) {
		t.Fatal("a restored detector's state differs from the one it was restored from")
	}
	empty, _ := New(Config{})
	before := empty.State()
	for _, bad := range [][]byte{nil, []byte("garbage"), state[:len(state)-1], append([]byte{9}, state[1:]...)} {
		empty.SetState(bad)
		if !slices.Equal(empty.State(), before) {
			t.Fatalf("a bad state (%d bytes) changed the detector", len(bad))
		}
	}
	other, _ := New(Config{Sensitivity: Low}) // a longer memory: another shape
	other.SetState(state)
	if o, _ := New(Config{Sensitivity: Low}); !slices.Equal(other.State(), o.State()) {
		t.Fatal("a state of another sensitivity changed the detector")
	}
}

func TestRun_TakesTheSeriesOwnStep(t *testing.T) {
	// Five-minute steps: the spans are an hour and six hours of them, and a
	// burst is caught the same.
	var points []Point
	for i := range 3 * 24 * 12 {
		points = append(points, Point{At: start.Add(time.Duration(i) * 5 * time.Minute), Value: 20})
	}
	points = append(points, Point{At: start.Add(3 * 24 * time.Hour), Value: 200})
	if got := StepOf(points); got != 5*time.Minute {
		t.Fatalf("StepOf = %s, want 5m", got)
	}
	alerts, err := Run(Config{}, points)
	if err != nil || len(alerts) != 1 || !alerts[0].At.Equal(start.Add(3*24*time.Hour)) {
		t.Fatalf("alerts %+v, %v; want one at the burst", alerts, err)
	}
	if _, err := New(Config{Step: time.Millisecond}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a millisecond step: %v, want ErrInvalid", err)
	}
}

func TestReadCSV(t *testing.T) {
	for _, tt := range []struct {
		name, in, err string
		n             int
	}{
		{"RFC 3339 and NAB's form", "timestamp,value\n2025-03-03T00:00:00Z,1\n2025-03-03 00:01:00,2.5\n", "", 2},
		{"no header", "2025-03-03T00:00:00Z,1\n", "line 1 is data", 0},
		{"empty", "", "empty", 0},
		{"bad time", "timestamp,value\nyesterday,1\n", "line 2: timestamp \"yesterday\"", 0},
		{"bad value", "timestamp,value\n2025-03-03T00:00:00Z,many\n", "line 2: value \"many\"", 0},
		{"a clock set back is read as is", "timestamp,value\n2025-03-03T00:01:00Z,1\n2025-03-03T00:00:00Z,1\n", "", 2},
		{"three fields", "timestamp,value\n2025-03-03T00:00:00Z,1,2\n", "line 2: want timestamp,value", 0},
		{"header only", "timestamp,value\n", "no rows", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pts, err := ReadCSV(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || len(pts) != tt.n {
				t.Fatalf("ReadCSV = %d points, %v; want %d", len(pts), err, tt.n)
			}
		})
	}
}

func TestPoissonUpperTail(t *testing.T) {
	// Exact values: P(X ≥ k) = 1 − Σ_{i<k} e^−λ λ^i / i!.
	for _, tt := range []struct{ k, lambda float64 }{{1, 0.5}, {3, 2}, {10, 3}, {25, 10}, {5, 20}, {60, 40}} {
		var cdf float64
		for i := 0.0; i < tt.k; i++ {
			lg, _ := math.Lgamma(i + 1)
			cdf += math.Exp(-tt.lambda + i*math.Log(tt.lambda) - lg)
		}
		want := 1 - cdf
		got := poissonUpperTail(tt.k, tt.lambda)
		if math.Abs(got-want) > 1e-9*math.Max(1, want) && math.Abs(got-want)/want > 1e-6 {
			t.Errorf("P(X ≥ %g | %g) = %g, want %g", tt.k, tt.lambda, got, want)
		}
	}
}
