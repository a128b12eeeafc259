package spike

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Sensitivities of a ShareDetector: how far above its baseline the recent
// negative share must be (Margin, an absolute difference of shares), how
// improbable under the baseline (Threshold, a log-likelihood ratio) and on
// how many comments (MinCount). Medium is ShareConfig's defaults.
var shareSensitivities = map[string]ShareConfig{
	Low:    {MinCount: 30, Margin: 0.25, Threshold: 20},
	Medium: {MinCount: 20, Margin: 0.15, Threshold: 10},
	High:   {MinCount: 10, Margin: 0.10, Threshold: 6},
}

// ShareConfigOf returns the settings of a sensitivity ("" is the default).
func ShareConfigOf(sensitivity string) (ShareConfig, error) {
	if sensitivity == "" {
		sensitivity = DefaultSensitivity
	}
	c, ok := shareSensitivities[sensitivity]
	if !ok {
		return ShareConfig{}, fmt.Errorf("%w: sensitivity must be low, medium or high, got %q", ErrInvalid, sensitivity)
	}
	return c, nil
}

// Seed adds steps steps that together held negative of total comments to
// the baseline, as if they had been observed one by one evenly spread,
// without judging them: what a detector learns from hour counts before it
// sees minutes.
func (d *ShareDetector) Seed(negative, total float64, steps int) {
	if steps < 1 {
		steps = 1
	}
	if !(total > 0) {
		total = 0
	}
	negative = math.Max(0, math.Min(negative, total))
	s := float64(steps)
	// The decayed sum of steps equal parts: part × (1 + b + … + b^(steps-1)).
	geo := func(b float64) float64 {
		if b >= 1 {
			return s
		}
		return (1 - math.Pow(b, s)) / (1 - b)
	}
	bs, rs := math.Pow(d.recentB, s), math.Pow(d.recentA, s)
	d.baseK = d.baseK*bs + negative/s*geo(d.recentB)
	d.baseN = d.baseN*bs + total/s*geo(d.recentB)
	d.recentK = d.recentK*rs + negative/s*geo(d.recentA)
	d.recentN = d.recentN*rs + total/s*geo(d.recentA)
}

// RecentShare is the negative share of the recent window (0 when it is
// empty).
func (d *ShareDetector) RecentShare() float64 {
	if d.recentN <= 0 {
		return 0
	}
	return d.recentK / d.recentN
}

// BaselineShare is the baseline's negative share, as the detector judges
// against it.
func (d *ShareDetector) BaselineShare() float64 { return (d.baseK + 0.5) / (d.baseN + 1) }

// shareStateVersion is the first byte of ShareDetector.State.
const shareStateVersion = 1

// ShareStateSize is the length of ShareDetector.State's answer.
const ShareStateSize = 1 + 4*8 + 1

// State is the detector's memory, for the hub to keep in SQL: version
// byte, the recent and baseline decayed negatives and totals (float64,
// little endian), and whether an episode is under way. Its settings are
// not in it: they come from the rule.
func (d *ShareDetector) State() []byte {
	out := make([]byte, ShareStateSize)
	out[0] = shareStateVersion
	for i, v := range []float64{d.recentK, d.recentN, d.baseK, d.baseN} {
		binary.LittleEndian.PutUint64(out[1+8*i:], math.Float64bits(v))
	}
	if d.inEpisode {
		out[ShareStateSize-1] = 1
	}
	return out
}

// SetState restores what State returned. A state of another version or
// length, or whose numbers make no sense, is refused and changes nothing.
func (d *ShareDetector) SetState(b []byte) error {
	if len(b) != ShareStateSize || b[0] != shareStateVersion || b[ShareStateSize-1] > 1 {
		return fmt.Errorf("%w: not a share detector state", ErrInvalid)
	}
	var v [4]float64
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[1+8*i:]))
		if !finite(v[i]) || v[i] < 0 {
			return fmt.Errorf("%w: a share detector state with a count of %v", ErrInvalid, v[i])
		}
	}
	if v[0] > v[1] || v[2] > v[3] {
		return fmt.Errorf("%w: a share detector state with more negatives than comments", ErrInvalid)
	}
	d.recentK, d.recentN, d.baseK, d.baseN = v[0], v[1], v[2], v[3]
	d.inEpisode = b[ShareStateSize-1] == 1
	return nil
}
