package spike

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestShare_StateRestoresTheSameDetector(t *testing.T) {
	a, _ := NewShare(ShareConfig{})
	r := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		a.Observe(binomial(r, 30, 0.1), 30)
	}
	// Into a crisis: the state carries the episode too.
	fired := false
	for range 5 {
		fired = a.Observe(binomial(r, 30, 0.7), 30) || fired
	}
	if !fired || !a.InEpisode() {
		t.Fatal("the crisis did not start an episode")
	}
	b, _ := NewShare(ShareConfig{})
	if err := b.SetState(a.State()); err != nil {
		t.Fatal(err)
	}
	// Both go on alike: the crisis is not told again, its end and the
	// next crisis are seen at the same minute.
	for i := range 200 {
		p := 0.1
		if i >= 150 {
			p = 0.7
		}
		n := binomial(r, 30, p)
		if fa, fb := a.Observe(n, 30), b.Observe(n, 30); fa != fb {
			t.Fatalf("minute %d: the original fired %v, the restored %v", i, fa, fb)
		}
	}
	if a.RecentShare() != b.RecentShare() || a.BaselineShare() != b.BaselineShare() || a.InEpisode() != b.InEpisode() {
		t.Fatal("the restored detector drifted")
	}
}

func TestShare_SetStateRefusesDamagedStates(t *testing.T) {
	d, _ := NewShare(ShareConfig{})
	d.Observe(3, 10)
	good := d.State()
	nan := append([]byte(nil), good...)
	copy(nan[1:], []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}) // NaN
	moreNeg := append([]byte(nil), good...)
	copy(moreNeg[1:], []byte{0, 0, 0, 0, 0, 0, 0x59, 0x40}) // 100 negatives of 10
	for name, b := range map[string][]byte{"empty": nil, "short": good[:10], "version": append([]byte{9}, good[1:]...),
		"nan": nan, "more negatives than comments": moreNeg, "flag": append(append([]byte(nil), good[:ShareStateSize-1]...), 2)} {
		fresh, _ := NewShare(ShareConfig{})
		if err := fresh.SetState(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if fresh.RecentShare() != 0 || fresh.InEpisode() {
			t.Errorf("%s: a refused state changed the detector", name)
		}
	}
}

func TestShare_SeedIsLikeObservingEvenSteps(t *testing.T) {
	seeded, _ := NewShare(ShareConfig{})
	observed, _ := NewShare(ShareConfig{})
	for range 10 {
		seeded.Seed(120, 600, 60)
		for range 60 {
			observed.Observe(2, 10)
		}
	}
	if d := math.Abs(seeded.BaselineShare() - observed.BaselineShare()); d > 1e-9 {
		t.Fatalf("baseline share seeded %v, observed %v", seeded.BaselineShare(), observed.BaselineShare())
	}
	if math.Abs(seeded.baseN-observed.baseN) > 1e-6 || math.Abs(seeded.recentN-observed.recentN) > 1e-6 {
		t.Fatalf("weights seeded %v/%v, observed %v/%v", seeded.baseN, seeded.recentN, observed.baseN, observed.recentN)
	}
}

func TestShare_SensitivitiesOrderTheJumpsTheyCatch(t *testing.T) {
	// From a 10% baseline on 30 comments a minute, the least jump each
	// sensitivity fires on: high below medium below low.
	least := map[string]float64{}
	for _, s := range Sensitivities {
		cfg, err := ShareConfigOf(s)
		if err != nil {
			t.Fatal(err)
		}
		for p := 0.12; p < 1; p += 0.02 {
			d, _ := NewShare(cfg)
			for range 600 {
				d.Observe(3, 30)
			}
			fired := false
			for range 10 {
				fired = d.Observe(math.Round(30*p), 30) || fired
			}
			if fired {
				least[s] = p
				break
			}
		}
	}
	t.Logf("least jumps caught from 10%%: %v", least)
	if !(least[High] > 0 && least[High] < least[Medium] && least[Medium] < least[Low]) {
		t.Fatalf("least jumps caught: %v, want high < medium < low, all caught", least)
	}
	if _, err := ShareConfigOf("extreme"); err == nil {
		t.Fatal("an unknown sensitivity was accepted")
	}
}
