package cluster

import (
	"testing"
	"time"
)

// at is the start of step s plus an offset inside it.
func at(s int64, off time.Duration) time.Time {
	return time.Unix(0, s*int64(historyStep)).Add(off)
}

func TestUsageHistory_RatesPerMinuteOldestFirst(t *testing.T) {
	const base = int64(1_000_000)
	var h usageHistory
	h.add(1, 3, at(base, time.Second))
	h.add(1, 2, at(base, 9*time.Second))
	h.add(1, 4, at(base+2, 0))
	h.add(1, 7, at(base+3, 0)) // the step in progress: not reported yet
	h.add(2, 5, at(base, 0))

	rates, until := h.rates(1, at(base+3, 5*time.Second))
	if len(rates) != historyLen {
		t.Fatalf("got %d samples, want %d", len(rates), historyLen)
	}
	if want := at(base+3, 0).UTC(); !until.Equal(want) {
		t.Fatalf("until %s, want %s", until, want)
	}
	tail := rates[historyLen-3:]
	want := []float64{5 * perMinute, 0, 4 * perMinute}
	for i := range want {
		if tail[i] != want[i] {
			t.Fatalf("last samples %v, want %v", tail, want)
		}
	}
	for i, r := range rates[:historyLen-3] {
		if r != 0 {
			t.Fatalf("sample %d is %v, want 0", i, r)
		}
	}

	// Once the step ends, its count shows.
	rates, _ = h.rates(1, at(base+4, 0))
	if got := rates[historyLen-1]; got != 7*perMinute {
		t.Fatalf("newest sample %v, want %v", got, 7*perMinute)
	}
	if rates, _ := h.rates(3, at(base+4, 0)); rates[historyLen-1] != 0 {
		t.Fatalf("unknown crawler has rates %v", rates)
	}
}

func TestUsageHistory_RingWrapsAndForgetsIdleCrawlers(t *testing.T) {
	const base = int64(2_000_000)
	var h usageHistory
	h.add(1, 10, at(base, 0))
	h.add(2, 1, at(base, 0))
	// Crawler 1 keeps counting for longer than the ring holds.
	for s := int64(1); s <= historyLen+5; s++ {
		h.add(1, s, at(base+s, 0))
	}
	now := at(base+historyLen+6, 0)
	rates, _ := h.rates(1, now)
	for i, r := range rates {
		// Sample i is step base+6+i, which counted 6+i.
		if want := float64(6+i) * perMinute; r != want {
			t.Fatalf("sample %d is %v, want %v", i, r, want)
		}
	}
	h.mu.Lock()
	_, kept := h.rings[2]
	n := len(h.rings)
	h.mu.Unlock()
	if kept || n != 1 {
		t.Fatalf("idle crawler still kept (%d rings)", n)
	}

	// A clock stepped back counts into the newest sample.
	h.add(1, 100, at(base, 0))
	rates, _ = h.rates(1, at(base+historyLen+6, 0))
	if got, want := rates[historyLen-1], float64(historyLen+5+100)*perMinute; got != want {
		t.Fatalf("newest sample %v, want %v", got, want)
	}
}
