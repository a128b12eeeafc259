package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
)

// maxRetractRequest bounds the retractions one POST /v1/retractions
// carries.
const maxRetractRequest = 1000

// handleRetract serves POST /v1/retractions: the hub hands the spawn
// retractions to apply to its store now (a forget) and reads back how many
// comments each crawler lost.
func (s *Server) handleRetract(w http.ResponseWriter, r *http.Request) {
	var req api.RetractRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if len(req.Retractions) == 0 || len(req.Retractions) > maxRetractRequest {
		httpx.WriteError(w, http.StatusBadRequest, "retractions must hold 1 to %d entries", maxRetractRequest)
		return
	}
	for _, x := range req.Retractions {
		if err := checkRetraction(x); err != "" {
			httpx.WriteError(w, http.StatusBadRequest, "%s", err)
			return
		}
	}
	resp, err := s.Node.Retract(r.Context(), req)
	switch {
	case errors.Is(err, node.ErrNoRetractor):
		httpx.WriteError(w, http.StatusNotImplemented, "%v", err)
	case err != nil && (errors.Is(err, node.ErrEpoch) || errors.Is(err, node.ErrNotAttached)):
		writeHubError(w, err)
	case err != nil:
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
	default:
		httpx.WriteJSON(w, http.StatusOK, resp)
	}
}

// checkRetraction says what is wrong with a retraction, "" when nothing.
func checkRetraction(x api.Retraction) string {
	if x.Source == "" {
		return "a retraction needs its source"
	}
	switch x.Op {
	case api.RetractDelete, api.RetractUpdate:
		if x.ID == "" {
			return "a " + x.Op + " needs the comment id"
		}
	case api.RetractAccount, api.RetractForget:
		if x.Author == "" {
			return "a " + x.Op + " needs the author"
		}
	default:
		return "op must be delete, update, account or forget, not " + x.Op
	}
	return ""
}
