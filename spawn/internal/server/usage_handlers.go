package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
)

// handleRecover serves POST /v1/recover: the hub asks a live spawn to read
// a lost node's unreported usage back from the shared store.
func (s *Server) handleRecover(w http.ResponseWriter, r *http.Request) {
	var req api.RecoverRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if req.NodeID == "" {
		httpx.WriteError(w, http.StatusBadRequest, "node_id is required")
		return
	}
	incs, err := s.Node.RecoverUsage(r.Context(), req)
	switch {
	case errors.Is(err, node.ErrNoJournal):
		httpx.WriteError(w, http.StatusNotImplemented, "%v", err)
	case err != nil && (errors.Is(err, node.ErrEpoch) || errors.Is(err, node.ErrNotAttached)):
		writeHubError(w, err)
	case err != nil:
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
	default:
		httpx.WriteJSON(w, http.StatusOK, api.RecoverResponse{Increments: incs})
	}
}
