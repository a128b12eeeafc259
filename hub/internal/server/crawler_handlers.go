package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// maxRecentComments caps GET /v1/crawlers/{id}/comments.
const maxRecentComments = 1000

// canonical validates a crawler's source, query and keywords and fills the
// row's canonical fields, as the source's declaration says: a kind whose
// query is a list of URLs (feeds) keeps them canonical and takes its keywords
// as a filter in the query language; every other kind's query is in the
// language (a list is the OR of its terms) and has no keywords.
func (s *Server) canonical(c *sqlstore.Crawler, source string, q, keywords []string) error {
	for _, t := range q {
		if err := httpx.CheckText("query", t); err != nil {
			return err
		}
	}
	for _, k := range keywords {
		if err := httpx.CheckText("keywords", k); err != nil {
			return err
		}
	}
	sources := s.Hub.Sources()
	info, ok := sources.Lookup(source)
	if !ok {
		return fmt.Errorf("%w: %w", query.ErrInvalid, sources.Unknown(source))
	}
	if info.Query != api.QueryURLs {
		if len(nonEmpty(keywords)) > 0 {
			return fmt.Errorf("%w: keywords filter only crawlers that read URLs (feeds); put the terms in the %s query", query.ErrInvalid, source)
		}
		parsed, err := query.ParseFields(q, info.QueryFields)
		if err != nil {
			return err
		}
		if f := info.RequiredField; f != "" && !parsed.RequiresField(f) {
			return fmt.Errorf("%w: a %s query must name its %s in every branch (%s:NAME), as in %s", query.ErrInvalid, source, f, f, info.QueryHint)
		}
		c.Source, c.Query, c.Keywords = source, []string{parsed.String()}, nil
		c.QueryUUID = parsed.UUID(source).String()
		return nil
	}
	urls, err := query.URLs(q)
	if err != nil {
		return err
	}
	c.Source = source
	c.Query = urls
	c.Keywords = nil
	if kw := nonEmpty(keywords); len(kw) > 0 {
		filter, err := query.ParseList(kw)
		if err != nil {
			return fmt.Errorf("keywords: %w", err)
		}
		c.Keywords = []string{filter.String()}
	}
	c.QueryUUID = query.UUID(source, urls).String()
	return nil
}

// readsURLs says whether a kind's query is a list of URLs (its crawlers
// then have keywords); an unknown kind reads as one in the language.
func (s *Server) readsURLs(source string) bool {
	info, ok := s.Hub.Sources().Lookup(source)
	return ok && info.Query == api.QueryURLs
}

// nonEmpty drops blank entries of a list.
func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func validLimit(n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: comment_limit must be 0 (no limit) or more, got %d", httpx.ErrBadRequest, n)
	}
	return nil
}

func (s *Server) handleCreateCrawler(w http.ResponseWriter, r *http.Request) {
	var in api.CrawlerCreate
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	row := sqlstore.Crawler{UserID: in.UserID, Name: in.Name, CommentLimit: in.CommentLimit, Enabled: in.Enabled == nil || *in.Enabled}
	if in.UserID <= 0 {
		httpx.WriteError(w, http.StatusBadRequest, "user_id must be a positive integer")
		return
	}
	if err := validLimit(in.CommentLimit); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	retention, err := api.ParseRetention(in.Retention)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	row.RetentionSeconds = int64(retention.Seconds())
	if err := s.canonical(&row, in.Source, in.Query, in.Keywords); err != nil {
		s.writeStoreError(w, "crawler", err)
		return
	}
	c, err := s.Store.CreateCrawler(r.Context(), row)
	if err != nil {
		s.writeStoreError(w, "crawler", err)
		return
	}
	s.Hub.RequestReload(false)
	httpx.WriteJSON(w, http.StatusCreated, s.Hub.CrawlerView(c))
}

// maxCrawlersPage caps a page of GET /v1/crawlers?limit=N.
const maxCrawlersPage = 10000

// maxCrawlerMatch caps GET /v1/crawlers?match=, a text a crawler's name or
// query holds.
const maxCrawlerMatch = 200

func (s *Server) handleListCrawlers(w http.ResponseWriter, r *http.Request) {
	var (
		rows []sqlstore.Crawler
		err  error
	)
	q := r.URL.Query()
	if q.Has("limit") || q.Has("after") {
		// One page: up to limit crawlers with an id above after.
		after, aerr := strconv.ParseInt(cmp.Or(q.Get("after"), "0"), 10, 64)
		limit, lerr := strconv.Atoi(cmp.Or(q.Get("limit"), strconv.Itoa(maxCrawlersPage)))
		if aerr != nil || after < 0 || lerr != nil || limit < 1 || limit > maxCrawlersPage {
			httpx.WriteError(w, http.StatusBadRequest, "after must be a crawler id (0 or more) and limit 1 to %d", maxCrawlersPage)
			return
		}
		if match := strings.TrimSpace(q.Get("match")); match != "" {
			if len(match) > maxCrawlerMatch {
				httpx.WriteError(w, http.StatusBadRequest, "match must be at most %d bytes", maxCrawlerMatch)
				return
			}
			rows, err = s.Store.ListCrawlersMatching(r.Context(), after, limit, match)
		} else {
			rows, err = s.Store.ListCrawlersAfter(r.Context(), after, limit)
		}
	} else {
		rows, err = s.Store.ListCrawlers(r.Context())
	}
	if err != nil {
		s.writeStoreError(w, "crawlers", err)
		return
	}
	out := make([]api.Crawler, 0, len(rows))
	for _, c := range rows {
		out = append(out, s.Hub.CrawlerView(c))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetCrawler(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	c, err := s.Store.GetCrawler(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s.Hub.CrawlerView(c))
}

func (s *Server) handleUpdateCrawler(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var in api.CrawlerUpdate
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if in.Name == nil && in.Query == nil && in.Keywords == nil && in.CommentLimit == nil && in.Enabled == nil && in.Retention == nil {
		httpx.WriteError(w, http.StatusBadRequest, "nothing to update: give name, query, keywords, comment_limit, enabled or retention")
		return
	}
	var retention int64
	if in.Retention != nil {
		d, err := api.ParseRetention(*in.Retention)
		if err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
		retention = int64(d.Seconds())
	}
	if in.CommentLimit != nil {
		if err := validLimit(*in.CommentLimit); err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	c, err := s.Store.UpdateCrawler(r.Context(), id, func(c *sqlstore.Crawler) error {
		q, kw := []string(c.Query), []string(c.Keywords)
		if !s.readsURLs(c.Source) {
			kw = nil // a search crawler's filter is its query
		}
		if in.Query != nil {
			q = in.Query
		}
		if in.Keywords != nil {
			kw = in.Keywords
		}
		if err := s.canonical(c, c.Source, q, kw); err != nil {
			return err
		}
		if in.CommentLimit != nil {
			c.CommentLimit = *in.CommentLimit
			// A raised (or removed) limit resumes a crawler stopped at it.
			c.LimitReached = c.CommentLimit > 0 && c.Usage >= c.CommentLimit
		}
		if in.Enabled != nil {
			c.Enabled = *in.Enabled
		}
		if in.Name != nil {
			c.Name = *in.Name
		}
		if in.Retention != nil {
			// Applies to the comments stored from now on.
			c.RetentionSeconds = retention
		}
		return nil
	})
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	s.Hub.RequestReload(false)
	httpx.WriteJSON(w, http.StatusOK, s.Hub.CrawlerView(c))
}

func (s *Server) handleDeleteCrawler(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := s.Store.DeleteCrawler(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	s.Hub.RequestReload(false)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleRecentComments(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	n := 20
	if v := r.URL.Query().Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 || n > maxRecentComments {
			httpx.WriteError(w, http.StatusBadRequest, "n must be between 1 and %d", maxRecentComments)
			return
		}
	}
	if _, err := s.Store.GetCrawler(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	comments, err := s.Hub.RecentComments(r.Context(), id, n)
	if err != nil {
		if errors.Is(err, cluster.ErrNoNode) {
			httpx.WriteError(w, http.StatusServiceUnavailable, "no spawn node is live to read the store")
			return
		}
		httpx.WriteError(w, http.StatusBadGateway, "%v", err)
		return
	}
	if comments == nil {
		comments = []api.Comment{}
	}
	httpx.WriteJSON(w, http.StatusOK, comments)
}
