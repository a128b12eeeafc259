package server

import (
	"net/http"
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// maxRecent caps GET /v1/comments.
const maxRecent = 1000

// handleRecent serves GET /v1/comments: a crawler's latest comments, read
// from the store (the hub reads them through any live spawn).
func (s *Server) handleRecent(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("crawler_id"), 10, 64)
	if err != nil || id <= 0 {
		httpx.WriteError(w, http.StatusBadRequest, "crawler_id must be a positive integer")
		return
	}
	limit := 20
	if v := r.URL.Query().Get("n"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit <= 0 || limit > maxRecent {
			httpx.WriteError(w, http.StatusBadRequest, "n must be between 1 and %d", maxRecent)
			return
		}
	}
	comments, err := s.Node.Recent(r.Context(), id, limit)
	if err != nil {
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
		return
	}
	if comments == nil {
		comments = []api.Comment{}
	}
	httpx.WriteJSON(w, http.StatusOK, comments)
}
