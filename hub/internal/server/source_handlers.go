package server

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// handleSources serves GET /v1/sources: the declarations of the source
// kinds the hub knows, builtin ones first in the spawn's order, then those
// spawns brought.
func (s *Server) handleSources(w http.ResponseWriter, r *http.Request) {
	all := s.Hub.Sources().All()
	rank := map[string]int{}
	for i, b := range api.BuiltinSources() {
		rank[b.Name] = i + 1
	}
	slices.SortStableFunc(all, func(a, b api.SourceInfo) int {
		ra, rb := rank[a.Name], rank[b.Name]
		if ra == 0 {
			ra = len(rank) + 1
		}
		if rb == 0 {
			rb = len(rank) + 1
		}
		return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a.Name, b.Name))
	})
	httpx.WriteJSON(w, http.StatusOK, all)
}
