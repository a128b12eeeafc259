// Package twitterserver is a local stand-in for the parts of Twitter's API
// v1.1 a spawn uses: the filter stream (statuses/filter.json) and the
// standard search (search/tweets.json). Tests publish tweets, and the server
// delivers each one to every open stream whose track terms it matches and
// keeps it for search. It checks OAuth 1.0a signatures, records the track
// terms of every connection, and can be told to misbehave the way the real
// service does: refuse connections with an error status, go silent, cut
// connections, or send broken messages.
package twitterserver

import (
	"encoding/json"
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

// Defaults of Options.
const (
	// DefaultKeepAlive is how often an idle stream sends a blank line;
	// Twitter sends one every 30 seconds.
	DefaultKeepAlive = 30 * time.Second
	// DefaultHistory is how many published tweets search can find.
	DefaultHistory = 10000
	// DefaultConnBuffer is how many messages may wait for a slow stream
	// reader before the server drops the connection, as Twitter drops
	// consumers that fall behind.
	DefaultConnBuffer = 1024
)

// Limits Twitter applies to a filter stream, enforced here so a client that
// exceeds them fails in tests as it would in production.
const (
	// MaxTrackTerms is the most track terms one connection may carry.
	MaxTrackTerms = 400
	// MaxTrackBytes is the longest track term.
	MaxTrackBytes = 60
	// maxSearchCount caps search's count parameter.
	maxSearchCount = 100
	// defaultSearchCount is search's page size when count is absent.
	defaultSearchCount = 15
	// twitterEpochMs is the Unix time in milliseconds that tweet ids
	// (snowflakes) count from.
	twitterEpochMs = 1288834974657
	// snowflakeTimeShift is where a tweet id's timestamp starts.
	snowflakeTimeShift = 22
	// createdAtLayout is the format of created_at in API v1.1.
	createdAtLayout = time.RubyDate
	// shortTextRunes is the length past which a tweet's text is
	// truncated in compatibility mode and the whole text moves to
	// extended_tweet.full_text.
	shortTextRunes = 140
)

// Credentials are the OAuth 1.0a keys a client must sign with.
type Credentials struct {
	ConsumerKey    string
	ConsumerSecret string
	AccessToken    string
	AccessSecret   string
}

// Options configure a Server. The zero value accepts any OAuth header.
type Options struct {
	// Credentials, when set, are checked: a request must carry a valid
	// HMAC-SHA1 signature made with them. When empty, any OAuth
	// Authorization header is accepted.
	Credentials Credentials
	// KeepAlive is the interval of blank lines on an idle stream; 0 means
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// History bounds the tweets kept for search; 0 means DefaultHistory.
	History int
	// ConnBuffer bounds the messages queued per stream; 0 means
	// DefaultConnBuffer.
	ConnBuffer int
	// Logger receives a line per connection at debug level; nil discards.
	Logger *slog.Logger
}

// Tweet is what a test publishes. Zero fields are filled in by Publish: ID
// with a snowflake id of the current time, CreatedAt with the current time,
// ScreenName with "user".
type Tweet struct {
	ID         int64
	ScreenName string
	Text       string
	CreatedAt  time.Time
	// RetweetOf, when set, makes the tweet a retweet of that screen name's
	// tweet with the same text, shaped as Twitter sends retweets.
	RetweetOf string
	// Retweets and Likes are the tweet's retweet_count and favorite_count
	// (of the retweeted tweet for a retweet: the retweet itself then
	// carries the same retweet_count and a favorite_count of 0, as v1.1
	// sends them).
	Retweets, Likes int
}

// Connection is one attempt to open a filter stream.
type Connection struct {
	At     time.Time
	Status int
	Track  []string
	Method string
}

// Search is one search request.
type Search struct {
	At      time.Time
	Query   string
	SinceID int64
	MaxID   int64
	Count   int
}

// streamConn is one open filter stream.
type streamConn struct {
	terms     [][]string // each term split into words
	delimited bool
	out       chan frame
	cut       chan struct{}
	cutOnce   sync.Once
}

func (c *streamConn) close() { c.cutOnce.Do(func() { close(c.cut) }) }

// frame is one write to a stream; cut ends the connection abruptly after it.
type frame struct {
	data []byte
	cut  bool
}

// failure is a status the next stream or search connections answer with.
type failure struct {
	status int
	left   int
}

// Server is the local Twitter. It is safe for concurrent use.
type Server struct {
	opts Options
	done chan struct{}

	mu           sync.Mutex
	closed       bool
	lastID       int64
	history      []Tweet // oldest first
	conns        map[*streamConn]bool
	connLog      []Connection
	searchLog    []Search
	streamFail   failure
	searchFail   failure
	stalled      bool
	hang         bool
	unauthorized int
	dropped      int
}

// New returns a server with no tweets.
func New(opts Options) *Server {
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	if opts.ConnBuffer <= 0 {
		opts.ConnBuffer = DefaultConnBuffer
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, done: make(chan struct{}), conns: map[*streamConn]bool{}}
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
//	POST|GET /1.1/statuses/filter.json   the filter stream (track=, delimited=length)
//	GET      /1.1/search/tweets.json     standard search (q, since_id, max_id, count)
//	GET      /healthz                    200 when alive
func (s *Server) Handler() http.Handler {
	mux := fakehttp.NewMux()
	mux.HandleFunc("POST /1.1/statuses/filter.json", s.handleFilter)
	mux.HandleFunc("GET /1.1/statuses/filter.json", s.handleFilter)
	mux.HandleFunc("GET /1.1/search/tweets.json", s.handleSearch)
	return mux
}

// Close ends every open stream and releases hung requests, so the HTTP
// server serving the handler can shut down: Start calls it at the end of
// the test, before that shutdown.
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

// Publish assigns the tweet's defaults, keeps it for search and delivers it
// to every open stream tracking a term it contains. It returns the tweet as
// stored.
func (s *Server) Publish(t Tweet) Tweet {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if t.ID == 0 {
		t.ID = s.nextIDLocked(now)
	} else if t.ID > s.lastID {
		s.lastID = t.ID
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.ScreenName == "" {
		t.ScreenName = "user"
	}
	s.history = append(s.history, t)
	if over := len(s.history) - s.opts.History; over > 0 {
		s.history = slices.Delete(s.history, 0, over)
	}
	if s.stalled {
		return t // a silent stream delivers nothing; search still finds it
	}
	text := textmatch.Fold(t.Text)
	var line []byte
	for c := range s.conns {
		if !matchAny(text, c.terms) {
			continue
		}
		if line == nil {
			line, _ = json.Marshal(streamJSON(t))
		}
		s.sendLocked(c, line)
	}
	return t
}

// PublishRaw sends bytes to every open stream as they are: a test's way to
// deliver malformed, truncated or oversized messages. A message frame
// ("\r\n", or the length prefix on delimited streams) is added only when
// framed is true.
func (s *Server) PublishRaw(data []byte, framed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		msg := data
		if framed {
			msg = append(slices.Clone(data), '\r', '\n')
			if c.delimited {
				msg = append([]byte(strconv.Itoa(len(msg))+"\r\n"), msg...)
			}
		}
		s.sendRawLocked(c, frame{data: msg})
	}
}

// Truncate sends data (unframed) to every open stream and then drops each
// connection abruptly: the client sees a message cut off in the middle.
func (s *Server) Truncate(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.sendRawLocked(c, frame{data: slices.Clone(data), cut: true})
	}
}

// FailStreams makes the next n stream connections answer with status
// (420, 429, 503, 401, …) instead of streaming.
func (s *Server) FailStreams(status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streamFail = failure{status: status, left: n}
}

// FailSearches makes the next n search requests answer with status.
func (s *Server) FailSearches(status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searchFail = failure{status: status, left: n}
}

// Stall makes every stream, open or new, send nothing at all (no tweets,
// no keep-alives) while on is true. Tweets published meanwhile are kept
// for search only.
func (s *Server) Stall(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = on
}

// Hang makes new stream connections wait without ever answering (no
// status line, no headers) while on is true.
func (s *Server) Hang(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = on
}

// Cut drops every open stream connection abruptly and returns how many
// there were.
func (s *Server) Cut() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.conns)
	for c := range s.conns {
		c.close()
	}
	return n
}

// Connections lists every stream connection attempt, failed ones included,
// oldest first.
func (s *Server) Connections() []Connection {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Connection, len(s.connLog))
	for i, c := range s.connLog {
		c.Track = slices.Clone(c.Track)
		out[i] = c
	}
	return out
}

// Streaming counts the attempts answered with 200.
func (s *Server) Streaming() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.connLog {
		if c.Status == http.StatusOK {
			n++
		}
	}
	return n
}

// Open is how many streams are open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// OpenTracks returns the track terms of every open stream, each sorted.
func (s *Server) OpenTracks() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for c := range s.conns {
		terms := make([]string, len(c.terms))
		for i, words := range c.terms {
			terms[i] = strings.Join(words, " ")
		}
		slices.Sort(terms)
		out = append(out, terms)
	}
	return out
}

// Searches lists every search request, oldest first.
func (s *Server) Searches() []Search {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.searchLog)
}

// Unauthorized counts requests refused for missing or bad OAuth.
func (s *Server) Unauthorized() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unauthorized
}

// Dropped counts streams closed because their reader fell behind.
func (s *Server) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// nextIDLocked returns a snowflake id for now, greater than every id so far.
func (s *Server) nextIDLocked(now time.Time) int64 {
	id := (now.UnixMilli() - twitterEpochMs) << snowflakeTimeShift
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return id
}

// IDAt is the smallest tweet id Twitter could assign at t: ids are
// snowflakes whose high bits are milliseconds since Twitter's epoch.
func IDAt(t time.Time) int64 {
	return (t.UnixMilli() - twitterEpochMs) << snowflakeTimeShift
}

func (s *Server) sendLocked(c *streamConn, line []byte) {
	msg := make([]byte, 0, len(line)+2)
	msg = append(msg, line...)
	msg = append(msg, '\r', '\n')
	if c.delimited {
		msg = append([]byte(strconv.Itoa(len(msg))+"\r\n"), msg...)
	}
	s.sendRawLocked(c, frame{data: msg})
}

func (s *Server) sendRawLocked(c *streamConn, f frame) {
	select {
	case c.out <- f:
	default:
		s.dropped++
		delete(s.conns, c)
		c.close()
	}
}

// writeError answers with Twitter's error document.
func writeError(w http.ResponseWriter, status, code int, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"errors":[{"code":%d,"message":%q}]}`+"\n", code, message)
}

// statusText names Twitter's own statuses that net/http does not know.
func statusText(status int) string {
	if status == 420 {
		return "Enhance Your Calm"
	}
	return http.StatusText(status)
}
