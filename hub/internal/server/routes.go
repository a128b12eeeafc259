// Package server is the hub's HTTP surface: the admin API (bwctl, the
// dashboard) behind the admin token, the node API (spawn registration)
// behind the node token, and the open health and metrics endpoints.
package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/alert"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Server serves the hub's routes.
type Server struct {
	Hub        *cluster.Hub
	Store      *sqlstore.Store
	AdminToken string
	NodeToken  string
	Logger     *slog.Logger
	// ScalingTarget is the subscribers per spawn node GET /v1/scaling aims
	// at; zero means DefaultScalingTarget.
	ScalingTarget int
	// Alerts evaluates and delivers alert rules (alert_handlers.go).
	Alerts *alert.Service
	// Hosts are the names the hub answers to; nil means loopback only
	// (httpx.Guard).
	Hosts *httpx.Hosts
	// NodeHTTPClient reads comments from spawns (searches, exports,
	// threads): the hub's client for spawns, with their TLS settings. Nil
	// is a plain client.
	NodeHTTPClient *http.Client
}

// nodeHTTP is the client of the hub's comment reads through spawns.
func (s *Server) nodeHTTP() *http.Client {
	if s.NodeHTTPClient != nil {
		return s.NodeHTTPClient
	}
	return nodeHTTPClient
}

// Handler lists every route of the hub. Every one of them, and whatever the
// router answers itself, is behind httpx.Guard: a request must name the hub
// by one of its names, come from no other origin, and send its body as
// JSON.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	admin := func(h http.HandlerFunc) http.Handler { return httpx.RequireToken(s.AdminToken, h) }
	node := func(h http.HandlerFunc) http.Handler { return httpx.RequireToken(s.NodeToken, h) }

	// Node API.
	mux.Handle("POST "+api.PathRegister, node(s.handleRegister))
	mux.Handle("POST "+api.PathDrain, node(s.handleNodeDrain))

	// Admin API.
	mux.Handle("POST /v1/users", admin(s.handleCreateUser))
	mux.Handle("GET /v1/users", admin(s.handleListUsers))
	mux.Handle("GET /v1/users/{id}", admin(s.handleGetUser))
	mux.Handle("PATCH /v1/users/{id}", admin(s.handleUpdateUser))
	mux.Handle("DELETE /v1/users/{id}", admin(s.handleDeleteUser))
	mux.Handle("POST /v1/crawlers", admin(s.handleCreateCrawler))
	mux.Handle("GET /v1/crawlers", admin(s.handleListCrawlers))
	mux.Handle("GET /v1/crawlers/{id}", admin(s.handleGetCrawler))
	mux.Handle("PATCH /v1/crawlers/{id}", admin(s.handleUpdateCrawler))
	mux.Handle("DELETE /v1/crawlers/{id}", admin(s.handleDeleteCrawler))
	mux.Handle("GET /v1/crawlers/{id}/comments", admin(s.handleComments))
	mux.Handle("GET "+api.PathUserComments, admin(s.handleSearchUserComments))
	mux.Handle("GET "+api.PathCrawlerExport, admin(s.handleExportCrawlerSearch))
	mux.Handle("GET "+api.PathUserExport, admin(s.handleExportUserSearch))
	mux.Handle("GET "+api.PathTermActivity, admin(s.handleTermActivity))
	mux.Handle("GET "+api.PathCompare, admin(s.handleCompare))
	mux.Handle("GET "+api.PathCrawlerHistories, admin(s.handleCrawlerHistories))
	mux.Handle("POST "+api.PathForget, admin(s.handleForget))
	mux.Handle("GET "+api.PathComplianceRuns, admin(s.handleComplianceRuns))
	mux.Handle("POST "+api.PathComplianceRuns, admin(s.handleRunCompliance))
	mux.Handle("POST "+api.PathValidateQuery, admin(s.handleValidateQuery))
	mux.Handle("GET /v1/nodes", admin(s.handleListNodes))
	mux.Handle("POST /v1/nodes/{id}/drain", admin(s.handleDrainNode))
	mux.Handle("POST /v1/reload", admin(s.handleReload))
	mux.Handle("GET /v1/events", admin(s.handleEvents))
	mux.Handle("GET "+api.PathCrawlerHistory, admin(s.handleCrawlerHistory))
	mux.Handle("GET "+api.PathScaling, admin(s.handleScaling))
	mux.Handle("GET "+api.PathSources, admin(s.handleSources))
	mux.Handle("GET "+api.PathCrawlerTerms, admin(s.handleCrawlerTerms))
	mux.Handle("GET "+api.PathUserTerms, admin(s.handleUserTerms))
	mux.Handle("GET "+api.PathCrawlerActivity, admin(s.handleCrawlerActivity))
	mux.Handle("GET "+api.PathCrawlerAuthors, admin(s.handleCrawlerAuthors))
	mux.Handle("GET "+api.PathUserAuthors, admin(s.handleUserAuthors))
	mux.Handle("GET "+api.PathCrawlerBreakdown, admin(s.handleCrawlerBreakdown))
	mux.Handle("GET "+api.PathUserBreakdown, admin(s.handleUserBreakdown))
	mux.Handle("GET "+api.PathSuggestions, admin(s.handleSuggestions))
	mux.Handle("GET "+api.PathThread, admin(s.handleThread))
	mux.Handle("POST "+api.PathAlerts, admin(s.handleCreateAlertRule))
	mux.Handle("GET "+api.PathAlerts, admin(s.handleListAlertRules))
	mux.Handle("POST "+api.PathAlertPreview, admin(s.handlePreviewAlertRule))
	mux.Handle("GET "+api.PathAlert, admin(s.handleGetAlertRule))
	mux.Handle("DELETE "+api.PathAlert, admin(s.handleDeleteAlertRule))
	mux.Handle("POST "+api.PathAlertTest, admin(s.handleTestAlertRule))
	mux.Handle("GET "+api.PathAlertEvents, admin(s.handleAlertEvents))

	// Dashboard: the page holds no data; it reads the admin API above.
	mux.HandleFunc("GET /{$}", s.handleDashboard)
	mux.HandleFunc("GET /assets/{file...}", s.handleAsset)

	// Open.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET "+api.PathHealth, s.handleHealth)
	mux.Handle("GET /metrics", s.metricsHandler())
	return httpx.Recover(s.Logger, httpx.JSONErrors(httpx.Guard(s.Hosts, mux)))
}

// pathID reads the {id} path value as a positive integer.
func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		httpx.WriteError(w, http.StatusBadRequest, "id must be a positive integer, got %q", r.PathValue("id"))
		return 0, false
	}
	return id, true
}

// operatorReason is err's text without the internal packages' sentinel
// prefixes ("sqlstore: invalid: user 9 does not exist" reads "user 9 does
// not exist").
func operatorReason(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{sqlstore.ErrInvalid, cluster.ErrInvalid} {
		msg = strings.ReplaceAll(msg, sentinel.Error()+": ", "")
	}
	return msg
}

// writeStoreError maps store and validation errors to HTTP answers.
func (s *Server) writeStoreError(w http.ResponseWriter, what string, err error) {
	switch {
	case errors.Is(err, sqlstore.ErrNotFound):
		httpx.WriteError(w, http.StatusNotFound, "%s not found", what)
	case errors.Is(err, sqlstore.ErrInvalid), errors.Is(err, query.ErrInvalid), errors.Is(err, httpx.ErrBadRequest), errors.Is(err, cluster.ErrInvalid):
		httpx.WriteError(w, http.StatusBadRequest, "%s", operatorReason(err))
	default:
		s.Logger.Error("request failed", "what", what, "err", err)
		httpx.WriteError(w, http.StatusInternalServerError, "internal error")
	}
}
