package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
)

// handlePoll serves POST /v1/poll: the hub's batched poll of every
// subscriber of the node.
func (s *Server) handlePoll(w http.ResponseWriter, r *http.Request) {
	var req api.PollRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	resp, err := s.Node.Poll(req)
	if errors.Is(err, node.ErrNotAttached) && s.Node.AwaitRegistration(r.Context()) {
		resp, err = s.Node.Poll(req)
	}
	if err != nil {
		writeHubError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
}
