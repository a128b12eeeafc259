package leader

import (
	"log/slog"
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

// StandbyOptions configure the handler of a hub that stands by.
type StandbyOptions struct {
	// Routing is the routing strategy the health document names.
	Routing string
	// NodeToken authenticates a spawn's registration, and so its
	// complaint about the leader.
	NodeToken string
	// ClientCerts makes a registration need a client certificate
	// (--client-ca), as on the leader.
	ClientCerts bool
	// Leading feeds the bw_hub_leader gauge: whether the hub's control
	// loop runs. Nil reads Elector.Leading.
	Leading func() bool
	Logger  *slog.Logger
}

// StandbyHandler serves a hub that does not lead. It answers health and
// metrics itself and sends everything else to the leader with 307 Temporary
// Redirect, which keeps the method and body: bwctl, the API client and
// spawns follow it, a browser too. While no hub leads it answers 503.
func (e *Elector) StandbyHandler(opts StandbyOptions) http.Handler {
	if opts.Leading == nil {
		opts.Leading = e.Leading
	}
	if opts.Logger == nil {
		opts.Logger = e.logger
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bw_hub_leader", Help: "1 while this hub leads, 0 while it stands by."},
		func() float64 {
			if opts.Leading() {
				return 1
			}
			return 0
		}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+api.PathHealth, func(w http.ResponseWriter, r *http.Request) {
		leader, _ := e.Leader()
		httpx.WriteJSON(w, http.StatusOK, api.HubHealth{
			Role: api.RoleStandby, Leader: leader, Routing: opts.Routing, Nodes: []api.HealthNode{},
			Crawlers: api.HealthCrawlers{ByState: map[string]int{}},
		})
	})
	redirect := func(w http.ResponseWriter, r *http.Request) {
		leader, self := e.Leader()
		if leader == "" || self || leader == e.url {
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
	var register http.Handler = httpx.RequireToken(opts.NodeToken, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.RegisterRequest
		if err := httpx.DecodeJSON(w, r, &req); err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
		if c := req.LeaderUnreachable; c != nil && req.NodeID != "" && len(req.NodeID) <= 64 && c.Term > 0 && len(c.URL) <= 2048 {
			if err := e.store.Complain(r.Context(), req.NodeID, c.Term, strings.TrimRight(c.URL, "/")); err != nil {
				opts.Logger.Warn("unable to record a spawn's complaint", "node_id", req.NodeID, "err", err)
			} else {
				opts.Logger.Info("spawn cannot reach the leader", "node_id", req.NodeID, "leader", c.URL, "term", c.Term)
			}
		}
		redirect(w, r)
	}))
	if opts.ClientCerts {
		register = httpx.RequireClientCert(func(string) bool { return true }, register)
	}
	mux.Handle("POST "+api.PathRegister, register)
	mux.HandleFunc("/", redirect)
	return httpx.Recover(opts.Logger, mux)
}
