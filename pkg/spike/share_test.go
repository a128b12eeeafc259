package spike

import (
	"math/rand/v2"
	"testing"
)

// binomial draws n trials of share p.
func binomial(r *rand.Rand, n int, p float64) float64 {
	k := 0
	for range n {
		if r.Float64() < p {
			k++
		}
	}
	return float64(k)
}

func TestShare_SteadyNegativeIsQuiet(t *testing.T) {
	d, err := NewShare(ShareConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 24 * 60 {
		if d.Observe(binomial(r, 60, 0.7), 60) {
			t.Fatalf("a steady 70%% negative stream fired at minute %d", i)
		}
	}
}

func TestShare_JumpFiresOnce(t *testing.T) {
	d, err := NewShare(ShareConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 6 * 60 {
		if d.Observe(binomial(r, 40, 0.1), 40) {
			t.Fatalf("the baseline fired at minute %d", i)
		}
	}
	fired := -1
	for i := range 60 {
		if d.Observe(binomial(r, 40, 0.6), 40) {
			if fired >= 0 {
				t.Fatalf("fired again at crisis minute %d (first at %d)", i, fired)
			}
			fired = i
		}
	}
	if fired < 0 || fired > 3 {
		t.Fatalf("first fired at crisis minute %d, want within 3", fired)
	}
	// Back to normal, then a second crisis is a new episode.
	for range 60 {
		d.Observe(binomial(r, 40, 0.1), 40)
	}
	if d.InEpisode() {
		t.Fatal("the episode did not end when the share fell back")
	}
	again := false
	for range 10 {
		again = d.Observe(binomial(r, 40, 0.6), 40) || again
	}
	if !again {
		t.Fatal("a second crisis after recovery did not fire")
	}
}

func TestShare_LowVolumeIsQuiet(t *testing.T) {
	// The likelihood threshold is set as low as it goes, so only the
	// minimum count keeps the quiet night quiet; the same night with no
	// minimum fires, so the check can fail.
	for _, c := range []struct {
		minCount float64
		fires    bool
	}{{minCount: 0, fires: false}, {minCount: 0.5, fires: true}} {
		d, err := NewShare(ShareConfig{MinCount: c.minCount, Threshold: 1e-9})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 6))
		for range 6 * 60 {
			d.Observe(binomial(r, 40, 0.1), 40)
		}
		// A quiet night: a comment every other minute, all of them negative.
		fired := -1
		for i := range 120 {
			n := float64(i % 2)
			if d.Observe(n, n) && fired < 0 {
				fired = i
			}
		}
		if c.fires != (fired >= 0) {
			t.Errorf("minimum count %v (0: the default): fired at minute %d (-1: never), want firing %v", c.minCount, fired, c.fires)
		}
	}
}

func TestShare_BadConfig(t *testing.T) {
	for _, c := range []ShareConfig{{Margin: 1}, {MinCount: -1}, {RecentHalfLife: 300}} {
		if _, err := NewShare(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
