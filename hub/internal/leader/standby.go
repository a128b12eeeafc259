package app

import (
	"net/http"
	"strings"

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
	redirect := func(w http.ResponseWriter, r *http.Request) {
		leader, self := h.elector.Leader()
		if leader == "" || self || leader == h.url {
			w.Header().Set("Retry-After", noLeaderRetry)
			httpx.WriteError(w, http.StatusServiceUnavailable, "this hub stands by and no hub leads yet: retry shortly")
			return
		}
		w.Header().Set(HeaderLeader, leader)
		w.Header().Set("Location", leader+r.URL.RequestURI())
		httpx.WriteError(w, http.StatusTemporaryRedirect, "this hub stands by: the leader is %s", leader)
	}
	// A spawn registering here may say it cannot reach the leader: the
	// complaint is recorded (authenticated as a registration is), and the
	// spawn is redirected as any caller.
	var register http.Handler = httpx.RequireToken(h.cfg.NodeToken, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.RegisterRequest
		if err := httpx.DecodeJSON(w, r, &req); err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
		if c := req.LeaderUnreachable; c != nil && req.NodeID != "" && len(req.NodeID) <= 64 && c.Term > 0 && len(c.URL) <= 2048 {
			if err := h.store.Complain(r.Context(), req.NodeID, c.Term, strings.TrimRight(c.URL, "/")); err != nil {
				h.logger.Warn("unable to record a spawn's complaint", "node_id", req.NodeID, "err", err)
			} else {
				h.logger.Info("spawn cannot reach the leader", "node_id", req.NodeID, "leader", c.URL, "term", c.Term)
			}
		}
		redirect(w, r)
	}))
	if h.cfg.ClientCA != "" {
		register = httpx.RequireClientCert(func(string) bool { return true }, register)
	}
	mux.Handle("POST "+api.PathRegister, register)
	mux.HandleFunc("/", redirect)
	return httpx.Recover(h.logger, mux)
}
