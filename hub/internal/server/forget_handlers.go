package server

import (
	"errors"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// handleForget serves POST /v1/forget {"source", "author"}: every comment
// of the author (an author_id or a handle) in every crawler of the source
// is removed and kept from being stored again; the answer counts the
// comments removed, per crawler ({"removed": n}).
func (s *Server) handleForget(w http.ResponseWriter, r *http.Request) {
	var in api.Forget
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := httpx.CheckText("author", in.Author); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	out, err := s.Hub.Forget(r.Context(), in.Source, in.Author)
	switch {
	case errors.Is(err, cluster.ErrNoStore):
		httpx.WriteError(w, http.StatusServiceUnavailable, "no spawn node is live to remove the comments")
	case err != nil:
		s.writeStoreError(w, "forget", err)
	default:
		httpx.WriteJSON(w, http.StatusOK, out)
	}
}
