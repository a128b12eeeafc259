package server

import (
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// DefaultScalingTarget is how many subscribers one spawn node should run when
// the hub's --scaling-target is not set.
const DefaultScalingTarget = 500

// desiredNodes is the spawn count that runs subscribers at no more than
// target a node, and never fewer than one node: a cluster scaled to zero
// could not pick up the next crawler.
func desiredNodes(subscribers, target int) int {
	if target <= 0 {
		target = DefaultScalingTarget
	}
	return max(1, (subscribers+target-1)/target)
}

// scaling computes the autoscaling signal from the hub's live view. The
// subscribers it counts are the ones assigned or waiting for a node: every
// enabled crawler that is not at its own or its user's limit.
func (s *Server) scaling() api.Scaling { return s.scalingFrom(s.Hub.Health()) }

// scalingFrom is scaling for a health document already read.
func (s *Server) scalingFrom(h api.HubHealth) api.Scaling {
	target := s.ScalingTarget
	if target <= 0 {
		target = DefaultScalingTarget
	}
	subscribers := h.Crawlers.Total - h.Crawlers.ByState[api.StateDisabled] - h.Crawlers.ByState[api.StateLimitReached]
	return api.Scaling{
		Nodes:                    len(h.Nodes),
		Subscribers:              subscribers,
		TargetSubscribersPerNode: target,
		DesiredNodes:             desiredNodes(subscribers, target),
	}
}

func (s *Server) handleScaling(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, s.scaling())
}

func (s *Server) handleCrawlerHistory(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if _, err := s.Store.GetCrawler(r.Context(), id); err != nil {
		s.writeStoreError(w, "crawler", err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s.Hub.History(id))
}
