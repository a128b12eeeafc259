package cluster

import (
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Usage history, kept in memory for the dashboard's rate sparklines.
const (
	// historyStep is the width of one sample.
	historyStep = 10 * time.Second
	// historyLen is how many samples each crawler keeps: ten minutes.
	historyLen = 60
	// perMinute turns a count per step into a count per minute.
	perMinute = float64(time.Minute) / float64(historyStep)
)

// usageHistory holds, per crawler, a bounded ring of the comments applied as
// usage in each step. A crawler with no usage for a whole ring is forgotten,
// so deleted crawlers do not accumulate. Its zero value is ready to use; it
// has its own mutex so readers never wait for the hub's.
type usageHistory struct {
	mu    sync.Mutex
	rings map[int64]*usageRing
	swept int64 // step of the last sweep of idle rings
}

// usageRing is one crawler's samples: counts[s % historyLen] holds step s for
// the historyLen steps up to last.
type usageRing struct {
	counts [historyLen]int64
	last   int64
}

// stepOf numbers the step that contains t.
func stepOf(t time.Time) int64 { return t.UnixNano() / int64(historyStep) }

// advanceTo clears the slots of the steps after last up to step.
func (r *usageRing) advanceTo(step int64) {
	if step <= r.last {
		return
	}
	if step-r.last >= historyLen {
		clear(r.counts[:])
	} else {
		for s := r.last + 1; s <= step; s++ {
			r.counts[s%historyLen] = 0
		}
	}
	r.last = step
}

// add records count comments applied as a crawler's usage at now.
func (h *usageHistory) add(crawlerID, count int64, now time.Time) {
	if count <= 0 {
		return
	}
	step := stepOf(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rings == nil {
		h.rings = map[int64]*usageRing{}
	}
	r, ok := h.rings[crawlerID]
	if !ok {
		r = &usageRing{last: step}
		h.rings[crawlerID] = r
	}
	// A wall clock stepped back counts into the newest sample.
	step = max(step, r.last)
	r.advanceTo(step)
	r.counts[step%historyLen] += count
	if step-h.swept >= historyLen {
		h.sweepLocked(step)
	}
}

// sweepLocked forgets the rings with no usage in the last historyLen steps.
func (h *usageHistory) sweepLocked(step int64) {
	for id, r := range h.rings {
		if step-r.last >= historyLen {
			delete(h.rings, id)
		}
	}
	h.swept = step
}

// rates returns a crawler's completed samples as comments per minute, oldest
// first, and the end of the newest one. The step in progress is left out: a
// partial count would read as a drop in the rate.
func (h *usageHistory) rates(crawlerID int64, now time.Time) ([]float64, time.Time) {
	step := stepOf(now)
	out := make([]float64, historyLen)
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.rings[crawlerID]; ok {
		for i := range out {
			s := step - historyLen + int64(i)
			if s <= r.last && r.last-s < historyLen {
				out[i] = float64(r.counts[s%historyLen]) * perMinute
			}
		}
	}
	return out, time.Unix(0, step*int64(historyStep)).UTC()
}

// History is a crawler's recent comment rate, for the dashboard's
// sparklines. Unknown crawlers get all zeros: the caller checks existence.
func (h *Hub) History(crawlerID int64) api.CrawlerHistory {
	rates, until := h.history.rates(crawlerID, time.Now())
	return api.CrawlerHistory{
		CrawlerID:         crawlerID,
		StepSeconds:       int(historyStep / time.Second),
		Until:             until,
		CommentsPerMinute: rates,
	}
}

// totalRates is rates summed over every crawler: the fleet's comment rate.
func (h *usageHistory) totalRates(now time.Time) ([]float64, time.Time) {
	step := stepOf(now)
	out := make([]float64, historyLen)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rings {
		for i := range out {
			s := step - historyLen + int64(i)
			if s <= r.last && r.last-s < historyLen {
				out[i] += float64(r.counts[s%historyLen]) * perMinute
			}
		}
	}
	return out, time.Unix(0, step*int64(historyStep)).UTC()
}

// TotalHistory is the recent comment rate of all crawlers together, for
// the dashboard's summary: it reads no crawler list, so it costs the same
// at ten crawlers and at a million.
func (h *Hub) TotalHistory() api.CrawlerHistory {
	rates, until := h.history.totalRates(time.Now())
	return api.CrawlerHistory{StepSeconds: int(historyStep / time.Second), Until: until, CommentsPerMinute: rates}
}
