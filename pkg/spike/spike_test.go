package spike

import (
	"math"
	"math/rand/v2"
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

func TestDetector_DailyCycleWithoutSpikeNeverAlertsInSevenDays(t *testing.T) {
	for _, sens := range Sensitivities {
		for seed := uint64(1); seed <= 5; seed++ {
			points := series(seed, start, 7*24*60, dailyRate)
			alerts, err := Run(Config{Sensitivity: sens}, points)
			if err != nil {
				t.Fatal(err)
			}
			allowed := 0
			if sens == High {
				allowed = 3 // high trades false alarms for reach
			}
			if len(alerts) > allowed {
				for _, a := range alerts {
					t.Errorf("%s, seed %d: alert at %s: observed %.0f, expected %.1f", sens, seed, a.At.Format(time.RFC3339), a.Observed, a.Expected)
				}
			}
		}
	}
}

func TestDetector_FiveMinuteBurstIsOneAlertWithinThreeMinutes(t *testing.T) {
	// Bursts at different points of the cycle, after a week of history.
	for _, tt := range []struct {
		name  string
		at    time.Duration // into the eighth day
		extra float64       // comments per minute added during the burst
	}{
		{"at night", 3*time.Hour + 17*time.Minute, 30},
		{"during the morning ramp", 7*time.Hour + 30*time.Minute, 60},
		{"at the daytime plateau", 13*time.Hour + 5*time.Minute, 80},
		{"in the evening decline", 20*time.Hour + 40*time.Minute, 50},
	} {
		t.Run(tt.name, func(t *testing.T) {
			burst := start.Add(7*24*time.Hour + tt.at)
			rate := func(at time.Time) float64 {
				r := dailyRate(at)
				if !at.Before(burst) && at.Before(burst.Add(5*time.Minute)) {
					r += tt.extra
				}
				return r
			}
			for seed := uint64(1); seed <= 5; seed++ {
				points := series(seed, start, 8*24*60, rate)
				alerts, err := Run(Config{}, points)
				if err != nil {
					t.Fatal(err)
				}
				if len(alerts) != 1 {
					t.Fatalf("seed %d: %d alerts, want 1: %+v", seed, len(alerts), alerts)
				}
				a := alerts[0]
				if a.At.Before(burst) || a.At.Sub(burst) >= 3*time.Minute {
					t.Errorf("seed %d: alert at %s, want within 3 minutes of %s", seed, a.At.Format(time.RFC3339), burst.Format(time.RFC3339))
				}
				if a.Observed < a.Expected*2 {
					t.Errorf("seed %d: observed %.0f is not twice expected %.1f", seed, a.Observed, a.Expected)
				}
			}
		})
	}
}

func TestDetector_GuardsAndCooldown(t *testing.T) {
	flat := func(level float64) []Point {
		out := make([]Point, 120)
		for i := range out {
			out[i] = Point{At: start.Add(time.Duration(i) * time.Minute), Value: level}
		}
		return out
	}
	with := func(points []Point, at int, values ...float64) []Point {
		for i, v := range values {
			points[at+i].Value = v
		}
		return points
	}
	for _, tt := range []struct {
		name   string
		cfg    Config
		points []Point
		want   []int // minutes that fire
	}{
		{"a quiet crawler's 0 to 3 is below the minimum volume", Config{}, with(flat(0), 60, 3, 3, 3), nil},
		{"the same rise fires once the minimum volume is lifted", Config{MinVolume: -1}, with(flat(0), 60, 3, 3, 3), []int{60}},
		{"a burst right at the start is not judged before the warm-up", Config{}, with(flat(2), 5, 50, 50), nil},
		{"one event is one alert", Config{}, with(flat(2), 60, 50, 60, 40, 55), []int{60}},
		{"a second event after a quiet cooldown alerts again", Config{}, with(flat(2), 40, 50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 50), []int{40, 73}},
		{"a second burst inside the cooldown is the same event", Config{}, with(flat(2), 40, 50, 2, 2, 2, 2, 2, 50), []int{40}},
		{"doubling fires at high sensitivity", Config{Sensitivity: High}, with(flat(10), 60, 40), []int{60}},
		{"doubling does not fire at low sensitivity", Config{Sensitivity: Low}, with(flat(10), 60, 40), nil},
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
			if len(got) != len(tt.want) {
				t.Fatalf("fired at minutes %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("fired at minutes %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestDetector_QuietForSurvivesARestart(t *testing.T) {
	points := make([]Point, 100)
	for i := range points {
		points[i] = Point{At: start.Add(time.Duration(i) * time.Minute), Value: 2}
	}
	points[60].Value = 60
	d, _ := New(Config{})
	for _, p := range points[:61] {
		d.Observe(p.At, p.Value)
	}
	quiet := d.QuietFor()
	if quiet != DefaultCooldown {
		t.Fatalf("QuietFor after an alert = %d, want %d", quiet, DefaultCooldown)
	}
	// A new detector (a new leader) warmed with the same past and told the
	// cooldown stays quiet for the rest of the event.
	d2, _ := New(Config{})
	for _, p := range points[:61] {
		d2.Warm(p.At, p.Value)
	}
	d2.SetQuietFor(quiet)
	if _, ok := d2.Observe(start.Add(61*time.Minute), 70); ok {
		t.Fatal("a restarted detector alerted again inside the cooldown")
	}
}

func TestDetector_SeededHoursGiveTheCycle(t *testing.T) {
	// A week seeded hour by hour knows the morning ramp; without it the
	// same morning fires.
	day8 := start.Add(7 * 24 * time.Hour)
	morning := func(at time.Time) float64 {
		if h := at.Hour(); h >= 9 && h < 17 {
			return 60
		}
		return 4
	}
	recent := make([]Point, 0, 120)
	for m := range 120 { // 08:00 to 10:00 of the eighth day
		at := day8.Add(8*time.Hour + time.Duration(m)*time.Minute)
		recent = append(recent, Point{At: at, Value: morning(at)})
	}
	cold, _ := New(Config{})
	seeded, _ := New(Config{})
	for h := range 7 * 24 {
		at := start.Add(time.Duration(h) * time.Hour)
		seeded.SeedHour(at, morning(at)*60, 60)
	}
	var coldAlerts, seededAlerts int
	for _, p := range recent {
		if _, ok := cold.Observe(p.At, p.Value); ok {
			coldAlerts++
		}
		if _, ok := seeded.Observe(p.At, p.Value); ok {
			seededAlerts++
		}
	}
	if coldAlerts != 1 || seededAlerts != 0 {
		t.Fatalf("9:00 ramp: %d alerts without the week, %d with it; want 1 and 0", coldAlerts, seededAlerts)
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

func TestDetector_StateCarriesTheSurpriseHistory(t *testing.T) {
	points := series(3, start, 2*24*60, dailyRate)
	d, _ := New(Config{})
	for _, p := range points {
		d.Observe(p.At, p.Value)
	}
	restored, _ := New(Config{})
	restored.SetState(d.State())
	if restored.surprises.weight < minSurpriseHistory || restored.surprises.quantile(0.999) != d.surprises.quantile(0.999) {
		t.Fatalf("restored weight %.0f, quantile %.2f; want %.0f, %.2f", restored.surprises.weight, restored.surprises.quantile(0.999),
			d.surprises.weight, d.surprises.quantile(0.999))
	}
	before := restored.surprises
	restored.SetState([]byte("garbage"))
	if restored.surprises != before {
		t.Fatal("a bad state changed the detector")
	}
}
