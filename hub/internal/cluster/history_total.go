package cluster

import (
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

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
