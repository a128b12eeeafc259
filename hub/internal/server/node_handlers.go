package server

import (
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
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
