package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

const (
	// searchPageTimeout bounds one search page read through a spawn; the
	// spawn itself stops at its scan bound and time budget well before.
	searchPageTimeout = 30 * time.Second
)

// errSearchNoNode is returned when no spawn is live to search the store.
var errSearchNoNode = errors.New("server: no spawn node is live")

// handleSearchComments serves GET /v1/crawlers/{id}/comments?q=…: one page
// of a search over a crawler's stored comments, newest first.
func (s *Server) handleSearchComments(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	sq, ok := parseSearch(w, r)
	if !ok {
		return
	}
	c, err := s.Store.GetCrawler(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	page, err := s.searchPage(r.Context(), s.Hub.CrawlerView(c).Node, id, sq)
	if err != nil {
		s.writeSearchError(w, id, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, page)
}

// handleSearchUserComments serves GET /v1/users/{id}/comments: one page of
// a search over the comments of every crawler of a user, newest first
// across them all.
func (s *Server) handleSearchUserComments(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	sq, ok := parseSearch(w, r)
	if !ok {
		return
	}
	page, err := s.userSearchPage(r.Context(), id, sq)
	if err != nil {
		s.writePageError(w, fmt.Sprintf("user %d", id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, page)
}

// userSearchPage reads one page of a search over a user's crawlers,
// merged by time (search_merge.go).
func (s *Server) userSearchPage(ctx context.Context, userID int64, sq api.SearchQuery) (api.SearchPage, error) {
	crawlers, err := s.Store.UserCrawlerIDs(ctx, userID)
	if err != nil {
		return api.SearchPage{}, err
	}
	var at *mergeCursor
	if sq.Cursor != "" {
		c, err := decodeMergeCursor(sq.Cursor, crawlers)
		if err != nil {
			return api.SearchPage{}, fmt.Errorf("%w: %w", httpx.ErrBadRequest, err)
		}
		at = &c
	}
	return mergeSearch(ctx, crawlers, at, sq, func(ctx context.Context, cid int64, q api.SearchQuery) (api.SearchPage, error) {
		node := ""
		if c, err := s.Store.GetCrawler(ctx, cid); err == nil {
			node = s.Hub.CrawlerView(c).Node
		}
		return s.searchPage(ctx, node, cid, q)
	})
}

// writePageError answers a failed search or export: the store's and the
// request's refusals as writeStoreError does, the spawns' as
// writeSearchError.
func (s *Server) writePageError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, sqlstore.ErrNotFound) || errors.Is(err, httpx.ErrBadRequest) {
		s.writeStoreError(w, what, err)
		return
	}
	s.writeSearchError(w, 0, err)
}

// parseSearch reads a search's parameters and checks its query with the
// query language's parser; a refusal is answered 400 with the reason.
func parseSearch(w http.ResponseWriter, r *http.Request) (api.SearchQuery, bool) {
	if r.URL.Query().Has("n") {
		httpx.WriteError(w, http.StatusBadRequest, "n reads the latest comments; a search takes limit instead")
		return api.SearchQuery{}, false
	}
	sq, err := api.ParseSearchQuery(r.URL.Query())
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return api.SearchQuery{}, false
	}
	if sq.Q != "" {
		if _, err := query.Parse(sq.Q); err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return api.SearchQuery{}, false
		}
	}
	return sq, true
}

// writeSearchError answers a failed search page.
func (s *Server) writeSearchError(w http.ResponseWriter, crawlerID int64, err error) {
	var se *api.StatusError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusBadRequest:
		httpx.WriteError(w, http.StatusBadRequest, "%s", se.Message)
	case errors.Is(err, errSearchNoNode):
		httpx.WriteError(w, http.StatusServiceUnavailable, "no spawn node is live to read the store")
	default:
		s.Logger.Warn("comment search failed", "crawler_id", crawlerID, "err", err)
		httpx.WriteError(w, http.StatusBadGateway, "%v", err)
	}
}

// searchPage asks the spawn running the crawler (first) or other live
// spawns for one page of a search: they share the store, so any can
// answer. A spawn's refusal of the request (400) is final.
func (s *Server) searchPage(ctx context.Context, preferred string, crawlerID int64, q api.SearchQuery) (api.SearchPage, error) {
	var urls []string
	for _, n := range s.Hub.Nodes() {
		if n.ID == preferred {
			urls = append([]string{n.URL}, urls...)
		} else {
			urls = append(urls, n.URL)
		}
	}
	if len(urls) == 0 {
		return api.SearchPage{}, errSearchNoNode
	}
	var errs []error
	for _, u := range urls[:min(len(urls), exportNodeAttempts)] {
		client := api.NewNodeClient(u, api.NodeOptions{Token: s.NodeToken, HTTPClient: s.nodeHTTP(),
			Timeouts: api.NodeTimeouts{Comments: searchPageTimeout}})
		page, err := client.SearchComments(ctx, crawlerID, q)
		if err == nil {
			return page, nil
		}
		var se *api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusBadRequest {
			return api.SearchPage{}, err
		}
		errs = append(errs, fmt.Errorf("spawn at %s: %w", u, err))
	}
	return api.SearchPage{}, fmt.Errorf("search: %w", errors.Join(errs...))
}
