package node

import "time"

// rateWindow is how far back a subscriber's comment rate looks.
const rateWindow = 30 * time.Second

// rateMeter counts events in one-second buckets over rateWindow, on the
// node's clock (milliseconds, Node.clock): counting needs no reading of
// the time per event.
type rateMeter struct {
	buckets [30]int64
	stamps  [30]int64
}

func (r *rateMeter) add(clock int64, n int64) {
	sec := clock / 1000
	i := sec % int64(len(r.buckets))
	if r.stamps[i] != sec {
		r.stamps[i], r.buckets[i] = sec, 0
	}
	r.buckets[i] += n
}

func (r *rateMeter) perSecond(clock int64) float64 {
	sec := clock / 1000
	var sum int64
	for i := range r.buckets {
		if sec-r.stamps[i] < int64(len(r.buckets)) {
			sum += r.buckets[i]
		}
	}
	return float64(sum) / rateWindow.Seconds()
}
