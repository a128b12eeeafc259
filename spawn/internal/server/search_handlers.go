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
	parsed, match, err := commentMatcher(sq.Q)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	searcher, ok := s.Store.(store.Searcher)
	if !ok {
		httpx.WriteError(w, http.StatusNotImplemented, "this spawn's store cannot search comments")
		return
	}
	page, err := searcher.Search(r.Context(), id, store.Search{Match: match, Query: parsed, Range: store.Range{Since: sq.Since, Until: sq.Until},
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
		out := api.SearchPage{Comments: page.Comments, NextCursor: page.Next, Scanned: int64(page.Scanned)}
		if page.Next != "" && !page.Frontier.IsZero() {
			f := page.Frontier.UTC()
			out.Frontier = &f
		}
		httpx.WriteJSON(w, http.StatusOK, out)
	}
}

// commentMatcher parses a search query, once: the store narrows by the
// parsed query where it has an index, and the matcher checks every
// comment it reads. An empty query matches every comment (nil, nil).
func commentMatcher(q string) (*query.Query, func(*api.Comment) bool, error) {
	if q == "" {
		return nil, nil, nil
	}
	parsed, err := query.Parse(q)
	if err != nil {
		return nil, nil, err
	}
	return parsed, func(c *api.Comment) bool {
		_, ok := parsed.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang, Sentiment: api.SentimentLabel(c.Sentiment)})
		return ok
	}, nil
}
