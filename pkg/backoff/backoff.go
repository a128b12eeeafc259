// Package backoff is the one retry delay policy of hub and spawn: capped
// exponential growth with "equal jitter" (every wait is a random value
// between half the current delay and all of it), so that many spawns that
// failed together do not retry together.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy grows a delay from Min, multiplying it by Factor (2 when unset) on
// every failure, up to Max. A Policy is a value: each retry loop owns one.
type Policy struct {
	Min, Max time.Duration
	// Factor is the growth per failure; 0 means 2. Use 1 with Step for
	// linear growth.
	Factor float64
	// Step is added per failure on top of the multiplication (linear
	// back-off when Factor is 1).
	Step time.Duration
	// NoJitter makes Next return the delay itself, for callers that add
	// their own spread or need exact waits.
	NoJitter bool

	cur time.Duration
}

// Next returns how long to wait before the next attempt and grows the
// delay for the one after.
func (p *Policy) Next() time.Duration {
	if p.cur <= 0 {
		p.cur = p.Min
	}
	d := p.cur
	f := p.Factor
	if f <= 0 {
		f = 2
	}
	p.cur = min(time.Duration(float64(p.cur)*f)+p.Step, p.Max)
	if p.cur < d { // overflow or Max below Min
		p.cur = max(d, p.Max)
	}
	if p.NoJitter || d <= 1 {
		return d
	}
	return Jitter(d)
}

// Current is the delay the next call of Next will be based on.
func (p *Policy) Current() time.Duration {
	if p.cur <= 0 {
		return p.Min
	}
	return p.cur
}

// Reset starts the policy again from Min, after a success.
func (p *Policy) Reset() { p.cur = 0 }

// Jitter returns a random duration between d/2 and d.
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d or until ctx ends; it reports whether the whole wait passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Wait sleeps the policy's next delay; it reports false when ctx ended
// first.
func (p *Policy) Wait(ctx context.Context) bool {
	return Sleep(ctx, p.Next())
}
