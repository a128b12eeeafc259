package spike

import (
	"fmt"
	"math"
)

// ShareConfig tunes a ShareDetector; zero fields take the defaults.
type ShareConfig struct {
	// MinCount is the least number of comments the recent window must hold
	// before a share is judged (default 20): a handful never alarms.
	MinCount float64
	// Margin is how far above the baseline share the recent share must be
	// (default 0.15, an absolute difference of proportions).
	Margin float64
	// Threshold is the log-likelihood ratio (binomial, recent share against
	// the baseline share) the recent window must reach (default 10).
	Threshold float64
	// RecentHalfLife and BaselineHalfLife are the half-lives, in steps, of
	// the recent window and of the baseline (defaults 3 and 240).
	RecentHalfLife, BaselineHalfLife float64
	// WarmUp is the least weight of comments the baseline must hold before
	// anything fires (default 100).
	WarmUp float64
}

func (c ShareConfig) withDefaults() (ShareConfig, error) {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MinCount, 20)
	def(&c.Margin, 0.15)
	def(&c.Threshold, 10)
	def(&c.RecentHalfLife, 3)
	def(&c.BaselineHalfLife, 240)
	def(&c.WarmUp, 100)
	for _, v := range []float64{c.MinCount, c.Margin, c.Threshold, c.RecentHalfLife, c.BaselineHalfLife, c.WarmUp} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return c, fmt.Errorf("%w: share detector settings must be finite and not negative", ErrInvalid)
		}
	}
	if c.Margin >= 1 {
		return c, fmt.Errorf("%w: share margin %v must be below 1", ErrInvalid, c.Margin)
	}
	if c.RecentHalfLife >= c.BaselineHalfLife {
		return c, fmt.Errorf("%w: the recent half-life must be shorter than the baseline's", ErrInvalid)
	}
	return c, nil
}

// ShareDetector watches a proportion per step (negative comments out of
// all comments) and fires once when the recent share is far above the
// baseline share: above it by Margin, on at least MinCount comments, with
// a binomial log-likelihood ratio of at least Threshold. A steady share,
// however high, does not fire; the episode ends when the recent share
// falls back within half the margin of the baseline. Its state is six
// numbers.
type ShareDetector struct {
	cfg              ShareConfig
	recentA, recentB float64 // decay factors
	recentK, recentN float64 // decayed negatives and totals, recent
	baseK, baseN     float64 // decayed negatives and totals, baseline
	inEpisode        bool
}

// NewShare returns a detector with cfg's settings.
func NewShare(cfg ShareConfig) (*ShareDetector, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &ShareDetector{cfg: c, recentA: math.Exp2(-1 / c.RecentHalfLife), recentB: math.Exp2(-1 / c.BaselineHalfLife)}, nil
}

// Observe takes one step's negative and total counts and reports whether
// this step starts an episode. Counts that make no sense (negative, or
// more negatives than comments) are clamped.
func (d *ShareDetector) Observe(negative, total float64) bool {
	if !(total > 0) {
		total = 0
	}
	negative = math.Max(0, math.Min(negative, total))
	// Judge against the baseline as it stood before this step.
	d.recentK = d.recentK*d.recentA + negative
	d.recentN = d.recentN*d.recentA + total
	fire := false
	if d.baseN >= d.cfg.WarmUp && d.recentN >= d.cfg.MinCount {
		p0 := (d.baseK + 0.5) / (d.baseN + 1)
		p1 := d.recentK / d.recentN
		switch {
		case !d.inEpisode && p1 >= p0+d.cfg.Margin && binomialLLR(d.recentK, d.recentN, p0) >= d.cfg.Threshold:
			d.inEpisode, fire = true, true
		case d.inEpisode && p1 < p0+d.cfg.Margin/2:
			d.inEpisode = false
		}
	}
	// The baseline learns only outside an episode, so a crisis does not
	// become the norm while it lasts.
	if !d.inEpisode {
		d.baseK = d.baseK*d.recentB + negative
		d.baseN = d.baseN*d.recentB + total
	}
	return fire
}

// InEpisode reports whether the share is still high after a firing.
func (d *ShareDetector) InEpisode() bool { return d.inEpisode }

// binomialLLR is the log-likelihood ratio of k successes in n trials under
// the observed share k/n against the share p0.
func binomialLLR(k, n, p0 float64) float64 {
	if n <= 0 {
		return 0
	}
	p1 := k / n
	term := func(x, p, q float64) float64 {
		if x <= 0 {
			return 0
		}
		return x * math.Log(p/q)
	}
	return term(k, p1, p0) + term(n-k, 1-p1, 1-p0)
}
