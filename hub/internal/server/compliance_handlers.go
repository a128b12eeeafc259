package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// handleComplianceRuns serves GET /v1/compliance/runs: the latest X
// compliance checks, newest first, with their outcome.
func (s *Server) handleComplianceRuns(w http.ResponseWriter, r *http.Request) {
	runs, err := s.Hub.ComplianceRuns(r.Context())
	if err != nil {
		s.writeStoreError(w, "compliance runs", err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, runs)
}

// handleRunCompliance serves POST /v1/compliance/runs[?source=KIND]: one
// compliance check now of a kind's stored items (the first kind with a
// check and crawlers when none is named; the leader also runs them every
// --compliance-interval). It answers when the service's job ends.
func (s *Server) handleRunCompliance(w http.ResponseWriter, r *http.Request) {
	run, err := s.Hub.RunCompliance(r.Context(), r.URL.Query().Get("source"))
	switch {
	case errors.Is(err, cluster.ErrComplianceBusy):
		httpx.WriteError(w, http.StatusConflict, "%v", err)
	case errors.Is(err, cluster.ErrNothingToCheck):
		httpx.WriteError(w, http.StatusConflict, "%v", err)
	case err != nil:
		s.writeStoreError(w, "compliance run", err)
	default:
		httpx.WriteJSON(w, http.StatusOK, run)
	}
}
