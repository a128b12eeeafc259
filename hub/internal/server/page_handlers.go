package server

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/commentexport"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

const (
	// maxTermBytes caps the term of a term's activity (the store keeps
	// terms of at most 130 bytes).
	maxTermBytes = 130
	// exportWriteGrace is how long the hub gives the browser or bwctl to
	// take each page of a streamed export before it gives up on it.
	exportWriteGrace = 60 * time.Second
	// maxComparedUserCrawlers bounds the crawlers of one compared user.
	maxComparedUserCrawlers = 500
)

// mergeParam reads ?merge= (true: a hashtag counts with the word it
// spells).
func mergeParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("merge")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("merge must be true or false, got %q", v)
	}
	return b, nil
}

// handleTermActivity serves GET /v1/crawlers/{id}/terms/{term}/activity:
// how many comments carried the term in each hour of the window, from the
// per-hour term counts.
func (s *Server) handleTermActivity(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	term := strings.ToLower(strings.TrimSpace(r.PathValue("term")))
	if term == "" || len(term) > maxTermBytes {
		httpx.WriteError(w, http.StatusBadRequest, "term must be 1 to %d bytes", maxTermBytes)
		return
	}
	window, d, err := windowParam(r, defaultTermsWindow)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	merge, err := mergeParam(r)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if _, err := s.Store.GetCrawler(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
		return
	}
	terms := []string{term}
	if merge {
		word := strings.TrimPrefix(term, "#")
		term, terms = word, []string{word, "#" + word}
	}
	now := time.Now()
	steps, err := s.Store.TermActivity(r.Context(), id, terms, now.Add(-d), now)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("activity of %q in crawler %d", term, id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, api.TermActivity{Term: term, Terms: terms, Merged: merge, Window: window, Step: time.Hour.String(), Steps: steps})
}

// idsParam reads a comma-separated list of positive ids.
func idsParam(name, v string) ([]int64, error) {
	var ids []int64
	for _, p := range strings.Split(v, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%s must be ids separated by commas, got %q", name, v)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) > api.MaxCompared {
		return nil, fmt.Errorf("%s: %d ids, at most %d can be compared", name, len(ids), api.MaxCompared)
	}
	return ids, nil
}

// handleCompare serves GET /v1/compare: the comments per step of several
// crawlers or users side by side, with each one's share of them all.
func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	crawlers, users := q.Get("crawlers"), q.Get("users")
	if (crawlers == "") == (users == "") {
		httpx.WriteError(w, http.StatusBadRequest, "give either crawlers=ID,ID… or users=ID,ID…")
		return
	}
	window, d, err := windowParam(r, api.Window24h)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	step := defaultSteps[window]
	if v := q.Get("step"); v != "" {
		if step, err = time.ParseDuration(v); err != nil || step <= 0 {
			httpx.WriteError(w, http.StatusBadRequest, "step must be a duration like 1m, 15m or 1h, got %q", v)
			return
		}
	}
	ctx := r.Context()
	now := time.Now()
	var series []api.CompareSeries
	var steps [][]api.ActivityStep
	if crawlers != "" {
		ids, err := idsParam("crawlers", crawlers)
		if err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
		for _, id := range ids {
			c, err := s.Store.GetCrawler(ctx, id)
			if err != nil {
				s.writeStoreError(w, fmt.Sprintf("crawler %d", id), err)
				return
			}
			a, err := s.Store.Activity(ctx, id, now.Add(-d), now, step)
			if err != nil {
				s.writeStoreError(w, fmt.Sprintf("activity of crawler %d", id), err)
				return
			}
			series = append(series, api.CompareSeries{CrawlerID: id, Label: cmp.Or(c.Name, fmt.Sprintf("crawler %d", id))})
			steps = append(steps, a)
		}
	} else {
		ids, err := idsParam("users", users)
		if err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
		for _, id := range ids {
			a, label, err := s.userActivity(ctx, id, now.Add(-d), now, step)
			if err != nil {
				s.writeStoreError(w, fmt.Sprintf("user %d", id), err)
				return
			}
			series = append(series, api.CompareSeries{UserID: id, Label: label})
			steps = append(steps, a)
		}
	}
	httpx.WriteJSON(w, http.StatusOK, api.Comparison{Window: window, Step: step.String(), Series: shares(series, steps)})
}

// userActivity sums the activity of every crawler of a user.
func (s *Server) userActivity(ctx context.Context, userID int64, since, until time.Time, step time.Duration) ([]api.ActivityStep, string, error) {
	u, err := s.Store.GetUser(ctx, userID)
	if err != nil {
		return nil, "", err
	}
	ids, err := s.Store.UserCrawlerIDs(ctx, userID)
	if err != nil {
		return nil, "", err
	}
	if len(ids) > maxComparedUserCrawlers {
		return nil, "", fmt.Errorf("%w: user %d has %d crawlers, at most %d can be summed", httpx.ErrBadRequest, userID, len(ids), maxComparedUserCrawlers)
	}
	var sum []api.ActivityStep
	for _, id := range ids {
		a, err := s.Store.Activity(ctx, id, since, until, step)
		if err != nil {
			return nil, "", err
		}
		if sum == nil {
			sum = a
			continue
		}
		for i := range min(len(sum), len(a)) {
			sum[i].Comments += a[i].Comments
			sum[i].Positive += a[i].Positive
			sum[i].Neutral += a[i].Neutral
			sum[i].Negative += a[i].Negative
		}
	}
	if sum == nil {
		// No crawler: the steps, all empty.
		if sum, err = s.Store.Activity(ctx, 0, since, until, step); err != nil {
			return nil, "", err
		}
	}
	for i := range sum {
		sum[i].Authors = 0 // distinct authors do not add up across crawlers
	}
	return sum, u.Name, nil
}

// shares fills each series' steps with its comments and its share of all
// the series' comments in that step, and its total and overall share.
func shares(series []api.CompareSeries, steps [][]api.ActivityStep) []api.CompareSeries {
	var all int64
	n := 0
	for _, a := range steps {
		n = max(n, len(a))
	}
	perStep := make([]int64, n)
	for _, a := range steps {
		for i, st := range a {
			perStep[i] += st.Comments
			all += st.Comments
		}
	}
	for k := range series {
		out := make([]api.CompareStep, len(steps[k]))
		for i, st := range steps[k] {
			out[i] = api.CompareStep{At: st.At, Comments: st.Comments, Positive: st.Positive, Neutral: st.Neutral, Negative: st.Negative}
			if perStep[i] > 0 {
				out[i].Share = float64(st.Comments) / float64(perStep[i])
			}
			series[k].Total += st.Comments
		}
		series[k].Steps = out
		if all > 0 {
			series[k].Share = float64(series[k].Total) / float64(all)
		}
	}
	return series
}

// handleExportCrawlerSearch serves GET /v1/crawlers/{id}/comments/export:
// every comment of a crawler a search matches, streamed page by page as
// JSON Lines or CSV (the columns of bwctl comments export).
func (s *Server) handleExportCrawlerSearch(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	s.streamExport(w, r, fmt.Sprintf("crawler-%d", id), func(ctx context.Context, q api.SearchQuery) (api.SearchPage, error) {
		c, err := s.Store.GetCrawler(ctx, id)
		if err != nil {
			return api.SearchPage{}, err
		}
		return s.searchPage(ctx, s.Hub.CrawlerView(c).Node, id, q)
	}, func(ctx context.Context) error {
		_, err := s.Store.GetCrawler(ctx, id)
		return err
	}, fmt.Sprintf("crawler %d", id))
}

// handleExportUserSearch serves GET /v1/users/{id}/comments/export: the
// same over every crawler of a user.
func (s *Server) handleExportUserSearch(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	s.streamExport(w, r, fmt.Sprintf("user-%d", id), func(ctx context.Context, q api.SearchQuery) (api.SearchPage, error) {
		return s.userSearchPage(ctx, id, q)
	}, func(ctx context.Context) error {
		_, err := s.Store.GetUser(ctx, id)
		return err
	}, fmt.Sprintf("user %d", id))
}

// streamExport checks an export's parameters and what it reads, then
// streams every page of the search. An error after the first byte can only
// end the stream: the file then ends early, and the hub logs why.
func (s *Server) streamExport(w http.ResponseWriter, r *http.Request, name string,
	page func(context.Context, api.SearchQuery) (api.SearchPage, error), exists func(context.Context) error, what string) {
	format := r.URL.Query().Get("format")
	if format == "" {
		format = commentexport.JSONL
	}
	if !slices.Contains(commentexport.Formats, format) {
		httpx.WriteError(w, http.StatusBadRequest, "format must be one of %s, got %q", strings.Join(commentexport.Formats, ", "), format)
		return
	}
	sq, ok := parseSearch(w, r)
	if !ok {
		return
	}
	if err := exists(r.Context()); err != nil {
		s.writeStoreError(w, what, err)
		return
	}
	sq.Limit = api.MaxExportLimit
	// The first page before the headers, so a refusal is still an answer.
	first, err := page(r.Context(), sq)
	if err != nil {
		s.writePageError(w, what, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", commentexport.ContentTypes[format])
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-comments.%s"`, name, format))
	h.Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	buf := bufio.NewWriterSize(w, 64<<10)
	out, _ := commentexport.New(format, buf)
	total := 0
	for p := first; ; {
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteGrace))
		if err := out.Write(p.Comments); err != nil {
			s.Logger.Info("comment export ended by the client", "what", what, "comments", total, "err", err)
			return
		}
		if err := buf.Flush(); err != nil {
			s.Logger.Info("comment export ended by the client", "what", what, "comments", total, "err", err)
			return
		}
		_ = rc.Flush()
		total += len(p.Comments)
		if p.NextCursor == "" {
			return
		}
		sq.Cursor = p.NextCursor
		if p, err = page(r.Context(), sq); err != nil {
			s.Logger.Warn("comment export cut short", "what", what, "comments", total, "err", err)
			return
		}
	}
}

// handleCrawlerHistories serves GET /v1/crawlers/history?ids=…: the rate
// histories of the crawlers a dashboard page shows, in one request, and the
// rate of all crawlers together. Unknown ids get all zeros, as a crawler
// without usage does: the hub reads no SQL for it.
func (s *Server) handleCrawlerHistories(w http.ResponseWriter, r *http.Request) {
	var ids []int64
	if v := r.URL.Query().Get("ids"); v != "" {
		for _, p := range strings.Split(v, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil || id <= 0 {
				httpx.WriteError(w, http.StatusBadRequest, "ids must be crawler ids separated by commas, got %q", v)
				return
			}
			ids = append(ids, id)
		}
	}
	if len(ids) > api.MaxHistoryIDs {
		httpx.WriteError(w, http.StatusBadRequest, "ids: %d crawlers, at most %d at once", len(ids), api.MaxHistoryIDs)
		return
	}
	out := api.CrawlerHistories{Histories: make([]api.CrawlerHistory, 0, len(ids)), Total: s.Hub.TotalHistory()}
	for _, id := range ids {
		out.Histories = append(out.Histories, s.Hub.History(id))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}
