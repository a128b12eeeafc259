// Package xv2 is a local stand-in for X API v2's filtered stream: the rules
// endpoint (GET and POST /2/tweets/search/stream/rules, with dry_run), the
// stream itself (GET /2/tweets/search/stream) and recent search over the
// posts published (GET /2/tweets/search/recent, search.go). It checks the
// bearer token, enforces the limits of X's tiers (rule count, rule length,
// one connection per app, 50 stream connections and 450 searches per 15
// minutes), validates rules with its own parser of X's rule syntax, and
// delivers each published post to the open stream with the rules it
// matched. Like X, it goes on counting a connection whose client went away
// against the app's one connection for a while (SlotHold): a client that
// reconnects at once, or another that takes over, is refused with
// TooManyConnections until then. Tests can make it misbehave the way X does: refuse
// connections (429, 503), hold the one connection elsewhere
// (TooManyConnections), go silent, cut the stream, send broken and
// oversized lines, or end the stream with X's in-stream error document.
//
// Posts are sent as X sends them (render.go): text HTML-escaped, links
// t.co-shortened with entities.urls, reposts cut to "RT @user: …" with the
// original in includes.tweets, quote posts, long posts in note_tweet, and
// only the fields and expansions the request asked for. PublishMessage
// sends a recorded stream message as it is.
package xv2

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// Paths of the service.
const (
	RulesPath  = "/2/tweets/search/stream/rules"
	StreamPath = "/2/tweets/search/stream"
)

// Defaults of Options.
const (
	// DefaultMaxRules is how many rules the app may hold (X's Pro tier).
	DefaultMaxRules = 1000
	// DefaultMaxRuleLength is the longest rule in characters (Pro tier).
	DefaultMaxRuleLength = 1024
	// DefaultKeepAlive is how often an idle stream sends "\r\n"; X sends
	// one every 20 seconds.
	DefaultKeepAlive = 20 * time.Second
	// DefaultConnBuffer is how many lines may wait for a slow reader
	// before the server drops the connection, as X drops slow consumers.
	DefaultConnBuffer = 1024
	// DefaultSlotHold is how long the app's one connection still counts
	// as taken after its client went away (a killed process, a closed
	// socket): X's servers notice a vanished client only after a while,
	// and a new connection is refused with TooManyConnections meanwhile.
	// X does not document the delay; its effect — the next client's
	// first attempt right after a kill refused — is what the server
	// reproduces.
	DefaultSlotHold = 5 * time.Second
	// DefaultStreamConnectLimit is how many stream connection requests an
	// app may make in RateWindow (X: 50 per 15 minutes).
	DefaultStreamConnectLimit = 50
	// DefaultRateWindow is X's rate-limit window.
	DefaultRateWindow = 15 * time.Minute
)

// maxBodyBytes caps a rules request body.
const maxBodyBytes = 1 << 20

// Options configure a Server; zero fields take the defaults.
type Options struct {
	// BearerToken, when set, is the only token accepted; when empty any
	// bearer token is.
	BearerToken   string
	MaxRules      int
	MaxRuleLength int
	KeepAlive     time.Duration
	ConnBuffer    int
	// SlotHold is how long a connection whose client went away still
	// holds the app's one connection; negative holds it not at all.
	SlotHold time.Duration
	// StreamConnectLimit and SearchLimit are the requests to the stream
	// and to recent search allowed per RateWindow; MaxQueryLength is the
	// longest search query.
	StreamConnectLimit int
	SearchLimit        int
	RateWindow         time.Duration
	MaxQueryLength     int
	// Logger receives a line per request at debug level; nil discards.
	Logger *slog.Logger
}

// Post is what a test publishes. ID and CreatedAt are filled in when zero;
// AuthorID defaults to a number derived from Username. Text is what the
// author wrote: the server escapes it and shortens its links as X does.
type Post struct {
	ID             string
	Text           string
	Username       string
	AuthorID       string
	Lang           string
	CreatedAt      time.Time
	ConversationID string
	ReplyTo        string // id of the post this one replies to
	// RepostOf makes the post a repost (a retweet) of a post published
	// before; its Text and Lang are the original's.
	RepostOf string
	// QuoteOf makes the post quote a post published before.
	QuoteOf string
	// Metrics are the post's public_metrics; zero for a post just
	// written.
	Metrics Metrics
}

// Metrics are a post's public_metrics as X API v2 sends them.
type Metrics struct {
	RetweetCount    int `json:"retweet_count"`
	ReplyCount      int `json:"reply_count"`
	LikeCount       int `json:"like_count"`
	QuoteCount      int `json:"quote_count"`
	BookmarkCount   int `json:"bookmark_count"`
	ImpressionCount int `json:"impression_count"`
}

// Rule is one rule of the app's stream.
type Rule struct {
	ID    string `json:"id"`
	Value string `json:"value"`
	Tag   string `json:"tag,omitempty"`
}

// Connection is one attempt to open the stream.
type Connection struct {
	At     time.Time
	Status int
	Query  string // the request's raw URL query
}

// RulesRequest is one request to the rules endpoint.
type RulesRequest struct {
	Method  string
	DryRun  bool
	Adds    []Rule
	Deletes []string
	Status  int
}

// Server is the local X. It is safe for concurrent use.
type Server struct {
	opts Options
	done chan struct{}

	mu         sync.Mutex
	closed     bool
	rules      []Rule
	parsed     map[string]*node   // rule id → parsed value
	posts      map[string]*stored // every post published, by id
	nextRuleID int64
	nextPostID int64
	conn       *streamConn // the one open stream
	connLog    []Connection
	rulesLog   []RulesRequest
	streamFail []int // statuses the next stream attempts answer with
	rulesFail  []int // statuses the next rules requests answer with
	held       bool  // another client holds the one connection
	// heldUntil is when the slot of a connection whose client went away
	// is free again (SlotHold).
	heldUntil  time.Time
	stalled    bool
	streamRate rateWindow
	searchRate rateWindow
	searchLog  []SearchRequest
	searchFail []int // statuses the next searches answer with
	// compliance holds the batch compliance jobs (compliance.go).
	compliance *complianceJobs
}

// New returns a server without rules.
func New(opts Options) *Server {
	if opts.MaxRules <= 0 {
		opts.MaxRules = DefaultMaxRules
	}
	if opts.MaxRuleLength <= 0 {
		opts.MaxRuleLength = DefaultMaxRuleLength
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.ConnBuffer <= 0 {
		opts.ConnBuffer = DefaultConnBuffer
	}
	if opts.SlotHold == 0 {
		opts.SlotHold = DefaultSlotHold
	}
	if opts.StreamConnectLimit <= 0 {
		opts.StreamConnectLimit = DefaultStreamConnectLimit
	}
	if opts.SearchLimit <= 0 {
		opts.SearchLimit = DefaultSearchLimit
	}
	if opts.RateWindow <= 0 {
		opts.RateWindow = DefaultRateWindow
	}
	if opts.MaxQueryLength <= 0 {
		opts.MaxQueryLength = DefaultMaxQueryLength
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{
		opts:       opts,
		done:       make(chan struct{}),
		parsed:     map[string]*node{},
		posts:      map[string]*stored{},
		nextRuleID: 1_500_000_000_000_000_000,
		streamRate: rateWindow{limit: opts.StreamConnectLimit, window: opts.RateWindow},
		searchRate: rateWindow{limit: opts.SearchLimit, window: opts.RateWindow},
	}
}

// Start runs a new server on a free loopback port until the test ends and
// returns it with its base URL.
func Start(tb fakehttp.TB, opts Options) (*Server, string) {
	tb.Helper()
	s := New(opts)
	return s, fakehttp.Serve(tb, s.Handler(), s.Close)
}

// Handler serves the rules, the stream and recent search, and GET /healthz.
func (s *Server) Handler() http.Handler {
	mux := fakehttp.NewMux()
	mux.HandleFunc("GET "+RulesPath, s.auth(s.handleListRules))
	mux.HandleFunc("POST "+RulesPath, s.auth(s.handleChangeRules))
	mux.HandleFunc("GET "+StreamPath, s.auth(s.handleStream))
	mux.HandleFunc("GET "+SearchPath, s.auth(s.handleSearch))
	s.complianceRoutes(mux)
	return mux
}

// Close ends the open stream so the HTTP server can shut down.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.done)
	if s.conn != nil {
		s.conn.close()
	}
}

// auth refuses a request without the right bearer token, as X does.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" || s.opts.BearerToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.BearerToken)) != 1 {
			s.opts.Logger.Debug("request refused", "path", r.URL.Path)
			if r.URL.Path == StreamPath {
				s.logConnection(r, http.StatusUnauthorized)
			}
			writeProblem(w, http.StatusUnauthorized, problem{Title: "Unauthorized", Type: "about:blank", Detail: "Unauthorized", Status: http.StatusUnauthorized})
			return
		}
		h(w, r)
	}
}

// problem is X's error document (RFC 7807 style).
type problem struct {
	Title           string `json:"title"`
	Detail          string `json:"detail,omitempty"`
	Type            string `json:"type"`
	Status          int    `json:"status,omitempty"`
	ConnectionIssue string `json:"connection_issue,omitempty"`
}

func writeProblem(w http.ResponseWriter, status int, p problem) {
	writeJSON(w, status, p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// statusProblem is the document X answers an injected status with.
func statusProblem(status int) problem {
	return problem{Title: http.StatusText(status), Detail: http.StatusText(status), Type: "about:blank", Status: status}
}

// Rules returns the app's rules in creation order.
func (s *Server) Rules() []Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rules)
}

// AddRule stores a rule directly, as another tool sharing the app would,
// and returns it; it panics on an invalid value (a test's mistake).
func (s *Server) AddRule(value, tag string) Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := parseRule(value)
	if err != nil {
		panic(err)
	}
	return s.storeRuleLocked(value, tag, n)
}

func (s *Server) storeRuleLocked(value, tag string, n *node) Rule {
	s.nextRuleID++
	r := Rule{ID: strconv.FormatInt(s.nextRuleID, 10), Value: value, Tag: tag}
	s.rules = append(s.rules, r)
	s.parsed[r.ID] = n
	return r
}

// Connections lists every attempt to open the stream.
func (s *Server) Connections() []Connection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.connLog)
}

// RulesRequests lists every request to the rules endpoint.
func (s *Server) RulesRequests() []RulesRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rulesLog)
}

// SlotHeld reports whether a client that went away still holds the app's
// one connection (SlotHold).
func (s *Server) SlotHeld() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.heldUntil)
}

// Connected reports whether a client holds the stream open.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// FailStreams makes the next stream attempts answer with these statuses,
// one each (429, 503, …), instead of streaming.
func (s *Server) FailStreams(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streamFail = append(s.streamFail, statuses...)
}

// FailRules makes the next rules requests answer with these statuses.
func (s *Server) FailRules(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rulesFail = append(s.rulesFail, statuses...)
}

// Hold makes every stream attempt fail with 429 TooManyConnections, as if
// another client held the app's one connection, until Release.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
}

// Release ends Hold.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = false
}

// Stall makes the open stream (and any opened later) send nothing at all,
// not even keep-alives, until Resume.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = true
}

// Resume ends Stall.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = false
}

// Cut drops the open stream abruptly.
func (s *Server) Cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.close()
	}
}

// SendRaw writes data to the open stream as it is (no line end added): a
// malformed line, an oversized one, half a message. With cut the stream
// is dropped right after. It reports whether a stream was open.
func (s *Server) SendRaw(data []byte, cut bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return false
	}
	s.conn.send(frame{data: slices.Clone(data), cut: cut})
	return true
}

// Publish fills in the post's defaults, evaluates every rule on it and,
// when some match and the stream is open, delivers it with the matching
// rules. It returns the post as published and the ids of the rules it
// matched (delivered or not). A repost or quote of a post never published
// is a test's mistake and panics.
func (s *Server) Publish(p Post) (Post, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
	if p.ID == "" {
		p.ID = s.snowflakeLocked(p.CreatedAt)
	}
	if p.Username == "" {
		p.Username = "user"
	}
	if p.AuthorID == "" {
		p.AuthorID = strconv.Itoa(len(p.Username)*1000 + int(p.Username[0]))
	}
	if p.ConversationID == "" {
		p.ConversationID = p.ID
	}
	for _, ref := range []string{p.RepostOf, p.QuoteOf} {
		if ref != "" && s.posts[ref] == nil {
			panic("xv2: post " + p.ID + " references post " + ref + ", never published")
		}
	}
	if orig := s.posts[p.RepostOf]; orig != nil {
		p.Text, p.Lang = "", orig.Lang
	}
	st := s.storeLocked(p)
	matched := s.matchLocked(post{text: textmatch.Fold(s.matchTextLocked(st)), username: strings.ToLower(p.Username), lang: strings.ToLower(p.Lang)})
	if len(matched) > 0 && s.conn != nil {
		data, inc := s.renderLocked(st, s.conn.fields)
		line, _ := json.Marshal(messageJSON{Data: data, Includes: inc, MatchingRules: matchesJSON(matched)})
		s.conn.send(frame{data: append(line, '\r', '\n')})
	}
	return p, ruleIDs(matched)
}

// Snowflake ids: X's post ids are the post's creation time in
// milliseconds since X's epoch, shifted left 22 bits, with a worker and
// sequence number in the low bits (X's "X IDs" page), so ids grow with
// time and a time names an id.
const (
	snowflakeEpochMillis = 1288834974657
	snowflakeTimeShift   = 22
)

// snowflakeLocked is a new post id for a post created at t.
func (s *Server) snowflakeLocked(t time.Time) string {
	s.nextPostID++
	ms := max(t.UnixMilli()-snowflakeEpochMillis, 0)
	return strconv.FormatInt(ms<<snowflakeTimeShift|s.nextPostID&(1<<snowflakeTimeShift-1), 10)
}

// matchLocked lists the rules that match in.
func (s *Server) matchLocked(in post) []Rule {
	var matched []Rule
	for _, r := range s.rules {
		if s.parsed[r.ID].matches(in) {
			matched = append(matched, r)
		}
	}
	return matched
}

func ruleIDs(rules []Rule) []string {
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = r.ID
	}
	return ids
}

func matchesJSON(rules []Rule) []matchJSON {
	out := make([]matchJSON, len(rules))
	for i, r := range rules {
		out[i] = matchJSON{ID: r.ID, Tag: r.Tag}
	}
	return out
}

// PublishMessage evaluates every rule on a recorded stream message (a
// post with its includes, as X's documentation shows them) and, when some
// match and the stream is open, sends it as it is with their
// matching_rules. Rules see what X's do: the unescaped text with its links
// in full, a repost's whole original, a quoted post's text, the author's
// user name. It returns the ids of the rules matched, or an error for a
// document that is not a stream message with a post.
func (s *Server) PublishMessage(doc []byte) ([]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("xv2: recorded message: %w", err)
	}
	var msg recordedMessage
	if err := json.Unmarshal(doc, &msg); err != nil {
		return nil, fmt.Errorf("xv2: recorded message: %w", err)
	}
	if msg.Data == nil || msg.Data.ID == "" {
		return nil, errors.New("xv2: recorded message has no post")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	matched := s.matchLocked(msg.matchInput())
	if len(matched) > 0 && s.conn != nil {
		rules, _ := json.Marshal(matchesJSON(matched))
		raw["matching_rules"] = rules
		line, _ := json.Marshal(raw)
		s.conn.send(frame{data: append(line, '\r', '\n')})
	}
	return ruleIDs(matched), nil
}

// Problem documents X sends inside a stream before it ends it.
var (
	// OperationalDisconnect is the in-stream error of X's "Handling
	// disconnections" guide: X ends the stream for operational reasons.
	OperationalDisconnect = []byte(`{"errors":[{"title":"operational-disconnect","disconnect_type":"UpstreamOperationalDisconnect","detail":"This stream has been disconnected upstream for operational reasons.","type":"https://api.x.com/2/problems/operational-disconnect"}]}`)
)

// EndStream sends an in-stream error document (OperationalDisconnect)
// and drops the open stream, as X does. It reports whether a stream was
// open.
func (s *Server) EndStream(doc []byte) bool {
	return s.SendRaw(append(slices.Clone(doc), '\r', '\n'), true)
}
