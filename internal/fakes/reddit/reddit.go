// Package reddit is a local Reddit for tests: the OAuth Data API's
// client-credentials token endpoint (POST /api/v1/access_token) and the
// parts of oauth.reddit.com a listener reads (GET /r/{sub}/comments,
// GET /r/{sub}/new, GET /api/info), on one loopback server, built from
// Reddit's API documentation and the requests and answers praw's and
// prawcore's test suites recorded (tests/integration/cassettes), quirks
// included:
//
//   - The token endpoint takes HTTP Basic client credentials and
//     grant_type=client_credentials; a wrong id or secret is answered 401
//     {"message": "Unauthorized", "error": 401}, another grant type 200
//     {"error": "unsupported_grant_type"}. A token is
//     {"access_token", "token_type": "bearer", "expires_in": 86400,
//     "scope": "*"}.
//   - The API refuses a missing, unknown or expired token with 401
//     {"message": "Unauthorized", "error": 401} and
//     www-authenticate: Bearer realm="reddit", error="invalid_token".
//   - Every API answer carries x-ratelimit-used, x-ratelimit-remaining (a
//     float, "988.0") and x-ratelimit-reset (seconds to the end of the
//     window), counted per client id over a window (Reddit's: 1000
//     requests in 600 s, 100 a minute on average); past the allowance the
//     API answers 429 with Reddit's "whoa there, pardner!" HTML page and
//     retry-after, as recorded. Token requests are counted too.
//   - Listings are {"kind": "Listing", "data": {"after", "dist",
//     "modhash", "geo_filter", "children", "before"}}, newest first,
//     limit 1 to 100 (default 25), paged by fullname with after (older)
//     and before (newer); only the newest ListingCap things of a listing
//     are reachable (Reddit's listings stop near 1000). A before or after
//     naming a thing that is not in the listing (deleted, removed, or
//     past the cap) gives an empty listing, as Reddit does.
//   - Without raw_json=1, Reddit's legacy escaping: &, < and > in body,
//     selftext and title are sent as &amp;, &lt; and &gt;.
//   - /api/info?id=t1_…,t3_… answers a Listing of the things it knows (up
//     to 100 ids), deleted ones with author and body "[deleted]", removed
//     ones with body "[removed]"; unknown ids are left out.
//   - Deleted and removed things leave the subreddit listings.
//
// Tests add things with Comment and Post (new base36 ids, as Reddit
// assigns them, built on a recorded thing) or AddThing (a recorded thing,
// served as recorded), then delete, remove and edit them. The server
// remembers every request (path, time, User-Agent), so a test can check
// the rate the whole fleet kept and the User-Agent it sent.
package reddit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// Defaults of Options.
const (
	// DefaultAllowance and DefaultWindow are Reddit's free tier: 100
	// queries a minute per client id, averaged over ten minutes (the
	// recorded headers count 1000 down over a 600 s window).
	DefaultAllowance = 1000
	DefaultWindow    = 600 * time.Second
	// DefaultListingCap is how many things of a listing can be paged to.
	DefaultListingCap = 1000
	// DefaultRetryAfter is the retry-after of a 429.
	DefaultRetryAfter = 4 * time.Second
	// tokenLifetime is expires_in of a token, in seconds (recorded).
	tokenLifetime = 86400
	// maxInfoIDs is how many ids /api/info takes at once.
	maxInfoIDs = 100
)

// Bodies Reddit answers with, as recorded.
const (
	unauthorizedBody = `{"message": "Unauthorized", "error": 401}`
	// tooManyBody is the 429 page of prawcore's
	// TestSession.test_request__too__many_requests__with_retry_headers.
	tooManyBody = "\n<!doctype html>\n<html>\n  <head>\n    <title>Too Many Requests</title>\n    <style>\n      body {\n          font: small verdana, arial, helvetica, sans-serif;\n          width: 600px;\n          margin: 0 auto;\n      }\n\n      h1 {\n          height: 40px;\n          background: transparent url(//www.redditstatic.com/reddit.com.header.png) no-repeat scroll top right;\n      }\n    </style>\n  </head>\n  <body>\n    <h1>whoa there, pardner!</h1>\n    \n\n\n<p>we're sorry, but you appear to be a bot and we've seen too many requests\nfrom you lately. we enforce a hard speed limit on requests that appear to come\nfrom bots to prevent abuse.</p>\n\n<p>if you are not a bot but are spoofing one via your browser's user agent\nstring: please change your user agent string to avoid seeing this message\nagain.</p>\n\n<p>please wait 4 second(s) and try again.</p>\n\n    <p>as a reminder to developers, we recommend that clients make no\n    more than <a href=\"http://github.com/reddit/reddit/wiki/API\">one\n    request every two seconds</a> to avoid seeing this message.</p>\n  </body>\n</html>\n"
)

// Options configure a Server; zero fields take the defaults.
type Options struct {
	// ClientID and ClientSecret are the app's credentials; the token
	// endpoint refuses any other.
	ClientID, ClientSecret string
	// Allowance requests per Window for the client id.
	Allowance int
	Window    time.Duration
	// ListingCap is how many things of a listing can be paged to.
	ListingCap int
	// RetryAfter is the retry-after of a 429.
	RetryAfter time.Duration
	// Now is the server's clock; nil is time.Now.
	Now func() time.Time
}

// Request is one request the server answered.
type Request struct {
	At        time.Time
	Method    string
	Path      string
	Query     string
	UserAgent string
	Status    int
}

// Server is a running local Reddit.
type Server struct {
	opts Options
	url  string

	mu       sync.Mutex
	things   map[string]*thing   // fullname → thing
	order    map[string][]string // listing ("sub/comments", "sub/new") → fullnames, oldest first
	next     map[string]int64    // kind → next id
	tokens   map[string]time.Time
	window   time.Time // start of the current rate-limit window
	used     int
	requests []Request
	refuse   bool // refuse every token request with 401 (a revoked app)
}

// thing is a comment (t1) or post (t3) the server holds.
type thing struct {
	kind string
	data map[string]any
	gone string // "", "deleted", "removed"
}

// Start serves a local Reddit until the test ends.
func Start(tb fakehttp.TB, opts Options) *Server {
	tb.Helper()
	if opts.Allowance <= 0 {
		opts.Allowance = DefaultAllowance
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.ListingCap <= 0 {
		opts.ListingCap = DefaultListingCap
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, things: map[string]*thing{}, order: map[string][]string{},
		next: map[string]int64{"t1": parse36("k3z0000"), "t3": parse36("1a00000")}, tokens: map[string]time.Time{}}
	mux := fakehttp.NewMux()
	mux.HandleFunc("POST /api/v1/access_token", s.handleToken)
	mux.HandleFunc("GET /r/{sub}/{listing}", s.handleListing)
	mux.HandleFunc("GET /r/{sub}/{listing}/", s.handleListing)
	mux.HandleFunc("GET /api/info", s.handleInfo)
	mux.HandleFunc("GET /api/info/", s.handleInfo)
	s.url = fakehttp.Serve(tb, mux, nil)
	return s
}

// URL is the server's base URL: both the auth URL and the API URL.
func (s *Server) URL() string { return s.url }

// RefuseCredentials makes the token endpoint refuse every request, as it
// does for a deleted app or a changed secret.
func (s *Server) RefuseCredentials(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = refuse
}

// ExpireTokens forgets every token handed out: the API refuses them.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// Requests returns every request answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// MaxInWindow is the most requests answered within any span of d.
func (s *Server) MaxInWindow(d time.Duration) int {
	reqs := s.Requests()
	best, lo := 0, 0
	for hi := range reqs {
		for reqs[hi].At.Sub(reqs[lo].At) >= d {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// record notes a request and counts it against the client's allowance; it
// reports false when the allowance is spent (the request gets 429).
func (s *Server) record(r *http.Request, w http.ResponseWriter) bool {
	now := s.opts.Now()
	if s.window.IsZero() || now.Sub(s.window) >= s.opts.Window {
		s.window, s.used = now, 0
	}
	s.used++
	ok := s.used <= s.opts.Allowance
	reset := int((s.opts.Window - now.Sub(s.window) + time.Second - 1) / time.Second)
	h := w.Header()
	h.Set("x-ratelimit-used", strconv.Itoa(min(s.used, s.opts.Allowance)))
	h.Set("x-ratelimit-remaining", strconv.FormatFloat(float64(max(s.opts.Allowance-s.used, 0)), 'f', 1, 64))
	h.Set("x-ratelimit-reset", strconv.Itoa(reset))
	status := http.StatusOK
	if !ok {
		status = http.StatusTooManyRequests
	}
	s.requests = append(s.requests, Request{At: now, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		UserAgent: r.UserAgent(), Status: status})
	return ok
}

func tooMany(w http.ResponseWriter, after time.Duration) {
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	w.Header().Set("retry-after", strconv.Itoa(int(after/time.Second)))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(tooManyBody))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.record(r, w) {
		// The token endpoint's own 429 is JSON (prawcore's recording).
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": "Too Many Requests", "error": 429})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok || s.refuse || id != s.opts.ClientID || secret != s.opts.ClientSecret {
		s.requests[len(s.requests)-1].Status = http.StatusUnauthorized
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(unauthorizedBody))
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusOK, map[string]any{"error": "unsupported_grant_type"})
		return
	}
	token := "-" + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s:%d", id, len(s.requests))))
	s.tokens[token] = s.opts.Now().Add(tokenLifetime * time.Second)
	writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "token_type": "bearer", "expires_in": tokenLifetime, "scope": "*"})
}

// authorizedLocked checks the bearer token; it answers 401 itself.
func (s *Server) authorizedLocked(w http.ResponseWriter, r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
	if !ok {
		token, ok = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if exp, known := s.tokens[token]; ok && known && s.opts.Now().Before(exp) {
		return true
	}
	s.requests[len(s.requests)-1].Status = http.StatusUnauthorized
	w.Header().Set("www-authenticate", `Bearer realm="reddit", error="invalid_token"`)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(unauthorizedBody))
	return false
}

// view is a thing as the API shows it now: deleted and removed ones as
// Reddit shows them, and with Reddit's escaping unless raw.
func (t *thing) view(raw bool) map[string]any {
	d := maps.Clone(t.data)
	switch t.gone {
	case "deleted":
		d["author"] = "[deleted]"
		delete(d, "author_fullname")
		if t.kind == "t1" {
			d["body"], d["body_html"] = "[deleted]", "<div class=\"md\"><p>[deleted]</p>\n</div>"
		} else {
			d["selftext"], d["selftext_html"] = "[deleted]", nil
			d["removed_by_category"] = "deleted"
		}
	case "removed":
		if t.kind == "t1" {
			d["body"], d["body_html"] = "[removed]", "<div class=\"md\"><p>[removed]</p>\n</div>"
		} else {
			d["selftext"], d["selftext_html"] = "[removed]", nil
			d["removed_by_category"] = "moderator"
		}
	}
	if !raw {
		for _, k := range []string{"body", "selftext", "title"} {
			if v, ok := d[k].(string); ok {
				d[k] = legacyEscape(v)
			}
		}
	}
	return map[string]any{"kind": t.kind, "data": d}
}

// legacyEscape is what Reddit does to text without raw_json=1.
func legacyEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func listingDoc(children []map[string]any, after, before any) map[string]any {
	if children == nil {
		children = []map[string]any{}
	}
	return map[string]any{"kind": "Listing", "data": map[string]any{
		"after": after, "dist": len(children), "modhash": "", "geo_filter": "", "children": children, "before": before}}
}

func (s *Server) handleListing(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.record(r, w) {
		tooMany(w, s.opts.RetryAfter)
		return
	}
	if !s.authorizedLocked(w, r) {
		return
	}
	name := r.PathValue("listing")
	if name != "comments" && name != "new" {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "error": 404})
		return
	}
	q := r.URL.Query()
	limit := 25
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil {
			limit = min(max(n, 1), 100)
		}
	}
	raw := q.Get("raw_json") == "1"
	all := s.visibleLocked(strings.ToLower(r.PathValue("sub")) + "/" + name) // newest first
	lo, hi := 0, min(limit, len(all))
	switch {
	case q.Get("after") != "":
		i := slices.Index(all, q.Get("after"))
		if i < 0 {
			writeJSON(w, http.StatusOK, listingDoc(nil, nil, nil))
			return
		}
		lo, hi = i+1, min(i+1+limit, len(all))
	case q.Get("before") != "":
		i := slices.Index(all, q.Get("before"))
		if i < 0 {
			writeJSON(w, http.StatusOK, listingDoc(nil, nil, nil))
			return
		}
		lo, hi = max(i-limit, 0), i
	}
	var children []map[string]any
	for _, fn := range all[lo:hi] {
		children = append(children, s.things[fn].view(raw))
	}
	var after, before any
	if hi < len(all) && hi > lo {
		after = all[hi-1]
	}
	if lo > 0 && hi > lo {
		before = all[lo]
	}
	writeJSON(w, http.StatusOK, listingDoc(children, after, before))
}

// visibleLocked is a listing's reachable things, newest first: not gone,
// at most ListingCap.
func (s *Server) visibleLocked(key string) []string {
	ids := s.order[key]
	var out []string
	for i := len(ids) - 1; i >= 0 && len(out) < s.opts.ListingCap; i-- {
		if s.things[ids[i]].gone == "" {
			out = append(out, ids[i])
		}
	}
	return out
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.record(r, w) {
		tooMany(w, s.opts.RetryAfter)
		return
	}
	if !s.authorizedLocked(w, r) {
		return
	}
	raw := r.URL.Query().Get("raw_json") == "1"
	ids := strings.Split(r.URL.Query().Get("id"), ",")
	if len(ids) > maxInfoIDs {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Bad Request", "error": 400})
		return
	}
	var children []map[string]any
	for _, id := range ids {
		if t, ok := s.things[strings.TrimSpace(id)]; ok {
			children = append(children, t.view(raw))
		}
	}
	writeJSON(w, http.StatusOK, listingDoc(children, nil, nil))
}
