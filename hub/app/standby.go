package app

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// HeaderLeader names the leading hub in a standby's answers.
const HeaderLeader = "X-BW-Leader"

// noLeaderRetry is the Retry-After a standby gives while no hub leads: a
// standby notices a lapsed leadership within a fraction of a second and
// takes it over.
const noLeaderRetry = "1"

// standbyHandler serves a hub that does not lead. It answers health and
// metrics itself and sends everything else to the leader with 307 Temporary
// Redirect, which keeps the method and body: bwctl, the API client and
// spawns follow it, a browser too. While no hub leads it answers 503.
func (h *Hub) standbyHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bw_hub_leader", Help: "1 while this hub leads, 0 while it stands by."},
		func() float64 {
			if h.Leading() {
				return 1
			}
			return 0
		}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+api.PathHealth, func(w http.ResponseWriter, r *http.Request) {
		leader, _ := h.elector.Leader()
		httpx.WriteJSON(w, http.StatusOK, api.HubHealth{
			Role: api.RoleStandby, Leader: leader, Routing: h.cfg.Routing, Nodes: []api.HealthNode{},
			Crawlers: api.HealthCrawlers{ByState: map[string]int{}},
		})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		leader, self := h.elector.Leader()
		if leader == "" || self || leader == h.url {
			w.Header().Set("Retry-After", noLeaderRetry)
			httpx.WriteError(w, http.StatusServiceUnavailable, "this hub stands by and no hub leads yet: retry shortly")
			return
		}
		w.Header().Set(HeaderLeader, leader)
		w.Header().Set("Location", leader+r.URL.RequestURI())
		httpx.WriteError(w, http.StatusTemporaryRedirect, "this hub stands by: the leader is %s", leader)
	})
	return httpx.Recover(h.logger, mux)
}
