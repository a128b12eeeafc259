package xv2

import (
	"encoding/base32"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file serves recent search, GET /2/tweets/search/recent, over the
// posts published to the server, as X's API reference and its "Search
// Posts: pagination" guide describe it and as the answers recorded by
// tweepy's test cassettes show it:
//
//   - query is the rule syntax the stream's rules use (ruleeval.go), at
//     most MaxQueryLength characters (512 for self-serve access); a quote
//     post matches on its own text only, not on the post it quotes (the
//     guide's "matching differences" with the stream);
//   - since_id and start_time (at most one), until_id and end_time (at
//     most one) bound the posts; start_time, and the post since_id names,
//     must lie within the last seven days, end_time at least ten seconds before the request; without any
//     of start_time, end_time and since_id, end_time is 30 seconds before
//     the request;
//   - posts come newest first, max_results a page (10 to 100, default 10),
//     with meta.newest_id, oldest_id, result_count and, while more remain,
//     next_token, an opaque token that never expires and always names the
//     same next page; a search that finds nothing answers
//     {"meta":{"result_count":0}};
//   - every answer carries x-rate-limit-limit, -remaining and -reset; past
//     SearchLimit requests in RateWindow the answer is 429.
//
// Posts are rendered as the stream renders them (render.go), with the
// fields and expansions the request asked for, their includes merged.

// SearchPath is recent search.
const SearchPath = "/2/tweets/search/recent"

// Limits of recent search.
const (
	// DefaultMaxQueryLength is the longest query self-serve access may
	// send to recent search.
	DefaultMaxQueryLength = 512
	// DefaultSearchLimit is how many recent search requests an app may
	// make in RateWindow.
	DefaultSearchLimit = 450
	// searchWindow is how far back recent search reaches.
	searchWindow = 7 * 24 * time.Hour
	// minEndTimeAge is how long before the request an end_time must be.
	minEndTimeAge = 10 * time.Second
	// defaultEndTimeAge is how long before the request the default
	// end_time is.
	defaultEndTimeAge = 30 * time.Second
	// minSearchResults, maxSearchResults and defaultSearchResults bound
	// max_results.
	minSearchResults     = 10
	maxSearchResults     = 100
	defaultSearchResults = 10
)

// SearchRequest is one request to recent search, as the server read it.
type SearchRequest struct {
	At         time.Time
	Query      string
	SinceID    string
	UntilID    string
	StartTime  string
	EndTime    string
	MaxResults string
	NextToken  string
	Status     int
	// Results is how many posts the answer carried.
	Results int
}

// Searches lists every request to recent search.
func (s *Server) Searches() []SearchRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.searchLog)
}

// FailSearches makes the next recent search requests answer with these
// statuses, one each (429, 503, …).
func (s *Server) FailSearches(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searchFail = append(s.searchFail, statuses...)
}

// Wire shapes of a search answer.
type (
	searchMeta struct {
		NewestID    string `json:"newest_id,omitempty"`
		OldestID    string `json:"oldest_id,omitempty"`
		ResultCount int    `json:"result_count"`
		NextToken   string `json:"next_token,omitempty"`
	}
	searchResponse struct {
		Data     []tweetJSON   `json:"data,omitempty"`
		Includes *includesJSON `json:"includes,omitempty"`
		Meta     searchMeta    `json:"meta"`
	}
	// paramError is one entry of an invalid request's errors.
	paramError struct {
		Parameters map[string][]string `json:"parameters"`
		Message    string              `json:"message"`
	}
	invalidRequest struct {
		Errors []paramError `json:"errors"`
		Title  string       `json:"title"`
		Detail string       `json:"detail"`
		Type   string       `json:"type"`
	}
)

// writeInvalid answers 400 as X does for a bad request parameter.
func writeInvalid(w http.ResponseWriter, param, value, msg string) {
	writeJSON(w, http.StatusBadRequest, invalidRequest{
		Errors: []paramError{{Parameters: map[string][]string{param: {value}}, Message: msg}},
		Title:  "Invalid Request", Detail: "One or more parameters to your request was invalid.", Type: typeInvalidRequest,
	})
}

// tokenEncoding spells next tokens: base32hex, lowercased, unpadded, as
// X's look.
var tokenEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

func nextToken(afterID string) string {
	return strings.ToLower(tokenEncoding.EncodeToString([]byte("b:" + afterID)))
}

func readToken(tok string) (string, bool) {
	b, err := tokenEncoding.DecodeString(strings.ToUpper(tok))
	if err != nil {
		return "", false
	}
	id, ok := strings.CutPrefix(string(b), "b:")
	return id, ok && postID(id)
}

// postID reports whether s is a post id: 1 to 19 digits.
func postID(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 63)
	return err == nil
}

// idTime is the creation time a snowflake post id carries.
func idTime(id string) time.Time {
	n, _ := strconv.ParseInt(id, 10, 64)
	return time.UnixMilli(n>>snowflakeTimeShift + snowflakeEpochMillis)
}

// idLess orders post ids numerically.
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// searchBounds are the bounds a search request puts on the posts.
type searchBounds struct {
	since, until string // post ids, exclusive; "" for none
	start, end   time.Time
	after        string // the page starts below this id (next_token)
}

func (b searchBounds) admits(st *stored) bool {
	id := st.ID
	switch {
	case b.since != "" && !idLess(b.since, id):
		return false
	case b.until != "" && !idLess(id, b.until):
		return false
	case b.after != "" && !idLess(id, b.after):
		return false
	case !b.start.IsZero() && st.CreatedAt.Before(b.start):
		return false
	case !b.end.IsZero() && !st.CreatedAt.Before(b.end):
		return false
	}
	return true
}

// readSearch checks a request's parameters as X does; on a bad one it has
// answered 400 and returns false.
func (s *Server) readSearch(w http.ResponseWriter, r *http.Request, now time.Time) (*node, searchBounds, int, fields, bool) {
	q := r.URL.Query()
	var b searchBounds
	query := q.Get("query")
	if query == "" {
		writeInvalid(w, "query", "", "The `query` query parameter can not be empty")
		return nil, b, 0, fields{}, false
	}
	if n := utf8.RuneCountInString(query); n > s.opts.MaxQueryLength {
		writeInvalid(w, "query", query, fmt.Sprintf("The `query` query parameter value [%s] is not between 1 and %d characters", query, s.opts.MaxQueryLength))
		return nil, b, 0, fields{}, false
	}
	rule, err := parseRule(query)
	if err != nil {
		writeInvalid(w, "query", query, fmt.Sprintf("There were errors processing your request: %v", err))
		return nil, b, 0, fields{}, false
	}
	size := defaultSearchResults
	if v := q.Get("max_results"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < minSearchResults || n > maxSearchResults {
			writeInvalid(w, "max_results", v, fmt.Sprintf("The `max_results` query parameter value [%s] is not between %d and %d", v, minSearchResults, maxSearchResults))
			return nil, b, 0, fields{}, false
		}
		size = n
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"since_id", &b.since}, {"until_id", &b.until}} {
		if v := q.Get(p.name); v != "" {
			if !postID(v) {
				writeInvalid(w, p.name, v, fmt.Sprintf("The `%s` query parameter value [%s] does not match ^[0-9]{1,19}$", p.name, v))
				return nil, b, 0, fields{}, false
			}
			*p.dst = v
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"start_time", &b.start}, {"end_time", &b.end}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeInvalid(w, p.name, v, fmt.Sprintf("Invalid date [%s] for the `%s` query parameter", v, p.name))
				return nil, b, 0, fields{}, false
			}
			*p.dst = t
		}
	}
	switch {
	case b.since != "" && !b.start.IsZero():
		writeInvalid(w, "since_id", b.since, "At most one of `start_time`, `since_id` may be provided")
		return nil, b, 0, fields{}, false
	case b.until != "" && !b.end.IsZero():
		writeInvalid(w, "until_id", b.until, "At most one of `end_time`, `until_id` may be provided")
		return nil, b, 0, fields{}, false
	case !b.start.IsZero() && b.start.Before(now.Add(-searchWindow)):
		writeInvalid(w, "start_time", q.Get("start_time"), "Invalid 'start_time':'"+q.Get("start_time")+"'. 'start_time' must be on or after "+now.Add(-searchWindow).UTC().Format(time.RFC3339))
		return nil, b, 0, fields{}, false
	case b.since != "" && idTime(b.since).Before(now.Add(-searchWindow)):
		writeInvalid(w, "since_id", b.since, "Invalid 'since_id':'"+b.since+"'. 'since_id' must be a Post created on or after "+now.Add(-searchWindow).UTC().Format(time.RFC3339))
		return nil, b, 0, fields{}, false
	case !b.end.IsZero() && b.end.After(now.Add(-minEndTimeAge)):
		writeInvalid(w, "end_time", q.Get("end_time"), "Invalid 'end_time':'"+q.Get("end_time")+"'. 'end_time' must be a minimum of 10 seconds prior to the request time.")
		return nil, b, 0, fields{}, false
	}
	if b.start.IsZero() && b.end.IsZero() && b.since == "" {
		b.end = now.Add(-defaultEndTimeAge)
	}
	if b.start.IsZero() {
		b.start = now.Add(-searchWindow)
	}
	tok := q.Get("next_token")
	if tok == "" {
		tok = q.Get("pagination_token")
	}
	if tok != "" {
		after, ok := readToken(tok)
		if !ok {
			writeInvalid(w, "next_token", tok, "The `next_token` query parameter value ["+tok+"] is not valid")
			return nil, b, 0, fields{}, false
		}
		b.after = after
	}
	return rule, b, size, parseFields(q), true
}

// handleSearch serves GET /2/tweets/search/recent.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	q := r.URL.Query()
	req := SearchRequest{At: now, Query: q.Get("query"), SinceID: q.Get("since_id"), UntilID: q.Get("until_id"),
		StartTime: q.Get("start_time"), EndTime: q.Get("end_time"), MaxResults: q.Get("max_results"),
		NextToken: firstNonEmpty(q.Get("next_token"), q.Get("pagination_token"))}
	s.mu.Lock()
	limit, remaining, reset, ok := s.searchRate.take(now)
	injected := 0
	if len(s.searchFail) > 0 {
		injected, s.searchFail = s.searchFail[0], s.searchFail[1:]
	}
	s.mu.Unlock()
	setRateHeaders(w, limit, remaining, reset)
	status := injected
	if status == 0 && !ok {
		status = http.StatusTooManyRequests
	}
	if status != 0 {
		if status == http.StatusTooManyRequests {
			setRateHeaders(w, limit, 0, reset)
		}
		req.Status = status
		s.logSearch(req)
		writeProblem(w, status, statusProblem(status))
		return
	}
	rule, b, size, f, ok := s.readSearch(w, r, now)
	if !ok {
		req.Status = http.StatusBadRequest
		s.logSearch(req)
		return
	}
	s.mu.Lock()
	var found []*stored
	for _, st := range s.posts {
		if b.admits(st) && rule.matches(s.searchInputLocked(st)) {
			found = append(found, st)
		}
	}
	slices.SortFunc(found, func(a, b *stored) int {
		switch {
		case idLess(b.ID, a.ID):
			return -1
		case idLess(a.ID, b.ID):
			return 1
		}
		return 0
	})
	resp := searchResponse{}
	more := len(found) > size
	if more {
		found = found[:size]
	}
	var inc includesJSON
	for _, st := range found {
		t, pi := s.renderLocked(st, f)
		resp.Data = append(resp.Data, t)
		if pi != nil {
			mergeIncludes(&inc, pi)
		}
	}
	s.mu.Unlock()
	if len(inc.Users) > 0 || len(inc.Tweets) > 0 {
		resp.Includes = &inc
	}
	resp.Meta.ResultCount = len(found)
	if len(found) > 0 {
		resp.Meta.NewestID, resp.Meta.OldestID = found[0].ID, found[len(found)-1].ID
		if more {
			resp.Meta.NextToken = nextToken(resp.Meta.OldestID)
		}
	}
	req.Status, req.Results = http.StatusOK, len(found)
	s.logSearch(req)
	writeJSON(w, http.StatusOK, resp)
}

// searchInputLocked is what a search query is evaluated on: as for the
// stream's rules, except that a quote post is matched on its own text
// alone.
func (s *Server) searchInputLocked(st *stored) post {
	text := expand(st.short, st.urls)
	if orig := s.posts[st.RepostOf]; orig != nil {
		text = "RT @" + orig.Username + ": " + expand(orig.short, orig.urls)
	}
	return post{text: strings.ToLower(text), username: strings.ToLower(st.Username), lang: strings.ToLower(st.Lang)}
}

// mergeIncludes adds a post's includes to a page's, each user and post
// once.
func mergeIncludes(dst, src *includesJSON) {
	for _, u := range src.Users {
		if !slices.ContainsFunc(dst.Users, func(x userJSON) bool { return x.ID == u.ID }) {
			dst.Users = append(dst.Users, u)
		}
	}
	for _, t := range src.Tweets {
		if !slices.ContainsFunc(dst.Tweets, func(x tweetJSON) bool { return x.ID == t.ID }) {
			dst.Tweets = append(dst.Tweets, t)
		}
	}
}

func (s *Server) logSearch(req SearchRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searchLog = append(s.searchLog, req)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// rateWindow counts an endpoint's requests in fixed windows, as X's
// x-rate-limit headers describe them: limit requests per window, the
// count starting again at reset.
type rateWindow struct {
	limit  int
	window time.Duration
	reset  time.Time
	used   int
}

// take counts one request at now and reports the limit, what remains
// after it, when the window resets and whether the request is allowed.
func (r *rateWindow) take(now time.Time) (limit, remaining int, reset time.Time, ok bool) {
	if !now.Before(r.reset) {
		r.reset, r.used = now.Add(r.window), 0
	}
	if r.used >= r.limit {
		return r.limit, 0, r.reset, false
	}
	r.used++
	return r.limit, r.limit - r.used, r.reset, true
}

func setRateHeaders(w http.ResponseWriter, limit, remaining int, reset time.Time) {
	w.Header().Set("x-rate-limit-limit", strconv.Itoa(limit))
	w.Header().Set("x-rate-limit-remaining", strconv.Itoa(remaining))
	// X's reset is a Unix time in seconds; rounding up keeps a client that
	// waits until then from arriving before the window turned.
	w.Header().Set("x-rate-limit-reset", strconv.FormatInt(reset.Add(time.Second-1).Unix(), 10))
}
