package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// handleExport answers one page of a crawler's stored comments: the hub's
// export reads a crawler through a live spawn, page by page, so neither
// side holds more than a page.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("crawler_id"), 10, 64)
	if err != nil || id <= 0 {
		httpx.WriteError(w, http.StatusBadRequest, "crawler_id must be a positive integer")
		return
	}
	q, err := api.ParseExportQuery(r.URL.Query())
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	ex, ok := s.Store.(store.Exporter)
	if !ok {
		httpx.WriteError(w, http.StatusNotImplemented, "this spawn's store cannot export comments")
		return
	}
	page, err := ex.Export(r.Context(), id, store.Range{Since: q.Since, Until: q.Until}, q.Cursor, q.Limit)
	switch {
	case errors.Is(err, store.ErrCursor):
		httpx.WriteError(w, http.StatusBadRequest, "cursor %q is not one this export gave", q.Cursor)
	case err != nil:
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
	default:
		if page.Comments == nil {
			page.Comments = []api.Comment{}
		}
		httpx.WriteJSON(w, http.StatusOK, api.CommentPage{Comments: page.Comments, NextCursor: page.Next})
	}
}
