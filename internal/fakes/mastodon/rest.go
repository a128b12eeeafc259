package mastodon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Page sizes of GET /api/v1/followed_tags (Api::V1::FollowedTagsController).
const (
	followedTagsDefaultLimit = 100
	followedTagsMaxLimit     = 200
	// contextLimit bounds the ancestors and descendants of a context
	// (Api::V1::StatusesController::CONTEXT_LIMIT).
	contextLimit = 4096
)

// hashtagName is what Mastodon accepts as a tag name in a path
// (Tag::HASHTAG_NAME_RE, simplified: letters, digits, marks, '_', '·' and
// ZWNJ, not only digits).
var hashtagName = regexp.MustCompile(`^[\p{L}\p{M}\p{N}_\x{00b7}\x{200c}]*[\p{L}\p{M}_\x{00b7}\x{200c}][\p{L}\p{M}\p{N}_\x{00b7}\x{200c}]*$`)

// Errors of the REST API, as Api::BaseController renders them.
const (
	errTokenInvalid = "The access token is invalid"
	errScopes       = "This action is outside the authorized scopes"
	errNotFound     = "Record not found"
)

// routes adds the REST endpoints:
//
//	GET  /api/v1/instance                    {"uri", "version", "urls": {"streaming_api"}}
//	GET  /api/v2/instance                    {"domain", "version", "configuration": {"urls", "timelines_access"}}
//	GET  /api/v1/accounts/verify_credentials the token's account, with its role
//	GET  /api/v1/tags/{name}                 a Tag, with "following"
//	POST /api/v1/tags/{name}/follow          idempotent (Mastodon 4.1 and later)
//	POST /api/v1/tags/{name}/unfollow        idempotent
//	GET  /api/v1/followed_tags               newest follow first, Link header to the next page
//	GET  /api/v1/statuses/{id}/context       {"ancestors", "descendants"}
//	GET  /api/v1/timelines/…                 public, tag/{hashtag}, home (timelines.go)
func (s *Server) routes(mux *http.ServeMux) {
	handle := func(pattern string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.restCalls[pattern]++
			s.mu.Unlock()
			if s.throttle(w, r) {
				h(w, r)
			}
		})
	}
	handle("GET /api/v1/instance", s.handleInstanceV1)
	handle("GET /api/v2/instance", s.handleInstanceV2)
	handle("GET /api/v1/accounts/verify_credentials", s.user(s.handleVerifyCredentials, "read", "read:accounts", "profile"))
	handle("GET /api/v1/tags/{name}", s.handleTag)
	handle("POST /api/v1/tags/{name}/follow", s.user(s.handleFollowTag, "follow", "write", "write:follows"))
	handle("POST /api/v1/tags/{name}/unfollow", s.user(s.handleFollowTag, "follow", "write", "write:follows"))
	handle("GET /api/v1/followed_tags", s.user(s.handleFollowedTags, "follow", "read", "read:follows"))
	handle("GET /api/v1/statuses/{id}/context", s.handleContext)
	s.timelineRoutes(handle)
}

// user wraps a handler that needs a user token with one of scopes:
// without a valid token 401, without the scope 403.
func (s *Server) user(h http.HandlerFunc, scopes ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case !ok || token == "" || !s.tokenOK(token):
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": errTokenInvalid})
		case !hasScope(s.opts.Scopes, scopes...):
			writeJSON(w, http.StatusForbidden, map[string]string{"error": errScopes})
		default:
			h(w, r)
		}
	}
}

// authenticated reports whether a request carries the server's token.
func (s *Server) authenticated(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && s.tokenOK(token)
}

func (s *Server) handleInstanceV1(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"uri": s.opts.Domain, "title": "Local test instance", "version": s.opts.Version,
		"urls": map[string]string{"streaming_api": s.streamingURL(r)},
	})
}

func (s *Server) handleInstanceV2(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ta := s.opts.TimelinesAccess
	s.mu.Unlock()
	conf := map[string]any{
		"urls":     map[string]any{"streaming": s.streamingURL(r), "status": nil},
		"accounts": map[string]any{"max_featured_tags": 10, "max_pinned_statuses": 5},
		"statuses": map[string]any{"max_characters": 500, "max_media_attachments": 4, "characters_reserved_per_url": 23},
	}
	if versionAtLeast(s.opts.Version, 4, 5) {
		feed := func(fa FeedAccess) map[string]string {
			return map[string]string{"local": fa.Local, "remote": fa.Remote}
		}
		conf["timelines_access"] = map[string]any{
			"live_feeds": feed(ta.LiveFeeds), "hashtag_feeds": feed(ta.HashtagFeeds), "trending_link_feeds": feed(ta.TrendingLinkFeeds),
		}
		conf["limited_federation"] = false
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"domain": s.opts.Domain, "title": "Local test instance", "version": s.opts.Version,
		"source_url": "https://github.com/mastodon/mastodon", "configuration": conf,
	})
}

// versionAtLeast reports whether a Mastodon version string is at least
// major.minor.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// streamingURL is the advertised streaming base: the option, else the
// server itself as the client reached it.
func (s *Server) streamingURL(r *http.Request) string {
	if s.opts.StreamingURL != "" {
		return s.opts.StreamingURL
	}
	scheme := "ws"
	if r.TLS != nil {
		scheme = "wss"
	}
	return scheme + "://" + r.Host
}

func (s *Server) handleVerifyCredentials(w http.ResponseWriter, _ *http.Request) {
	perms := 0x10000 // the default role: Invite Users
	if s.opts.ViewFeeds {
		perms |= permissionViewFeeds
	}
	s.mu.Lock()
	a := s.accountLocked(s.opts.Account, selfAccountID)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"id": a.ID, "username": a.Username, "acct": a.Acct, "display_name": a.DisplayName, "url": a.URL, "uri": a.URI,
		"role": map[string]any{"id": "-99", "name": "", "permissions": strconv.Itoa(perms), "color": "", "highlighted": false},
	})
}

// tagEntity renders a Tag; following is there only for a user token.
func (s *Server) tagEntityLocked(name string, user bool) map[string]any {
	t := map[string]any{"name": name, "url": "https://" + s.opts.Domain + "/tags/" + strings.ToLower(name), "history": []any{}}
	if user {
		_, following := s.tagFollows[strings.ToLower(name)]
		t["following"] = following
		t["featured"] = false
	}
	return t
}

func (s *Server) handleTag(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !hashtagName.MatchString(name) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": errNotFound})
		return
	}
	user := s.authenticated(r)
	s.mu.Lock()
	t := s.tagEntityLocked(name, user)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) handleFollowTag(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !hashtagName.MatchString(name) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": errNotFound})
		return
	}
	tag := strings.ToLower(name)
	s.mu.Lock()
	if strings.HasSuffix(r.URL.Path, "/follow") {
		s.followTagLocked(tag)
		s.tagEvents = append(s.tagEvents, TagEvent{Action: "follow", Tag: tag})
	} else {
		delete(s.tagFollows, tag)
		s.tagEvents = append(s.tagEvents, TagEvent{Action: "unfollow", Tag: tag})
	}
	t := s.tagEntityLocked(name, true)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, t)
}

// handleFollowedTags lists the followed tags, newest follow first, a page
// of limit at a time; max_id pages on, and the Link header names the next
// page while there is one.
func (s *Server) handleFollowedTags(w http.ResponseWriter, r *http.Request) {
	limit := followedTagsDefaultLimit
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		limit = min(n, followedTagsMaxLimit)
	}
	maxID, _ := strconv.ParseInt(r.URL.Query().Get("max_id"), 10, 64)
	s.mu.Lock()
	type follow struct {
		tag string
		seq int64
	}
	var all []follow
	for t, seq := range s.tagFollows {
		if maxID == 0 || seq < maxID {
			all = append(all, follow{t, seq})
		}
	}
	slices.SortFunc(all, func(a, b follow) int { return int(b.seq - a.seq) })
	more := len(all) > limit
	if more {
		all = all[:limit]
	}
	page := make([]map[string]any, len(all))
	for i, f := range all {
		page[i] = s.tagEntityLocked(f.tag, true)
	}
	s.mu.Unlock()
	if more {
		next := fmt.Sprintf("%s/api/v1/followed_tags?limit=%d&max_id=%d", s.baseURL(r), limit, all[len(all)-1].seq)
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next))
	}
	writeJSON(w, http.StatusOK, page)
}

// baseURL is the server as the client reached it.
func (s *Server) baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// handleContext answers a status's ancestors (the chain of statuses it
// replies to, as far as the server knows it, the thread's first one
// first) and descendants (the replies to it and to them), leaving out
// statuses a token's owner may not see.
func (s *Server) handleContext(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.statuses[r.PathValue("id")]
	if !ok || !s.visibleLocked(rec) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": errNotFound})
		return
	}
	ancestors := []json.RawMessage{}
	p := s.statuses[rec.inReplyToID]
	for range contextLimit {
		if p == nil || p == rec || !s.visibleLocked(p) {
			break
		}
		ancestors = append([]json.RawMessage{p.entity}, ancestors...)
		p = s.statuses[p.inReplyToID]
	}
	descendants := []json.RawMessage{}
	for _, d := range s.statuses {
		p := s.statuses[d.inReplyToID]
		for range contextLimit {
			if p == nil || p == d {
				break
			}
			if p == rec {
				if s.visibleLocked(d) {
					descendants = append(descendants, d.entity)
				}
				break
			}
			p = s.statuses[p.inReplyToID]
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ancestors": ancestors, "descendants": descendants})
}

// visibleLocked reports whether the token's owner may see a status.
func (s *Server) visibleLocked(rec *record) bool {
	switch rec.visibility {
	case VisibilityPublic, VisibilityUnlisted, "":
		return true
	case VisibilityPrivate:
		return rec.accountID == selfAccountID || s.following[rec.acct]
	}
	return rec.accountID == selfAccountID
}
