package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
)

// maxComplianceCrawlers bounds the crawlers one check names.
const maxComplianceCrawlers = 100_000

// handleCompliance serves POST /v1/compliance: the hub asks the spawn to
// check the named X crawlers' stored posts with X's batch compliance API;
// the answer is the check's outcome (a job X failed or expired is an
// outcome, not an error of the call).
func (s *Server) handleCompliance(w http.ResponseWriter, r *http.Request) {
	var req api.ComplianceRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if len(req.CrawlerIDs) > maxComplianceCrawlers {
		httpx.WriteError(w, http.StatusBadRequest, "crawler_ids must hold at most %d ids", maxComplianceCrawlers)
		return
	}
	res, err := s.Node.Compliance(r.Context(), req)
	switch {
	case errors.Is(err, node.ErrNoCompliance):
		httpx.WriteError(w, http.StatusNotImplemented, "%v", err)
	case err != nil && (errors.Is(err, node.ErrEpoch) || errors.Is(err, node.ErrNotAttached)):
		writeHubError(w, err)
	case err != nil:
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
	default:
		httpx.WriteJSON(w, http.StatusOK, res)
	}
}
