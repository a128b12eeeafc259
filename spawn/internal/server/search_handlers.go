package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// handleSearch answers one page of a search over a crawler's stored
// comments: q is the query language, evaluated on each stored comment by
// query.Match, the evaluator the spawns' matcher agrees with. A page reads
// at most the store's scan bound and time budget, and says how far it got.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("crawler_id"), 10, 64)
	if err != nil || id <= 0 {
		httpx.WriteError(w, http.StatusBadRequest, "crawler_id must be a positive integer")
		return
	}
	sq, err := api.ParseSearchQuery(r.URL.Query())
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	match, err := commentMatcher(sq.Q)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	searcher, ok := s.Store.(store.Searcher)
	if !ok {
		httpx.WriteError(w, http.StatusNotImplemented, "this spawn's store cannot search comments")
		return
	}
	page, err := searcher.Search(r.Context(), id, store.Search{Match: match, Range: store.Range{Since: sq.Since, Until: sq.Until},
		Cursor: sq.Cursor, Limit: sq.Limit})
	switch {
	case errors.Is(err, store.ErrCursor):
		httpx.WriteError(w, http.StatusBadRequest, "cursor %q is not one this search gave", sq.Cursor)
	case err != nil:
		httpx.WriteError(w, http.StatusBadGateway, "store: %v", err)
	default:
		if page.Comments == nil {
			page.Comments = []api.Comment{}
		}
		httpx.WriteJSON(w, http.StatusOK, api.SearchPage{Comments: page.Comments, NextCursor: page.Next, Scanned: int64(page.Scanned)})
	}
}

// commentMatcher parses a search query; an empty one matches every
// comment (nil).
func commentMatcher(q string) (func(*api.Comment) bool, error) {
	if q == "" {
		return nil, nil
	}
	parsed, err := query.Parse(q)
	if err != nil {
		return nil, err
	}
	return func(c *api.Comment) bool {
		_, ok := parsed.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang, Sentiment: api.SentimentLabel(c.Sentiment)})
		return ok
	}, nil
}
