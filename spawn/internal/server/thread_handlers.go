package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// handleThread answers a comment's conversation from the store, by
// published time: the hub reads threads through a live spawn, as it reads
// recent comments.
func (s *Server) handleThread(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("crawler_id"), 10, 64)
	if err != nil || id <= 0 {
		httpx.WriteError(w, http.StatusBadRequest, "crawler_id must be a positive integer")
		return
	}
	commentID := r.URL.Query().Get("comment_id")
	if commentID == "" {
		httpx.WriteError(w, http.StatusBadRequest, "comment_id is required")
		return
	}
	tr, ok := s.Store.(store.ThreadReader)
	if !ok {
		httpx.WriteError(w, http.StatusNotImplemented, "this spawn's store cannot read threads")
		return
	}
	threadID, comments, err := tr.Thread(r.Context(), id, commentID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpx.WriteError(w, http.StatusNotFound, "comment %q of crawler %d is not stored", commentID, id)
	case err != nil:
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
	default:
		if comments == nil {
			comments = []api.Comment{}
		}
		httpx.WriteJSON(w, http.StatusOK, api.Thread{ThreadID: threadID, Comments: comments})
	}
}
