package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
)

// handleUpsert serves PUT /v1/subscribers: the hub sends new, moved and
// changed subscribers. A request that arrives while the node's
// registration is in flight waits for it (node.AwaitRegistration).
func (s *Server) handleUpsert(w http.ResponseWriter, r *http.Request) {
	var req api.SubscribersRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	resp, err := s.Node.Upsert(req)
	if errors.Is(err, node.ErrNotAttached) && s.Node.AwaitRegistration(r.Context()) {
		resp, err = s.Node.Upsert(req)
	}
	if err != nil {
		writeHubError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
}

// handleRemove serves POST /v1/subscribers/remove.
func (s *Server) handleRemove(w http.ResponseWriter, r *http.Request) {
	var req api.RemoveRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	err := s.Node.Remove(req)
	if errors.Is(err, node.ErrNotAttached) && s.Node.AwaitRegistration(r.Context()) {
		err = s.Node.Remove(req)
	}
	if err != nil {
		writeHubError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
