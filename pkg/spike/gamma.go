package spike

import "math"

// Tail probabilities of the Poisson law, extended to real counts through
// the regularised incomplete gamma function: for a count k > 0 and a mean
// λ, P(X ≥ k) = P(k, λ), the regularised lower incomplete gamma function
// (Abramowitz and Stegun 6.5.2 and 26.4.21). A real k lets a scaled
// (quasi-Poisson) count be tested the same way.

const (
	// gammaIterations bounds the series and the continued fraction.
	gammaIterations = 500
	// gammaEpsilon is their relative precision.
	gammaEpsilon = 1e-14
	// gammaTiny keeps the continued fraction away from division by zero.
	gammaTiny = 1e-300
)

// PoissonUpperTail is P(X ≥ k) for X Poisson with mean lambda, for a real
// k: the test the detector makes, for other detectors of counts (the hub's
// term alerts).
func PoissonUpperTail(k, lambda float64) float64 { return poissonUpperTail(k, lambda) }

// poissonUpperTail is P(X ≥ k) for X Poisson with mean lambda; k ≤ 0 gives
// 1 and lambda ≤ 0 with k > 0 gives 0.
func poissonUpperTail(k, lambda float64) float64 {
	switch {
	case k <= 0:
		return 1
	case lambda <= 0:
		return 0
	}
	return lowerGammaP(k, lambda)
}

// lowerGammaP is the regularised lower incomplete gamma function P(a, x)
// for a > 0 and x ≥ 0: a series below x = a+1, a continued fraction for
// Q = 1 − P above (A&S 6.5.29 and 6.5.31).
func lowerGammaP(a, x float64) float64 {
	if x <= 0 {
		return 0
	}
	lg, _ := math.Lgamma(a)
	logPrefix := a*math.Log(x) - x - lg
	if x < a+1 {
		// P(a, x) = e^−x x^a / Γ(a+1) · Σ x^n / ((a+1)…(a+n)).
		sum, term := 1/a, 1/a
		for n := 1; n < gammaIterations; n++ {
			term *= x / (a + float64(n))
			sum += term
			if math.Abs(term) < math.Abs(sum)*gammaEpsilon {
				break
			}
		}
		return math.Min(1, sum*math.Exp(logPrefix))
	}
	// Q(a, x) by Lentz's method on the continued fraction
	// 1/(x+1−a−) 1·(1−a)/(x+3−a−) 2·(2−a)/(x+5−a−) …
	b := x + 1 - a
	c := 1 / gammaTiny
	d := 1 / b
	h := d
	for i := 1; i < gammaIterations; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < gammaTiny {
			d = gammaTiny
		}
		c = b + an/c
		if math.Abs(c) < gammaTiny {
			c = gammaTiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < gammaEpsilon {
			break
		}
	}
	q := math.Exp(logPrefix) * h
	return math.Max(0, 1-q)
}
