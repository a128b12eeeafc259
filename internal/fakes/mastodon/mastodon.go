// Package mastodon is a local Mastodon instance for tests, speaking the
// real streaming protocol: one multiplexed WebSocket per client
// (GET /api/v1/streaming) that subscribes and unsubscribes the public and
// hashtag streams with JSON messages, and receives update, status.update
// and delete events whose payload is the status encoded as a JSON string.
// The instance documents (/api/v1/instance, /api/v2/instance) advertise the
// streaming URL. Tests post statuses with Post, which fans them out to the
// streams they belong to; they can refuse tokens, cut or stall connections
// and send raw frames. Two servers can carry the same status: give it the
// same URI on both, each assigns its own local id.
//
// Wire format (JSON text messages):
//
//	client → server  {"type":"subscribe","stream":"public"}
//	                 {"type":"subscribe","stream":"hashtag","tag":"golang"}
//	                 {"type":"unsubscribe","stream":"hashtag","tag":"golang"}
//	server → client  {"stream":["hashtag","golang"],"event":"update","payload":"{\"id\":…}"}
//	                 {"stream":["public"],"event":"delete","payload":"1000001"}
//	                 {"error":"Unknown stream type","status":400}
//
// The token is accepted in the Authorization header (Bearer), the
// Sec-WebSocket-Protocol header or the access_token query parameter, as
// Mastodon accepts it; a wrong or missing one gets 401 at the handshake.
package mastodon

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// Defaults of Options.
const (
	// DefaultPingInterval is how often the server pings each connection.
	DefaultPingInterval = 30 * time.Second
	// DefaultConnBuffer is how many frames may wait for a slow reader
	// before the server drops its connection.
	DefaultConnBuffer = 1024
	// DefaultDomain is the instance's domain in the uris and accounts of
	// posted statuses.
	DefaultDomain = "mastodon.example"
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

// servers counts the servers made in this process.
var servers atomic.Int64

// Options configure a Server.
type Options struct {
	// Token is the access token clients must present; empty accepts any
	// client, with or without one.
	Token string
	// Domain is the instance's domain; empty means DefaultDomain.
	Domain string
	// StreamingURL, when set, is advertised as the streaming API's base
	// URL in the instance documents; empty advertises the server itself.
	StreamingURL string
	// PingInterval is the interval of pings; 0 means DefaultPingInterval.
	PingInterval time.Duration
	// ConnBuffer bounds the frames queued per connection; 0 means
	// DefaultConnBuffer.
	ConnBuffer int
	// Logger receives a line per connection at debug level; nil discards.
	Logger *slog.Logger
}

// Status is what a test posts. Zero fields are filled in by Post: ID with
// the next local id, Acct with "alice", URI and URL from the domain, the
// account and the id, CreatedAt with the current time.
type Status struct {
	ID          string
	URI         string
	URL         string
	Acct        string // "alice" for a local account, "bob@other.example" for a remote one
	Content     string // HTML
	SpoilerText string
	Language    string
	CreatedAt   time.Time
	EditedAt    time.Time
	InReplyToID string
	Tags        []string
	// Reblog, when set, makes the status a reblog of it; the reblog is
	// delivered to the streams of the reblogged status's tags.
	Reblog *Status
	// Reblogs and Favourites are the status's reblogs_count and
	// favourites_count (a status streamed as it is written has none; a
	// reblog carries them in the reblogged status).
	Reblogs, Favourites int
}

// Subscription is one subscribe or unsubscribe message a client sent.
type Subscription struct {
	At     time.Time
	Conn   int    // the connection's number, from 1
	Type   string // subscribe or unsubscribe
	Stream string // public, or hashtag:<tag> with the tag lowercased
	OK     bool
}

// conn is one client connection.
type conn struct {
	n       int
	out     chan []byte
	cut     chan struct{}
	cutOnce sync.Once
	subs    map[string]bool // guarded by Server.mu
	stalled bool            // guarded by Server.mu
}

func (c *conn) close() { c.cutOnce.Do(func() { close(c.cut) }) }

// Server is the local Mastodon instance. It is safe for concurrent use.
type Server struct {
	opts Options
	url  string

	mu        sync.Mutex
	closed    bool
	token     string
	conns     map[*conn]bool
	accepted  int
	rejected  int
	dropped   int
	nextID    int64
	cutUntil  time.Time
	subEvents []Subscription
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
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// Each server numbers its statuses from its own offset, as instances
	// do: the same status gets different local ids on two of them.
	first := firstLocalID + servers.Add(1)<<localIDsPerServer
	return &Server{opts: opts, token: opts.Token, conns: map[*conn]bool{}, nextID: first}
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

// Handler serves:
//
//	GET /api/v1/streaming          the multiplexed WebSocket
//	GET /api/v1/streaming/health   "OK"
//	GET /api/v1/instance           {"uri", "version", "urls": {"streaming_api"}}
//	GET /api/v2/instance           {"domain", "version", "configuration": {"urls": {"streaming"}}}
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/streaming", s.handleStreaming)
	mux.HandleFunc("GET /api/v1/streaming/health", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "OK")
	})
	mux.HandleFunc("GET /api/v1/instance", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"uri": s.opts.Domain, "title": "Local test instance", "version": "4.3.0",
			"urls": map[string]string{"streaming_api": s.streamingURL(r)},
		})
	})
	mux.HandleFunc("GET /api/v2/instance", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"domain": s.opts.Domain, "title": "Local test instance", "version": "4.3.0",
			"configuration": map[string]any{"urls": map[string]string{"streaming": s.streamingURL(r)}},
		})
	})
	return mux
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

// authorized checks the token in the Authorization header, the
// Sec-WebSocket-Protocol header or the access_token parameter.
func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	want := s.token
	s.mu.Unlock()
	if want == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		got = strings.TrimSpace(r.Header.Get("Sec-WebSocket-Protocol"))
	}
	if got == "" {
		got = r.URL.Query().Get("access_token")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Post fills in the status's defaults and delivers it as an update event
// to every connection subscribed to the public stream or to one of its
// tags (a reblog's are its reblogged status's). It returns the status as
// delivered.
func (s *Server) Post(st Status) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fillLocked(&st)
	s.fanOutLocked("update", st, encodeStatus(st, s.opts.Domain))
	return st
}

// Edit delivers st, which Post returned, as a status.update event, its
// EditedAt set to now when zero. It returns the status as delivered.
func (s *Server) Edit(st Status) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fillLocked(&st)
	if st.EditedAt.IsZero() {
		st.EditedAt = time.Now()
	}
	s.fanOutLocked("status.update", st, encodeStatus(st, s.opts.Domain))
	return st
}

// Delete delivers a delete event for a local id to the streams of st.
func (s *Server) Delete(st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fanOutLocked("delete", st, st.ID)
}

func (s *Server) fillLocked(st *Status) {
	if st.Reblog != nil {
		inner := *st.Reblog
		s.fillLocked(&inner)
		st.Reblog = &inner
	}
	if st.ID == "" {
		s.nextID++
		st.ID = strconv.FormatInt(s.nextID, 10)
	}
	if st.Acct == "" {
		st.Acct = "alice"
	}
	user, domain, remote := strings.Cut(st.Acct, "@")
	if !remote {
		domain = s.opts.Domain
	}
	if st.URI == "" {
		st.URI = "https://" + domain + "/users/" + user + "/statuses/" + st.ID
	}
	if st.URL == "" {
		st.URL = "https://" + domain + "/@" + user + "/" + st.ID
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = time.Now()
	}
}

// fanOutLocked sends an event to each connection once per stream of the
// status it subscribes, as Mastodon does: a status with two subscribed tags
// arrives twice.
func (s *Server) fanOutLocked(event string, st Status, payload string) {
	tags := st.Tags
	if st.Reblog != nil {
		tags = st.Reblog.Tags
	}
	streams := [][]string{{"public"}}
	for _, t := range tags {
		t = strings.ToLower(t)
		if !slices.ContainsFunc(streams, func(x []string) bool { return len(x) == 2 && x[1] == t }) {
			streams = append(streams, []string{"hashtag", t})
		}
	}
	for c := range s.conns {
		for _, name := range streams {
			if !c.subs[strings.Join(name, ":")] {
				continue
			}
			b, _ := json.Marshal(eventFrame{Stream: name, Event: event, Payload: payload})
			s.sendLocked(c, b)
		}
	}
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
// accepted, its subscribed streams sorted: "public", "hashtag:golang".
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
