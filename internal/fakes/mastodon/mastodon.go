// Package mastodon is a local Mastodon instance for tests, built from
// Mastodon's own code (streaming/index.js, FanOutOnWriteService,
// FeedManager, RemoveStatusService, the REST controllers) and its
// documentation, quirks included:
//
//   - One multiplexed WebSocket per client (GET /api/v1/streaming) that
//     subscribes and unsubscribes streams with JSON messages (public,
//     public:local, public:remote, hashtag, hashtag:local, user) and
//     receives update, status.update and delete events whose payload is the
//     status JSON-encoded as a string (a delete's, the status id). A stream
//     named in the query string is subscribed at once.
//   - A refused handshake is answered as the streaming server answers it:
//     401 with an empty text/plain body and the reason in X-Error-Message
//     ("Missing access token", "Invalid access token"). A subscription the
//     token's scopes do not cover, an unknown stream or a hashtag without a
//     tag get an error event ({"error":…,"status":…}); unknown message
//     types and invalid JSON are ignored.
//   - Statuses fan out as Mastodon fans them out: only public statuses
//     that are not reblogs reach the public and hashtag streams and the
//     followers of their tags; a reply to another account stays off the
//     public streams (it still reaches the hashtag streams); the home
//     timeline (stream user) carries the token account's own statuses,
//     those of accounts it follows (reblogs included) and, once per followed
//     tag of the status, those of the tags it follows.
//   - configuration.timelines_access in /api/v2/instance (Mastodon 4.5 and
//     later) and the streaming server's filter behind it: a status of a feed
//     whose access is "disabled" is dropped from the public or hashtag
//     streams unless the token's role may view feeds, while delete events
//     pass, so a closed public stream carries only deletes.
//   - REST: the instance documents, verify_credentials (the token's
//     account and role), tags (show, follow, unfollow), followed_tags
//     (paginated with a Link header), a status's context (ancestors and
//     descendants), the timelines. Every call counts against the token's
//     rate limit (300 in 5 minutes unless told otherwise) and its answer
//     says what is left (X-RateLimit-Limit, -Remaining, -Reset); a call
//     past it gets 429 (ratelimit.go).
//
// Tests post statuses with Post (built from a Status) or PostJSON (a
// recorded Status entity, delivered verbatim), edit and delete them, and
// can refuse tokens, cut or stall connections and send raw frames. Two
// servers can carry the same status: give it the same URI on both, each
// assigns its own local id.
//
// Wire format (JSON text messages):
//
//	client → server  {"type":"subscribe","stream":"public"}
//	                 {"type":"subscribe","stream":"hashtag","tag":"golang"}
//	                 {"type":"unsubscribe","stream":"hashtag","tag":"golang"}
//	server → client  {"stream":["hashtag","golang"],"event":"update","payload":"{\"id\":…}"}
//	                 {"stream":["public"],"event":"delete","payload":"1000001"}
//	                 {"error":"Unknown stream type","status":400}
package mastodon

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// Defaults of Options.
const (
	// DefaultPingInterval is how often the server pings each connection
	// (the streaming server's keep-alive interval).
	DefaultPingInterval = 30 * time.Second
	// DefaultConnBuffer is how many frames may wait for a slow reader
	// before the server drops its connection.
	DefaultConnBuffer = 1024
	// DefaultDomain is the instance's domain in the uris and accounts of
	// posted statuses.
	DefaultDomain = "mastodon.example"
	// DefaultVersion is the Mastodon version the instance documents
	// report; from 4.5 on they carry configuration.timelines_access.
	DefaultVersion = "4.5.0"
	// DefaultAccount is the username of the token's account.
	DefaultAccount = "spawn"
	// firstLocalID is the first local id the server assigns.
	firstLocalID = 110000000000000000
	// localIDsPerServer is the log2 of the local ids reserved for each
	// server of a process.
	localIDsPerServer = 24
	// maxClientMessageBytes caps one message from a client.
	maxClientMessageBytes = 64 << 10
	// writeTimeout bounds one write to a client.
	writeTimeout = 10 * time.Second
)

// Feed access values of configuration.timelines_access.
const (
	AccessPublic        = "public"
	AccessAuthenticated = "authenticated"
	AccessDisabled      = "disabled"
)

// servers counts the servers made in this process.
var servers atomic.Int64

// FeedAccess is who may read a feed's local and remote statuses.
type FeedAccess struct {
	Local, Remote string
}

// TimelinesAccess is configuration.timelines_access; empty fields are
// AccessPublic.
type TimelinesAccess struct {
	LiveFeeds, HashtagFeeds, TrendingLinkFeeds FeedAccess
}

// ClosedLiveFeeds is the access of an instance that closed its live and
// hashtag feeds to everyone without the "View live and topic feeds"
// permission, as mastodon.social did in 2026 (local hashtag feeds cannot be
// disabled).
var ClosedLiveFeeds = TimelinesAccess{
	LiveFeeds:         FeedAccess{AccessDisabled, AccessDisabled},
	HashtagFeeds:      FeedAccess{AccessAuthenticated, AccessDisabled},
	TrendingLinkFeeds: FeedAccess{AccessAuthenticated, AccessDisabled},
}

// Options configure a Server.
type Options struct {
	// Token is the access token clients must present; empty accepts any
	// token, but a client must still present one (Mastodon 4.2 and later).
	Token string
	// Scopes are the token's OAuth scopes; nil means "read write".
	Scopes []string
	// Account is the username of the token's account; empty means
	// DefaultAccount.
	Account string
	// ViewFeeds gives the token's role the "View live and topic feeds"
	// permission, which reads disabled feeds all the same.
	ViewFeeds bool
	// Domain is the instance's domain; empty means DefaultDomain.
	Domain string
	// Version is the Mastodon version reported; empty means
	// DefaultVersion. Before 4.5 the instance document has no
	// timelines_access, though the feeds are filtered all the same.
	Version string
	// TimelinesAccess is the instance's feed access settings.
	TimelinesAccess TimelinesAccess
	// StreamingURL, when set, is advertised as the streaming API's base
	// URL in the instance documents; empty advertises the server itself.
	StreamingURL string
	// PingInterval is the interval of pings; 0 means DefaultPingInterval.
	PingInterval time.Duration
	// ConnBuffer bounds the frames queued per connection; 0 means
	// DefaultConnBuffer.
	ConnBuffer int
	// RateLimit and RatePeriod are how many REST calls the token may make
	// in a period; 0 means DefaultRateLimit and DefaultRatePeriod,
	// Mastodon's own.
	RateLimit  int
	RatePeriod time.Duration
	// Logger receives a line per connection at debug level; nil discards.
	Logger *slog.Logger
}

// Subscription is one subscribe or unsubscribe message a client sent.
type Subscription struct {
	At     time.Time
	Conn   int    // the connection's number, from 1
	Type   string // subscribe or unsubscribe
	Stream string // public, user, or hashtag:<tag> with the tag lowercased
	OK     bool
}

// TagEvent is one tag follow or unfollow the server handled.
type TagEvent struct {
	Action string // follow or unfollow
	Tag    string // lowercased
}

// conn is one client connection.
type conn struct {
	n       int
	scopes  []string
	out     chan []byte
	cut     chan struct{}
	cutOnce sync.Once
	subs    map[string][]string // guarded by Server.mu: key → the stream name frames carry
	stalled bool                // guarded by Server.mu
}

func (c *conn) close() { c.cutOnce.Do(func() { close(c.cut) }) }

// Server is the local Mastodon instance. It is safe for concurrent use.
type Server struct {
	opts Options
	url  string

	mu          sync.Mutex
	closed      bool
	token       string
	conns       map[*conn]bool
	accepted    int
	rejected    int
	dropped     int
	nextID      int64
	nextAccount int
	cutUntil    time.Time
	subEvents   []Subscription
	statuses    map[string]*record // by local id
	accounts    map[string]string  // acct (lowercased) → account id
	following   map[string]bool    // accts (lowercased) the token's account follows
	tagFollows  map[string]int64   // followed tag → follow sequence (newest highest)
	followSeq   int64
	tagEvents   []TagEvent
	restCalls   map[string]int        // "METHOD path pattern" → count
	rate        map[string]rateWindow // the REST calls of the current period: of the token, of the address
	throttled   int                   // REST calls refused with 429
}

// New returns a server; serve its Handler, or use Start.
func New(opts Options) *Server {
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.ConnBuffer <= 0 {
		opts.ConnBuffer = DefaultConnBuffer
	}
	if opts.Domain == "" {
		opts.Domain = DefaultDomain
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.Account == "" {
		opts.Account = DefaultAccount
	}
	if opts.RateLimit <= 0 {
		opts.RateLimit = DefaultRateLimit
	}
	if opts.RatePeriod <= 0 {
		opts.RatePeriod = DefaultRatePeriod
	}
	if opts.Scopes == nil {
		opts.Scopes = []string{"read", "write"}
	}
	for _, fa := range []*FeedAccess{&opts.TimelinesAccess.LiveFeeds, &opts.TimelinesAccess.HashtagFeeds, &opts.TimelinesAccess.TrendingLinkFeeds} {
		if fa.Local == "" {
			fa.Local = AccessPublic
		}
		if fa.Remote == "" {
			fa.Remote = AccessPublic
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// Each server numbers its statuses from its own offset, as instances
	// do: the same status gets different local ids on two of them.
	first := firstLocalID + servers.Add(1)<<localIDsPerServer
	s := &Server{opts: opts, token: opts.Token, conns: map[*conn]bool{}, nextID: first,
		statuses: map[string]*record{}, accounts: map[string]string{}, following: map[string]bool{},
		tagFollows: map[string]int64{}, restCalls: map[string]int{}, rate: map[string]rateWindow{}, nextAccount: 100}
	s.accounts[strings.ToLower(opts.Account)] = selfAccountID
	return s
}

// Start runs a new server on a free loopback port until the test ends. At
// the end it closes the server's connections before shutting down.
func Start(tb fakehttp.TB, opts Options) *Server {
	tb.Helper()
	s := New(opts)
	s.url = fakehttp.Serve(tb, s.Handler(), s.Close)
	return s
}

// URL is the base URL of a server made by Start.
func (s *Server) URL() string { return s.url }

// Domain is the instance's domain.
func (s *Server) Domain() string { return s.opts.Domain }

// Handler serves the streaming API and the REST endpoints listed in
// routes (rest.go).
func (s *Server) Handler() http.Handler {
	mux := fakehttp.NewMux()
	mux.HandleFunc("GET /api/v1/streaming", s.handleStreaming)
	mux.HandleFunc("GET /api/v1/streaming/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Cache-Control", "private, no-store")
		_, _ = w.Write([]byte("OK"))
	})
	s.routes(mux)
	return mux
}

// Close drops every connection, so the HTTP server serving the handler
// can shut down: Start calls it at the end of the test, before that
// shutdown.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.close()
	}
}

// SetToken changes the token clients must present (empty accepts any);
// open connections stay.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// SetTimelinesAccess changes the feed access settings; open connections
// are filtered by the new ones from their next event on (the streaming
// server reads them when a stream is subscribed, so a real one keeps the
// old settings on a subscribed stream).
func (s *Server) SetTimelinesAccess(ta TimelinesAccess) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.TimelinesAccess = ta
}

// FollowAccount makes the token's account follow acct ("bob" for a local
// account, "bob@other.example" for a remote one): its statuses reach the
// user stream.
func (s *Server) FollowAccount(acct string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.following[strings.ToLower(acct)] = true
}

// FollowTag makes the token's account follow a tag, as if its owner had
// followed it before any client of the test.
func (s *Server) FollowTag(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.followTagLocked(strings.ToLower(tag))
}

// UnfollowTag makes the token's account unfollow a tag, as if another
// client had.
func (s *Server) UnfollowTag(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tagFollows, strings.ToLower(tag))
}

// FollowedTags lists the tags the token's account follows, sorted.
func (s *Server) FollowedTags() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.tagFollows))
}

// TagEvents lists the follows and unfollows clients asked for, oldest
// first.
func (s *Server) TagEvents() []TagEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tagEvents)
}

// RESTCalls is how many requests the server answered on a route, named
// as routes names it ("GET /api/v1/followed_tags").
func (s *Server) RESTCalls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restCalls[route]
}

func (s *Server) followTagLocked(tag string) {
	if _, ok := s.tagFollows[tag]; ok {
		return
	}
	s.followSeq++
	s.tagFollows[tag] = s.followSeq
}

// SendRaw sends data as one complete text message to every connection: a
// test's way to deliver malformed, truncated or oversized frames and error
// events.
func (s *Server) SendRaw(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.sendLocked(c, slices.Clone(data))
	}
}

// Cut drops every connection abruptly and answers 503 to handshakes for
// d; it returns how many connections there were.
func (s *Server) Cut(d time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.conns)
	for c := range s.conns {
		c.close()
	}
	s.cutUntil = time.Now().Add(d)
	return n
}

// Stall makes every open connection silent for good, as a half-open TCP
// connection is: no events, no pings, no answer to the client's pings.
// New connections are served normally.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.stalled = true
	}
}

// Connections is how many WebSocket connections were accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Open is how many connections are open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Rejected counts handshakes refused for a wrong or missing token.
func (s *Server) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// Subscriptions returns, per open connection in the order they were
// accepted, its subscribed streams sorted: "public", "hashtag:golang",
// "user".
func (s *Server) Subscriptions() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := slices.SortedFunc(maps.Keys(s.conns), func(a, b *conn) int { return a.n - b.n })
	out := make([][]string, len(conns))
	for i, c := range conns {
		out[i] = slices.Sorted(maps.Keys(c.subs))
	}
	return out
}

// SubscriptionEvents lists the subscribe and unsubscribe messages
// received, oldest first.
func (s *Server) SubscriptionEvents() []Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.subEvents)
}

// sendLocked queues a frame; a connection whose queue is full is dropped,
// as a server drops clients that fall behind.
func (s *Server) sendLocked(c *conn, b []byte) {
	select {
	case c.out <- b:
	default:
		s.dropped++
		delete(s.conns, c)
		c.close()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// hasScope reports whether scopes grant one of want.
func hasScope(scopes []string, want ...string) bool {
	return slices.ContainsFunc(scopes, func(s string) bool { return slices.Contains(want, s) })
}
