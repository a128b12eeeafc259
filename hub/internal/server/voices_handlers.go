package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// Voices reads: defaults and bounds.
const (
	defaultAuthorsN = 20
	maxAuthorsN     = 500
)

// handleCrawlerAuthors serves GET /v1/crawlers/{id}/authors: the authors
// with the most comments over the window, exact, from the crawler's hour
// buckets.
func (s *Server) handleCrawlerAuthors(w http.ResponseWriter, r *http.Request) {
	s.serveAuthors(w, r, "crawler", s.crawlerExists, s.Store.TopAuthors)
}

// handleUserAuthors serves GET /v1/users/{id}/authors: the same over every
// crawler of the user.
func (s *Server) handleUserAuthors(w http.ResponseWriter, r *http.Request) {
	s.serveAuthors(w, r, "user", s.userExists, s.Store.UserTopAuthors)
}

func (s *Server) crawlerExists(ctx context.Context, id int64) error {
	_, err := s.Store.GetCrawler(ctx, id)
	return err
}

func (s *Server) userExists(ctx context.Context, id int64) error {
	_, err := s.Store.GetUser(ctx, id)
	return err
}

func (s *Server) serveAuthors(w http.ResponseWriter, r *http.Request, what string, exists func(context.Context, int64) error,
	read func(context.Context, int64, time.Time, int) ([]api.AuthorCount, int64, error)) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	window, d, err := windowParam(r, defaultTermsWindow)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	n, err := nParam(r, defaultAuthorsN, maxAuthorsN)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := exists(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("%s %d", what, id), err)
		return
	}
	authors, folded, err := read(r.Context(), id, time.Now().Add(-d), n)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("authors of %s %d", what, id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, api.Authors{Window: window, Authors: authors, Folded: folded})
}

// handleCrawlerBreakdown serves GET /v1/crawlers/{id}/breakdown: the
// window's comments by source kind and language.
func (s *Server) handleCrawlerBreakdown(w http.ResponseWriter, r *http.Request) {
	s.serveBreakdown(w, r, "crawler", s.crawlerExists, s.Store.Breakdown)
}

// handleUserBreakdown serves GET /v1/users/{id}/breakdown.
func (s *Server) handleUserBreakdown(w http.ResponseWriter, r *http.Request) {
	s.serveBreakdown(w, r, "user", s.userExists, s.Store.UserBreakdown)
}

func (s *Server) serveBreakdown(w http.ResponseWriter, r *http.Request, what string, exists func(context.Context, int64) error,
	read func(context.Context, int64, time.Time) (api.Breakdown, error)) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	window, d, err := windowParam(r, defaultTermsWindow)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := exists(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("%s %d", what, id), err)
		return
	}
	b, err := read(r.Context(), id, time.Now().Add(-d))
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("breakdown of %s %d", what, id), err)
		return
	}
	b.Window = window
	httpx.WriteJSON(w, http.StatusOK, b)
}
