package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// exportPageTimeout bounds reading one export page through a spawn: a page
// is one store query, but a cold Cassandra partition can take seconds.
const exportPageTimeout = 30 * time.Second

// exportNodeAttempts is how many live spawns one page is asked of before
// the hub gives up: they share the store, so any of them can answer.
const exportNodeAttempts = 2

// nodeHTTPClient sends the hub's export reads to spawns.
var nodeHTTPClient = &http.Client{}

// pagedParams are the parameters that ask GET /v1/crawlers/{id}/comments
// for the paged form; without any of them it answers the recent comments as
// a bare list, as it always has.
var pagedParams = []string{"since", "until", "cursor", "limit"}

// handleComments serves GET /v1/crawlers/{id}/comments: the latest n
// comments as a list, or, given since, until, cursor or limit, one page of
// all the crawler's stored comments, or, given q, one page of a search
// (search_handlers.go).
func (s *Server) handleComments(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("q") {
		s.handleSearchComments(w, r)
		return
	}
	for _, p := range pagedParams {
		if r.URL.Query().Has(p) {
			s.handleExportComments(w, r)
			return
		}
	}
	s.handleRecentComments(w, r)
}

func (s *Server) handleExportComments(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if r.URL.Query().Has("n") {
		httpx.WriteError(w, http.StatusBadRequest, "n reads the latest comments; a paged read takes limit instead")
		return
	}
	q, err := api.ParseExportQuery(r.URL.Query())
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	c, err := s.Store.GetCrawler(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	page, err := s.exportPage(r.Context(), s.Hub.CrawlerView(c).Node, id, q)
	var se *api.StatusError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusBadRequest:
		httpx.WriteError(w, http.StatusBadRequest, "%s", se.Message)
	case errors.Is(err, errNoLiveNode):
		httpx.WriteError(w, http.StatusServiceUnavailable, "no spawn node is live to read the store")
	case err != nil:
		s.Logger.Warn("comment export failed", "crawler_id", id, "err", err)
		httpx.WriteError(w, http.StatusBadGateway, "%v", err)
	default:
		httpx.WriteJSON(w, http.StatusOK, page)
	}
}

// errNoLiveNode is returned by exportPage when no spawn is registered.
var errNoLiveNode = errors.New("server: no spawn node is live")

// exportPage asks the spawn running the crawler (first) or other live
// spawns for one page. A spawn's refusal of the request (400) is final.
func (s *Server) exportPage(ctx context.Context, preferred string, crawlerID int64, q api.ExportQuery) (api.CommentPage, error) {
	nodes := s.Hub.Nodes()
	var urls []string
	for _, n := range nodes {
		if n.ID == preferred {
			urls = append([]string{n.URL}, urls...)
		} else {
			urls = append(urls, n.URL)
		}
	}
	if len(urls) == 0 {
		return api.CommentPage{}, errNoLiveNode
	}
	var errs []error
	for _, u := range urls[:min(len(urls), exportNodeAttempts)] {
		client := api.NewNodeClient(u, api.NodeOptions{Token: s.NodeToken, HTTPClient: s.nodeHTTP(),
			Timeouts: api.NodeTimeouts{Comments: exportPageTimeout}})
		page, err := client.ExportComments(ctx, crawlerID, q)
		if err == nil {
			return page, nil
		}
		var se *api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusBadRequest {
			return api.CommentPage{}, err
		}
		errs = append(errs, fmt.Errorf("spawn at %s: %w", u, err))
	}
	return api.CommentPage{}, fmt.Errorf("comments: %w", errors.Join(errs...))
}

// handleValidateQuery checks a crawler query exactly as creating the
// crawler would (canonical) and stores nothing: the dashboard validates as
// the operator types, and can never disagree with the API. Without a
// source it checks a query of the language alone (an alert's match rule).
func (s *Server) handleValidateQuery(w http.ResponseWriter, r *http.Request) {
	var in api.QueryValidate
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if in.Source == "" {
		q, err := query.ParseList(s.queryTerms("", in.Query))
		if err != nil {
			s.writeStoreError(w, "query", err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, api.QueryValidation{Canonical: q.String(), QueryUUID: q.UUID("").String()})
		return
	}
	var row sqlstore.Crawler
	if err := s.canonical(&row, in.Source, s.queryTerms(in.Source, in.Query), s.queryTerms("", in.Keywords)); err != nil {
		s.writeStoreError(w, "query", err)
		return
	}
	out := api.QueryValidation{Canonical: row.CanonicalQuery(), KeywordsCanonical: row.CanonicalKeywords(), QueryUUID: row.QueryUUID}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// queryTerms turns a query typed as one string into the list the API takes:
// URLs (a feed crawler's) are comma-separated; a query in the language
// stays whole (its commas are the language's OR), so error columns match
// what was typed.
func (s *Server) queryTerms(source, q string) []string {
	if strings.TrimSpace(q) == "" {
		return nil
	}
	if !s.readsURLs(source) {
		return []string{q}
	}
	return strings.Split(q, ",")
}
