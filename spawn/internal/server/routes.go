// Package server is the spawn's HTTP surface: the node API the hub calls
// (subscribers, polls, comment reads, usage recovery) behind the node
// token, and the open health and metrics endpoints. It mirrors the hub's
// server: every route is listed in Handler, the handlers live one file per
// resource, and each calls the node runtime through its exported methods.
package server

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Server serves the spawn's routes.
type Server struct {
	Node *node.Node
	// Store is the store the node writes to (node.Config.Store): exports
	// and threads are read from it when it can serve them.
	Store     store.Store
	NodeToken string
	Logger    *slog.Logger
	// Hosts are the names the spawn answers to; nil means loopback only
	// (httpx.Guard).
	Hosts *httpx.Hosts
}

// Handler lists every route of the spawn. The node API needs the node
// token; health and metrics are open (health shows crawl targets
// unredacted only to a caller with the token). Every route, and whatever
// the router answers itself, is behind httpx.Guard: a request must name the
// spawn by one of its names, come from no other origin, and send its body
// as JSON.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	node := func(h http.HandlerFunc) http.Handler { return httpx.RequireToken(s.NodeToken, h) }

	// Node API.
	mux.Handle("PUT "+api.PathSubscribers, node(s.handleUpsert))
	mux.Handle("POST "+api.PathSubscribersRemove, node(s.handleRemove))
	mux.Handle("POST "+api.PathPoll, node(s.handlePoll))
	mux.Handle("GET /v1/comments", node(s.handleRecent))
	mux.Handle("GET "+api.PathNodeExport, node(s.handleExport))
	mux.Handle("GET "+api.PathNodeSearch, node(s.handleSearch))
	mux.Handle("GET "+api.PathNodeThread, node(s.handleThread))
	mux.Handle("POST "+api.PathRecover, node(s.handleRecover))
	mux.Handle("POST "+api.PathNodeRetract, node(s.handleRetract))
	mux.Handle("POST "+api.PathNodeCompliance, node(s.handleCompliance))

	// Open.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET "+api.PathHealth, s.handleHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.Node.Metrics().Registry, promhttp.HandlerOpts{}))
	return httpx.Recover(s.Logger, httpx.JSONErrors(httpx.Guard(s.Hosts, mux)))
}

// handleHealth serves GET /v1/health, in full to a caller with the node
// token.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	full := s.NodeToken != "" && httpx.HasToken(r, s.NodeToken)
	httpx.WriteJSON(w, http.StatusOK, s.Node.Health(full))
}

// writeHubError maps the node's refusals to HTTP: all are 409 Conflict, so
// the hub can tell "this spawn does not serve you" from a transport error.
func writeHubError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, node.ErrEpoch), errors.Is(err, node.ErrNotAttached), errors.Is(err, node.ErrStale):
		httpx.WriteError(w, http.StatusConflict, "%v", err)
	default:
		httpx.WriteError(w, http.StatusInternalServerError, "%v", err)
	}
}
