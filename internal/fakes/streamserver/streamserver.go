// Package streamserver is a local commercial push stream shaped like
// DataSift's multi-stream API, for tests: filters written in a small CSDL
// subset are compiled to hashes (POST /v1/compile), and one WebSocket per
// client (GET /multi) carries any number of subscriptions, each named by its
// hash. Published interactions reach every connection subscribed to a hash
// whose filter they match, wrapped with that hash; idle connections get
// ticks; every delivered item is billed to its hash. The server can be told
// to refuse API keys, drop connections, go silent, or send malformed,
// truncated and oversized messages.
//
// Wire format (JSON text messages):
//
//	client → server  {"action":"subscribe","hash":"…"}   {"action":"unsubscribe","hash":"…"}
//	server → client  {"hash":"…","data":{"interaction":{"id":…,"content":…,"author":{…},"link":…,"created_at":…}}}
//	                 {"tick":1700000000,"status":"connected","message":"Waiting for data"}
//	                 {"status":"success"|"failure","message":"…","hash":"…"}
//
// Credentials go in the Authorization header as "username:api_key", as
// DataSift's REST API takes them; the username and api_key query parameters
// of DataSift's browser WebSocket endpoint are accepted too.
package streamserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// Defaults of Options.
const (
	// DefaultTickInterval is how often a connection gets a tick.
	DefaultTickInterval = 30 * time.Second
	// DefaultConnBuffer is how many messages may wait for a slow reader
	// before the server drops its connection.
	DefaultConnBuffer = 1024
	// MaxSubscriptions is how many hashes one connection may subscribe
	// (DataSift's limit).
	MaxSubscriptions = 5000
	// maxClientMessageBytes caps one message from a client.
	maxClientMessageBytes = 64 << 10
	// maxCSDLBytes caps a filter definition.
	maxCSDLBytes = 1 << 20
	// writeTimeout bounds one write to a client.
	writeTimeout = 10 * time.Second
	// createdAtLayout is the interaction date format.
	createdAtLayout = time.RFC1123Z
)

// Options configure a Server.
type Options struct {
	// Username and APIKey are the account clients must present. An empty
	// Username accepts any user with the right key; an empty APIKey
	// accepts anyone.
	Username string
	APIKey   string
	// TickInterval is the interval of ticks; 0 means DefaultTickInterval.
	TickInterval time.Duration
	// ConnBuffer bounds the messages queued per connection; 0 means
	// DefaultConnBuffer.
	ConnBuffer int
	// Logger receives a line per connection at debug level; nil discards.
	Logger *slog.Logger
}

// Interaction is what a test publishes. Zero fields are filled in by
// Publish: ID with a random 32-hex id, Type with "twitter", CreatedAt with
// the current time.
type Interaction struct {
	ID         string
	Type       string
	Content    string
	Author     string
	AuthorName string
	Link       string
	CreatedAt  time.Time
}

// Event is one subscribe or unsubscribe message a client sent.
type Event struct {
	At     time.Time
	Conn   int // the connection's number, from 1
	Action string
	Hash   string
	OK     bool
}

// Attempt is one connection attempt on /multi.
type Attempt struct {
	At     time.Time
	Status int // 101 when the WebSocket was accepted
}

// filter is one compiled CSDL definition.
type filter struct {
	csdl    string
	phrases [][]string // any phrase matches; each is a run of words
}

// frame is one message to a client; cut drops the connection after it is
// (partly) written.
type frame struct {
	data    []byte
	partial bool
	cut     bool
}

// conn is one client connection.
type conn struct {
	n       int
	out     chan frame
	cut     chan struct{}
	cutOnce sync.Once
	subs    map[string]bool // guarded by Server.mu
}

func (c *conn) close() { c.cutOnce.Do(func() { close(c.cut) }) }

// Server is the local stream service. It is safe for concurrent use.
type Server struct {
	opts Options
	done chan struct{}

	mu       sync.Mutex
	closed   bool
	filters  map[string]*filter
	conns    map[*conn]bool
	accepted int
	rejected int
	compiles int
	billing  map[string]int64
	events   []Event
	refuse   bool
	badCSDL  []string // definitions containing one of these fail to compile
	stalled  bool
	dropped  int
	attempts []Attempt
	fail     struct{ status, left int }
}

// New returns a server with no filters.
func New(opts Options) *Server {
	if opts.TickInterval <= 0 {
		opts.TickInterval = DefaultTickInterval
	}
	if opts.ConnBuffer <= 0 {
		opts.ConnBuffer = DefaultConnBuffer
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, done: make(chan struct{}), filters: map[string]*filter{}, conns: map[*conn]bool{}, billing: map[string]int64{}}
}

// Start runs a new server on a free loopback port until the test ends and
// returns it with its base URL. At the end it closes the server's streams
// before shutting down.
func Start(tb fakehttp.TB, opts Options) (*Server, string) {
	tb.Helper()
	s := New(opts)
	return s, fakehttp.Serve(tb, s.Handler(), s.Close)
}

// Handler serves:
//
//	POST /v1/compile   csdl=… → {"hash":…,"created_at":…,"dpu":…}
//	GET  /multi        the multi-stream WebSocket
//	GET  /healthz      200 when alive
func (s *Server) Handler() http.Handler {
	mux := fakehttp.NewMux()
	mux.HandleFunc("POST /v1/compile", s.handleCompile)
	mux.HandleFunc("GET /multi", s.handleMulti)
	return mux
}

// Close drops every connection, so the HTTP server serving the
// handler can shut down: Start calls it at the end of the test, before
// that shutdown.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.done)
	for c := range s.conns {
		c.close()
	}
}

// authorized checks "Authorization: username:api_key" (or the username and
// api_key query parameters).
func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	refuse := s.refuse
	s.mu.Unlock()
	if refuse {
		return false
	}
	user, key, ok := strings.Cut(r.Header.Get("Authorization"), ":")
	if !ok {
		user, key = r.URL.Query().Get("username"), r.URL.Query().Get("api_key")
	}
	if s.opts.APIKey == "" {
		return true
	}
	if s.opts.Username != "" && user != s.opts.Username {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.APIKey)) == 1
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// handleCompile compiles a CSDL filter to its hash. The same definition
// always gets the same hash.
func (s *Server) handleCompile(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		s.mu.Lock()
		s.rejected++
		s.mu.Unlock()
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Authorization failed"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxCSDLBytes)
	csdl := strings.TrimSpace(r.FormValue("csdl"))
	phrases, err := ParseCSDL(csdl)
	if err == nil {
		err = s.refusedCSDL(csdl)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	hash := HashOf(csdl)
	s.mu.Lock()
	s.compiles++
	s.filters[hash] = &filter{csdl: csdl, phrases: phrases}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{
		"hash":       hash,
		"created_at": time.Now().UTC().Format("2006-01-02 15:04:05"),
		"dpu":        fmt.Sprintf("%.1f", 0.1*float64(len(phrases))),
	})
}

// HashOf is the hash a CSDL definition compiles to: 32 hex digits, as
// DataSift's were.
func HashOf(csdl string) string {
	sum := sha256.Sum256([]byte(csdl))
	return hex.EncodeToString(sum[:16])
}

// ErrCSDL is wrapped by every error of ParseCSDL.
var ErrCSDL = errors.New("streamserver: unsupported CSDL")

// ParseCSDL reads the subset of CSDL the server understands: one or more
// `interaction.content contains "phrase"` conditions joined by `or`
// (case-insensitive), phrases quoted with backslash escapes. It returns
// each phrase as its lower-cased words.
func ParseCSDL(csdl string) ([][]string, error) {
	const target = "interaction.content"
	var out [][]string
	rest := strings.TrimSpace(csdl)
	for {
		var ok bool
		if rest, ok = cutPrefixFold(rest, target); !ok {
			return nil, fmt.Errorf("%w: expected %s at %q", ErrCSDL, target, clip(rest))
		}
		if rest, ok = cutPrefixFold(strings.TrimLeft(rest, " \t\n"), "contains"); !ok {
			return nil, fmt.Errorf("%w: expected the contains operator at %q", ErrCSDL, clip(rest))
		}
		phrase, after, err := quoted(strings.TrimLeft(rest, " \t\n"))
		if err != nil {
			return nil, err
		}
		words := strings.Fields(strings.ToLower(phrase))
		if len(words) == 0 {
			return nil, fmt.Errorf("%w: empty phrase", ErrCSDL)
		}
		out = append(out, words)
		rest = strings.TrimSpace(after)
		if rest == "" {
			return out, nil
		}
		if rest, ok = cutPrefixFold(rest, "or"); !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\n') {
			return nil, fmt.Errorf("%w: expected or at %q", ErrCSDL, clip(rest))
		}
		rest = strings.TrimSpace(rest)
	}
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// quoted reads a double-quoted string with backslash escapes.
func quoted(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", fmt.Errorf("%w: expected a quoted phrase at %q", ErrCSDL, clip(s))
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("%w: unfinished escape", ErrCSDL)
			}
			i++
			b.WriteByte(s[i])
		case '"':
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("%w: unterminated phrase", ErrCSDL)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Publish fills in the interaction's defaults and delivers it, wrapped with
// the hash, to every connection subscribed to a hash whose filter it
// matches; each delivery is billed to the hash. It returns the interaction
// as delivered.
func (s *Server) Publish(it Interaction) Interaction {
	if it.ID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		it.ID = hex.EncodeToString(b[:])
	}
	if it.Type == "" {
		it.Type = "twitter"
	}
	if it.CreatedAt.IsZero() {
		it.CreatedAt = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled {
		return it
	}
	text := textmatch.Fold(it.Content)
	for hash, f := range s.filters {
		if !f.matches(text) {
			continue
		}
		var msg []byte
		for c := range s.conns {
			if !c.subs[hash] {
				continue
			}
			if msg == nil {
				msg, _ = json.Marshal(dataMessage{Hash: hash, Data: dataBody{Interaction: interactionJSON(it)}})
			}
			if s.sendLocked(c, frame{data: msg}) {
				s.billing[hash]++
			}
		}
	}
	return it
}

func (f *filter) matches(text string) bool {
	for _, words := range f.phrases {
		if textmatch.ContainsPhrase(text, strings.Join(words, " ")) {
			return true
		}
	}
	return false
}

// SendRaw sends data as one complete text message to every connection: a
// test's way to deliver malformed, truncated or oversized messages.
func (s *Server) SendRaw(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.sendLocked(c, frame{data: slices.Clone(data)})
	}
}

// Truncate starts a message with data on every connection and drops the
// connection before the message ends. Frames reach the wire in 4 KiB
// pieces, so data should be longer than that.
func (s *Server) Truncate(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.sendLocked(c, frame{data: slices.Clone(data), partial: true, cut: true})
	}
}

// FailConnections makes the next n connection attempts answer with status
// (503, 500, …) instead of upgrading.
func (s *Server) FailConnections(status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail.status, s.fail.left = status, n
}

// Forget drops a compiled filter, as a service does with expired hashes:
// subscribing to it fails from then on.
func (s *Server) Forget(hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.filters, hash)
}

// Attempts lists the connection attempts on /multi, oldest first.
func (s *Server) Attempts() []Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.attempts)
}

// RefuseCSDL makes definitions that contain text fail to compile, as the
// real service refuses a filter it cannot run.
func (s *Server) RefuseCSDL(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.badCSDL = append(s.badCSDL, text)
}

// refusedCSDL is the compile error of a definition RefuseCSDL covers.
func (s *Server) refusedCSDL(csdl string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, bad := range s.badCSDL {
		if strings.Contains(csdl, bad) {
			return fmt.Errorf("%w: the service cannot run a filter on %q", ErrCSDL, bad)
		}
	}
	return nil
}

// RefuseKeys makes every request fail authorization (401) while on.
func (s *Server) RefuseKeys(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = on
}

// Stall makes every connection silent (no ticks, no data; published
// interactions are not delivered) while on.
func (s *Server) Stall(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = on
}

// Cut drops every connection abruptly and returns how many there were.
func (s *Server) Cut() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.conns)
	for c := range s.conns {
		c.close()
	}
	return n
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

// Rejected counts requests refused for a bad username or API key.
func (s *Server) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// Compiles counts successful compile requests.
func (s *Server) Compiles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compiles
}

// Billing returns the items delivered per hash.
func (s *Server) Billing() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.billing)
}

// Subscriptions returns, per open connection, its subscribed hashes,
// sorted.
func (s *Server) Subscriptions() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for c := range s.conns {
		hs := slices.Sorted(maps.Keys(c.subs))
		out = append(out, hs)
	}
	return out
}

// Events lists the subscribe and unsubscribe messages received, oldest
// first.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// CSDL returns the definition a hash was compiled from.
func (s *Server) CSDL(hash string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.filters[hash]
	if !ok {
		return "", false
	}
	return f.csdl, true
}

// sendLocked queues a message; a connection whose queue is full is
// dropped, as a service drops consumers that fall behind.
func (s *Server) sendLocked(c *conn, f frame) bool {
	select {
	case c.out <- f:
		return true
	default:
		s.dropped++
		delete(s.conns, c)
		c.close()
		return false
	}
}

// Wire types.
type (
	dataMessage struct {
		Hash string   `json:"hash"`
		Data dataBody `json:"data"`
	}
	dataBody struct {
		Interaction interactionDoc `json:"interaction"`
	}
	interactionDoc struct {
		ID        string    `json:"id"`
		Type      string    `json:"type"`
		Content   string    `json:"content"`
		Author    authorDoc `json:"author"`
		Link      string    `json:"link,omitempty"`
		CreatedAt string    `json:"created_at"`
	}
	authorDoc struct {
		Username string `json:"username"`
		Name     string `json:"name,omitempty"`
	}
	tickMessage struct {
		Tick    int64  `json:"tick"`
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	statusMessage struct {
		Status  string `json:"status"`
		Message string `json:"message"`
		Hash    string `json:"hash,omitempty"`
	}
	clientMessage struct {
		Action string `json:"action"`
		Hash   string `json:"hash"`
	}
)

func interactionJSON(it Interaction) interactionDoc {
	return interactionDoc{
		ID:        it.ID,
		Type:      it.Type,
		Content:   it.Content,
		Author:    authorDoc{Username: it.Author, Name: it.AuthorName},
		Link:      it.Link,
		CreatedAt: it.CreatedAt.UTC().Format(createdAtLayout),
	}
}
