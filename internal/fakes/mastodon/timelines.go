package mastodon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The REST timelines, as Mastodon's Api::V1::Timelines controllers serve
// them (PublicController, TagController, HomeController, with PublicFeed,
// TagFeed and Paginable's to_a_paginated_by_id):
//
//	GET /api/v1/timelines/public        public statuses, no reblogs, no replies to others
//	GET /api/v1/timelines/tag/{hashtag} public statuses with the tag, no reblogs
//	GET /api/v1/timelines/home          the token account's home timeline (read:statuses)
//
// A page holds limit statuses (default 20, at most 40), newest first.
// max_id and since_id bound it from above and below, newest first; min_id
// gives the statuses immediately after it instead (ascending, then
// reversed: still newest first within the page). Unless the page is empty,
// the Link header names the next page (rel="next", max_id of its last
// status) and the previous one (rel="prev", min_id of its first), with
// the limit and local flags of the request. Statuses of a feed the
// instance's timelines_access disables are left out, as the streaming
// server leaves them out.

// Page sizes of the timelines (Api::BaseController::DEFAULT_STATUSES_LIMIT
// and limit_param's cap, twice the default).
const (
	timelineDefaultLimit = 20
	timelineMaxLimit     = 2 * timelineDefaultLimit
)

// timelineRoutes adds the timelines to the REST routes.
func (s *Server) timelineRoutes(handle func(pattern string, h http.HandlerFunc)) {
	handle("GET /api/v1/timelines/public", s.handlePublicTimeline)
	handle("GET /api/v1/timelines/tag/{hashtag}", s.handleTagTimeline)
	handle("GET /api/v1/timelines/home", s.user(s.handleHomeTimeline, "read", "read:statuses"))
}

func (s *Server) handlePublicTimeline(w http.ResponseWriter, r *http.Request) {
	local, remote := truthy(r, "local"), truthy(r, "remote")
	s.serveTimeline(w, r, "/api/v1/timelines/public", func(rec *record) bool {
		return rec.visibility == VisibilityPublic && !rec.reblog && !rec.replyToOther &&
			(!local || rec.local) && (!remote || !rec.local) &&
			(s.opts.ViewFeeds || s.feedOpenLocked(s.opts.TimelinesAccess.LiveFeeds, rec.local))
	})
}

func (s *Server) handleTagTimeline(w http.ResponseWriter, r *http.Request) {
	tag := strings.ToLower(r.PathValue("hashtag"))
	local := truthy(r, "local")
	s.serveTimeline(w, r, "/api/v1/timelines/tag/"+url.PathEscape(r.PathValue("hashtag")), func(rec *record) bool {
		return rec.visibility == VisibilityPublic && !rec.reblog && slices.Contains(rec.tags, tag) && (!local || rec.local) &&
			(s.opts.ViewFeeds || s.feedOpenLocked(s.opts.TimelinesAccess.HashtagFeeds, rec.local))
	})
}

func (s *Server) handleHomeTimeline(w http.ResponseWriter, r *http.Request) {
	s.serveTimeline(w, r, "/api/v1/timelines/home", func(rec *record) bool { return rec.home })
}

// truthy reads a boolean parameter as Rails does: "true", "1", "on".
func truthy(r *http.Request, name string) bool {
	switch strings.ToLower(r.URL.Query().Get(name)) {
	case "true", "1", "on", "t":
		return true
	}
	return false
}

// serveTimeline answers one page of the statuses in, paginated by id.
func (s *Server) serveTimeline(w http.ResponseWriter, r *http.Request, path string, in func(*record) bool) {
	q := r.URL.Query()
	limit := timelineDefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			n = 0
		}
		limit = min(max(n, -n), timelineMaxLimit) // limit_param: the absolute value, capped
	}
	maxID, sinceID, minID := q.Get("max_id"), q.Get("since_id"), q.Get("min_id")
	s.mu.Lock()
	var page []*record
	for _, rec := range s.statuses {
		if in(rec) && (maxID == "" || idBefore(rec.id, maxID)) {
			page = append(page, rec)
		}
	}
	if minID != "" {
		// paginate_by_min_id: the statuses right after min_id, then
		// reversed.
		page = slices.DeleteFunc(page, func(rec *record) bool { return !idBefore(minID, rec.id) })
		slices.SortFunc(page, func(a, b *record) int { return cmpID(a.id, b.id) })
		page = page[:min(limit, len(page))]
		slices.Reverse(page)
	} else {
		page = slices.DeleteFunc(page, func(rec *record) bool { return sinceID != "" && !idBefore(sinceID, rec.id) })
		slices.SortFunc(page, func(a, b *record) int { return cmpID(b.id, a.id) })
		page = page[:min(limit, len(page))]
	}
	out := make([]json.RawMessage, len(page))
	for i, rec := range page {
		out[i] = rec.entity
	}
	s.mu.Unlock()
	if len(page) > 0 {
		keep := url.Values{}
		for _, k := range []string{"local", "remote", "limit", "only_media"} {
			if v := q.Get(k); v != "" {
				keep.Set(k, v)
			}
		}
		link := func(k, v string) string {
			p := url.Values{}
			for key, vs := range keep {
				p[key] = vs
			}
			p.Set(k, v)
			return s.baseURL(r) + path + "?" + p.Encode()
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next", <%s>; rel="prev"`, link("max_id", page[len(page)-1].id), link("min_id", page[0].id)))
	}
	writeJSON(w, http.StatusOK, out)
}

// idBefore orders local status ids as numbers.
func idBefore(a, b string) bool { return cmpID(a, b) < 0 }

func cmpID(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}
