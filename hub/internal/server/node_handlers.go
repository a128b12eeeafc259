package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	var in api.RegisterRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	resp, err := s.Hub.Register(in)
	if err != nil {
		s.writeStoreError(w, "node", err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
}

// handleNodeDrain takes a spawn's word that it drains, or that it has
// drained and stopped.
func (s *Server) handleNodeDrain(w http.ResponseWriter, r *http.Request) {
	var in api.DrainRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	var err error
	if in.Done {
		err = s.Hub.NodeDrained(in.NodeID)
	} else {
		_, err = s.Hub.DrainNode(in.NodeID)
	}
	if err != nil {
		s.writeNodeError(w, in.NodeID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleDrainNode drains a spawn for an operator (bwctl node drain).
func (s *Server) handleDrainNode(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := s.Hub.DrainNode(id)
	if err != nil {
		s.writeNodeError(w, id, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, n)
}

// writeNodeError maps a node operation's error to an HTTP answer.
func (s *Server) writeNodeError(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, cluster.ErrUnknownNode) {
		httpx.WriteError(w, http.StatusNotFound, "node %q not found", id)
		return
	}
	s.writeStoreError(w, "node", err)
}

func (s *Server) handleListNodes(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, s.Hub.Nodes())
}

func (s *Server) handleReload(w http.ResponseWriter, r *http.Request) {
	var in api.ReloadRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if in.Kind != "hard" && in.Kind != "soft" {
		httpx.WriteError(w, http.StatusBadRequest, "kind must be \"hard\" or \"soft\", got %q", in.Kind)
		return
	}
	resp, err := s.Hub.Reload(r.Context(), in.Kind == "hard")
	if err != nil {
		s.writeStoreError(w, "reload", err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, s.Hub.Events())
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, s.Hub.Health())
}
