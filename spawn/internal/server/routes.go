package node

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// maxRecent caps GET /v1/comments.
const maxRecent = 1000

// Handler lists every route of the spawn's HTTP server. The node API needs
// the node token; health and metrics are open (health shows crawl targets
// unredacted only to a caller with the token).
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	node := func(h http.HandlerFunc) http.Handler { return httpx.RequireToken(n.cfg.NodeToken, h) }

	mux.Handle("PUT "+api.PathSubscribers, node(n.handleUpsert))
	mux.Handle("POST "+api.PathSubscribersRemove, node(n.handleRemove))
	mux.Handle("POST "+api.PathPoll, node(n.handlePoll))
	mux.Handle("GET /v1/comments", node(n.handleRecent))
	mux.Handle("GET "+api.PathNodeExport, node(n.handleExport))
	mux.Handle("GET "+api.PathNodeThread, node(n.handleThread))
	mux.Handle("POST "+api.PathRecover, node(n.handleRecover))

	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET "+api.PathHealth, func(w http.ResponseWriter, r *http.Request) {
		full := n.cfg.NodeToken != "" && httpx.HasToken(r, n.cfg.NodeToken)
		httpx.WriteJSON(w, http.StatusOK, n.Health(full))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.metrics.Registry, promhttp.HandlerOpts{}))
	return httpx.Recover(n.logger, httpx.JSONErrors(mux))
}

func (n *Node) handleUpsert(w http.ResponseWriter, r *http.Request) {
	var req api.SubscribersRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	resp, err := n.Upsert(req)
	if errors.Is(err, ErrNotAttached) && n.awaitRegistration(r.Context()) {
		resp, err = n.Upsert(req)
	}
	if err != nil {
		writeHubError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
}

func (n *Node) handleRemove(w http.ResponseWriter, r *http.Request) {
	var req api.RemoveRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	err := n.Remove(req)
	if errors.Is(err, ErrNotAttached) && n.awaitRegistration(r.Context()) {
		err = n.Remove(req)
	}
	if err != nil {
		writeHubError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (n *Node) handlePoll(w http.ResponseWriter, r *http.Request) {
	var req api.PollRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	resp, err := n.Poll(req)
	if errors.Is(err, ErrNotAttached) && n.awaitRegistration(r.Context()) {
		resp, err = n.Poll(req)
	}
	if err != nil {
		writeHubError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
}

func (n *Node) handleRecent(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("crawler_id"), 10, 64)
	if err != nil || id <= 0 {
		httpx.WriteError(w, http.StatusBadRequest, "crawler_id must be a positive integer")
		return
	}
	limit := 20
	if s := r.URL.Query().Get("n"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit <= 0 || limit > maxRecent {
			httpx.WriteError(w, http.StatusBadRequest, "n must be between 1 and %d", maxRecent)
			return
		}
	}
	comments, err := n.Recent(r.Context(), id, limit)
	if err != nil {
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
		return
	}
	if comments == nil {
		comments = []api.Comment{}
	}
	httpx.WriteJSON(w, http.StatusOK, comments)
}

func (n *Node) handleRecover(w http.ResponseWriter, r *http.Request) {
	var req api.RecoverRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if req.NodeID == "" {
		httpx.WriteError(w, http.StatusBadRequest, "node_id is required")
		return
	}
	incs, err := n.RecoverUsage(r.Context(), req)
	switch {
	case errors.Is(err, ErrNoJournal):
		httpx.WriteError(w, http.StatusNotImplemented, "%v", err)
	case err != nil && (errors.Is(err, ErrEpoch) || errors.Is(err, ErrNotAttached)):
		writeHubError(w, err)
	case err != nil:
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
	default:
		httpx.WriteJSON(w, http.StatusOK, api.RecoverResponse{Increments: incs})
	}
}

// writeHubError maps the node's refusals to HTTP: all are 409 Conflict, so
// the hub can tell "this spawn does not serve you" from a transport error.
func writeHubError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrEpoch), errors.Is(err, ErrNotAttached), errors.Is(err, ErrStale):
		httpx.WriteError(w, http.StatusConflict, "%v", err)
	default:
		httpx.WriteError(w, http.StatusInternalServerError, "%v", err)
	}
}
