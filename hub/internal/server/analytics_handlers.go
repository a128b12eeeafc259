package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Analytics reads: defaults and bounds.
const (
	defaultTermsWindow = api.Window24h
	defaultTermsN      = 20
	maxTermsN          = 200
	// suggestionsShown is how many suggestions GET …/suggestions lists at
	// most; the store keeps more, so a term can rise into view.
	suggestionsShown = 30
	// threadTimeout bounds reading a conversation through a spawn.
	threadTimeout = 30 * time.Second
)

// defaultSteps is the activity step of each window when none is asked.
var defaultSteps = map[string]time.Duration{api.Window1h: time.Minute, api.Window24h: time.Hour, api.Window7d: time.Hour}

// windowParam reads ?window=, one of api.Windows.
func windowParam(r *http.Request, def string) (string, time.Duration, error) {
	name := r.URL.Query().Get("window")
	if name == "" {
		name = def
	}
	d, ok := api.Windows[name]
	if !ok {
		return "", 0, fmt.Errorf("window must be 1h, 24h or 7d, got %q", name)
	}
	return name, d, nil
}

// nParam reads ?n= between 1 and max.
func nParam(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("n")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("n must be between 1 and %d, got %q", max, v)
	}
	return n, nil
}

// handleCrawlerTerms serves GET /v1/crawlers/{id}/terms: the crawler's most
// frequent terms over the window's hour buckets.
func (s *Server) handleCrawlerTerms(w http.ResponseWriter, r *http.Request) {
	read := s.Store.TermsSince
	if merged(r) {
		read = s.Store.MergedTermsSince
	}
	s.serveTerms(w, r, "crawler", func(ctx context.Context, id int64) error {
		_, err := s.Store.GetCrawler(ctx, id)
		return err
	}, read)
}

// handleUserTerms serves GET /v1/users/{id}/terms: the sum over the
// user's crawlers.
func (s *Server) handleUserTerms(w http.ResponseWriter, r *http.Request) {
	read := s.Store.UserTermsSince
	if merged(r) {
		read = s.Store.MergedUserTermsSince
	}
	s.serveTerms(w, r, "user", func(ctx context.Context, id int64) error {
		_, err := s.Store.GetUser(ctx, id)
		return err
	}, read)
}

// merged reports whether ?merge=true asks a hashtag to count with the word
// it spells; any other value of merge is refused by serveTerms.
func merged(r *http.Request) bool {
	b, err := mergeParam(r)
	return err == nil && b
}

func (s *Server) serveTerms(w http.ResponseWriter, r *http.Request, what string, exists func(context.Context, int64) error,
	read func(context.Context, int64, time.Time, int) ([]api.TermCount, error)) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	window, d, err := windowParam(r, defaultTermsWindow)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	n, err := nParam(r, defaultTermsN, maxTermsN)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if _, err := mergeParam(r); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := exists(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("%s %d", what, id), err)
		return
	}
	terms, err := read(r.Context(), id, time.Now().Add(-d), n)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("terms of %s %d", what, id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, api.Terms{Window: window, Terms: terms})
}

// handleCrawlerActivity serves GET /v1/crawlers/{id}/activity: comments and
// distinct authors per step over the window.
func (s *Server) handleCrawlerActivity(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	window, d, err := windowParam(r, api.Window1h)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	step := defaultSteps[window]
	if v := r.URL.Query().Get("step"); v != "" {
		if step, err = time.ParseDuration(v); err != nil || step <= 0 {
			httpx.WriteError(w, http.StatusBadRequest, "step must be a duration like 1m, 15m or 1h, got %q", v)
			return
		}
	}
	if _, err := s.Store.GetCrawler(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	now := time.Now()
	steps, err := s.Store.Activity(r.Context(), id, now.Add(-d), now, step)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("activity of crawler %d", id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, api.Activity{Window: window, Step: step.String(), Steps: steps})
}

// handleSuggestions serves GET /v1/crawlers/{id}/suggestions: candidate
// terms co-occurring with the crawler's matches, best first, without the
// ones its query has meanwhile taken in.
func (s *Server) handleSuggestions(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	c, err := s.Store.GetCrawler(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	all, err := s.Store.Suggestions(r.Context(), id, suggestionsShown*2)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("suggestions of crawler %d", id), err)
		return
	}
	text := strings.ToLower(c.CanonicalQuery() + " " + c.CanonicalKeywords())
	out := make([]api.Suggestion, 0, suggestionsShown)
	for _, sg := range all {
		if len(out) == suggestionsShown {
			break
		}
		if query.ContainsWord(text, sg.Term) || query.ContainsWord(text, strings.TrimPrefix(sg.Term, "#")) {
			continue
		}
		out = append(out, sg)
	}
	httpx.WriteJSON(w, http.StatusOK, api.Suggestions{CrawlerID: id, Terms: out})
}

// handleThread serves GET /v1/crawlers/{id}/threads/{comment_id}: the
// conversation of a comment, read from the store through a live spawn (the
// crawler's own first).
func (s *Server) handleThread(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	commentID := r.PathValue("comment_id")
	if commentID == "" || len(commentID) > 1024 {
		httpx.WriteError(w, http.StatusBadRequest, "comment_id must be 1 to 1024 bytes")
		return
	}
	c, err := s.Store.GetCrawler(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	preferred := s.Hub.CrawlerView(c).Node
	var urls []string
	for _, n := range s.Hub.Nodes() {
		if n.ID == preferred {
			urls = append([]string{n.URL}, urls...)
		} else {
			urls = append(urls, n.URL)
		}
	}
	if len(urls) == 0 {
		httpx.WriteError(w, http.StatusServiceUnavailable, "no spawn node is live to read the store")
		return
	}
	var errs []error
	for _, u := range urls[:min(len(urls), exportNodeAttempts)] {
		client := api.NewNodeClient(u, api.NodeOptions{Token: s.NodeToken, HTTPClient: s.nodeHTTP(),
			Timeouts: api.NodeTimeouts{Comments: threadTimeout}})
		th, err := client.Thread(r.Context(), id, commentID)
		var se *api.StatusError
		switch {
		case err == nil:
			httpx.WriteJSON(w, http.StatusOK, th)
			return
		case errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusBadRequest):
			httpx.WriteError(w, se.Code, "%s", se.Message)
			return
		}
		errs = append(errs, err)
	}
	s.Logger.Warn("thread read failed", "crawler_id", id, "err", errors.Join(errs...))
	httpx.WriteError(w, http.StatusBadGateway, "%v", errors.Join(errs...))
}
