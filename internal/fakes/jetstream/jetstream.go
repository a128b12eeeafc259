// Package jetstream is a local Bluesky Jetstream for tests and the demo: it
// speaks the service's JSON WebSocket protocol on /subscribe (the one
// Jetstream v1 defined and v2 keeps for existing consumers) as production
// sends it, quirks included (see internal/corpus/testdata/expected_v1.jsonl
// in bluesky-social/jetstream), so a client written against it works
// against the real service.
//
// Protocol, as served here:
//
//	GET /subscribe?wantedCollections=app.bsky.feed.post&wantedDids=did:…&cursor=<time_us>&compress=true
//
// upgrades to a WebSocket on which the server pushes one JSON message per
// event and reads nothing but control frames:
//
//	{"did":"did:plc:…","time_us":1725911162329308,"kind":"commit",
//	 "commit":{"rev":"…","operation":"create","collection":"app.bsky.feed.post","rkey":"…",
//	           "record":{"$type":"app.bsky.feed.post","text":"…","createdAt":"…","langs":["en"],
//	                     "reply":{"root":{"uri":"at://…","cid":"…"},"parent":{"uri":"at://…","cid":"…"}}},
//	           "cid":"…"}}
//	{"did":"did:plc:…","time_us":…,"kind":"commit","commit":{"rev":"…","operation":"delete","collection":"app.bsky.feed.post","rkey":"…"}}
//	{"did":"did:plc:…","time_us":…,"kind":"identity","identity":{"did":"did:plc:…","seq":…,"time":"…"}}
//	{"did":"did:plc:…","time_us":…,"kind":"account","account":{"active":false,"did":"did:plc:…","seq":…,"status":"deleted","time":"…"}}
//
// As in production: v1 events carry no "cursor" field; an identity event
// carries the handle only when the test gives one (production's mostly
// carry none); time_us is the server's clock when it took the event, so it
// steps back by up to Options.StepBack (tens of milliseconds, as recorded)
// between events sent in a row; an update commit carries the new record, a
// delete none. wantedCollections (repeatable, "prefix.*" allowed) filters
// commit events only: identity and account events reach every connection;
// wantedDids filters all kinds. cursor replays the kept history with
// time_us at or after it, in time_us order, before the live events; a
// cursor older than the replay window starts silently at the oldest event
// still inside it, and a cursor in the future means the live tail.
// compress=true (or the Socket-Encoding: zstd header) makes every message
// a binary frame compressed with zstd and the service's dictionary
// (Dictionary), as the real server does.
//
// A test can also drop every connection and refuse new ones for a while
// (Cut), accept connections and send nothing (Stall), send arbitrary
// frames (SendRaw), and replay recorded events verbatim (Replay).
package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// Defaults of Options and limits of the server.
const (
	// DefaultReplayWindow is how far back a cursor may reach: the real
	// service keeps 36 hours.
	DefaultReplayWindow = 36 * time.Hour
	// DefaultHistoryLimit bounds the events kept for replay.
	DefaultHistoryLimit = 100_000
	// DefaultStepBack is how far production's time_us step back between
	// events sent in a row: up to 32 ms in the recorded corpus.
	DefaultStepBack = 30 * time.Millisecond
	// stepBackOneIn is how often an event steps back: 42 of the 152
	// recorded ones did.
	stepBackOneIn = 4
	// DefaultConnBuffer is how many events may wait for a slow reader
	// before its connection is dropped, as the real service drops
	// consumers that fall behind.
	DefaultConnBuffer = 4096
	// PostCollection is the collection of Bluesky posts.
	PostCollection = "app.bsky.feed.post"
	// SubscribePath is the WebSocket endpoint.
	SubscribePath = "/subscribe"
	// writeTimeout bounds one write to a client.
	writeTimeout = 10 * time.Second
	// readHeaderTimeout bounds a request's headers on a server started by
	// Serve.
	readHeaderTimeout = 5 * time.Second
	// tidAlphabet is the base32 alphabet of atproto record keys (TIDs).
	tidAlphabet = "234567abcdefghijklmnopqrstuvwxyz"
)

// Options configure a Server; zero fields take the defaults.
type Options struct {
	// ReplayWindow is how far back from now a cursor may reach; older
	// events are neither replayed nor kept.
	ReplayWindow time.Duration
	// HistoryLimit bounds the events kept for replay; the oldest go first.
	HistoryLimit int
	// ConnBuffer bounds the events queued per connection.
	ConnBuffer int
	// StepBack is how far an event's time_us may fall behind the one sent
	// before it; 0 means DefaultStepBack, a negative value strictly
	// increasing times.
	StepBack time.Duration
	// Logger receives a line per connection at debug level; nil discards.
	Logger *slog.Logger
}

// Post is a record a test publishes as a commit event. Zero fields are
// filled in: RKey with a TID made of the event's time, CreatedAt with now,
// Collection with PostCollection, Operation with "create".
type Post struct {
	DID        string
	RKey       string
	Text       string
	Langs      []string
	CreatedAt  time.Time
	Collection string
	Operation  string // create, update or delete
	// ReplyParent and ReplyRoot are the at:// URIs of the post answered
	// and of the first post of the thread; empty for a post that is not a
	// reply.
	ReplyParent string
	ReplyRoot   string
	// Facets and Embed, when set, are the record's facets and embed as
	// JSON in the lexicon's shapes (app.bsky.richtext.facet,
	// app.bsky.embed.*).
	Facets json.RawMessage
	Embed  json.RawMessage
}

// Published says what Publish sent.
type Published struct {
	URI    string // at://<did>/<collection>/<rkey>
	TimeUS int64
}

// ConnInfo is what one accepted connection asked for.
type ConnInfo struct {
	Cursor      int64 // 0 for the live tail
	Collections []string
	DIDs        []string
	Compress    bool // asked for zstd frames
}

// event is one kept event, encoded once.
type event struct {
	timeUS     int64
	did        string
	collection string // "" for identity and account events
	data       []byte
}

// Server is the local Jetstream. It is safe for concurrent use.
type Server struct {
	opts Options

	mu          sync.Mutex
	closed      bool
	url         string
	httpSrv     *http.Server
	history     []event // oldest first
	lastTimeUS  int64
	used        map[int64]bool // time_us given out (kept with the history)
	seq         int64
	conns       map[*conn]bool
	infos       []ConnInfo
	refused     int
	dropped     int
	refuseUntil time.Time
	stalled     bool
}

// New returns a server with no history; Start or Serve make it listen, and
// Handler serves it from another server.
func New(opts Options) *Server {
	if opts.ReplayWindow <= 0 {
		opts.ReplayWindow = DefaultReplayWindow
	}
	if opts.HistoryLimit <= 0 {
		opts.HistoryLimit = DefaultHistoryLimit
	}
	if opts.ConnBuffer <= 0 {
		opts.ConnBuffer = DefaultConnBuffer
	}
	if opts.StepBack == 0 {
		opts.StepBack = DefaultStepBack
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, conns: map[*conn]bool{}, used: map[int64]bool{}}
}

// Start runs a new server on a free loopback port until the test ends; its
// URL is the WebSocket endpoint to give a client.
func Start(tb fakehttp.TB, opts Options) *Server {
	tb.Helper()
	s := New(opts)
	base := fakehttp.Serve(tb, s.Handler(), s.Close)
	s.mu.Lock()
	s.url = "ws" + strings.TrimPrefix(base, "http") + SubscribePath
	s.mu.Unlock()
	return s
}

// Serve listens on addr ("127.0.0.1:0" picks a port) and serves until
// Close, for a demo outside tests. It returns once listening.
func (s *Server) Serve(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("jetstream: unable to listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: readHeaderTimeout}
	s.mu.Lock()
	s.url = "ws://" + ln.Addr().String() + SubscribePath
	s.httpSrv = srv
	s.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Logger.Error("jetstream server failed", "err", err)
		}
	}()
	return nil
}

// URL is the /subscribe WebSocket URL once the server listens.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Handler serves GET /subscribe and GET /healthz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+SubscribePath, s.handleSubscribe)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// Close drops every connection and refuses new ones; a server started by
// Serve also stops listening.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for c := range s.conns {
		c.close()
	}
	srv := s.httpSrv
	s.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	}
}

// Publish appends a commit event for post to the history and sends it to
// every connection that wants it.
func (s *Server) Publish(p Post) Published {
	if p.Collection == "" {
		p.Collection = PostCollection
	}
	if p.Operation == "" {
		p.Operation = "create"
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.nextTimeLocked()
	if p.RKey == "" {
		p.RKey = tid(t, s.seq)
	}
	c := commitJSON{Rev: tid(t, s.seq+1), Operation: p.Operation, Collection: p.Collection, RKey: p.RKey}
	if p.Operation != "delete" {
		rec := recordJSON{Type: p.Collection, Text: p.Text, CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339Nano), Langs: p.Langs,
			Facets: p.Facets, Embed: p.Embed}
		if p.ReplyParent != "" || p.ReplyRoot != "" {
			rec.Reply = &replyJSON{Parent: refJSON{URI: p.ReplyParent, CID: fakeCID(p.ReplyParent)}, Root: refJSON{URI: p.ReplyRoot, CID: fakeCID(p.ReplyRoot)}}
		}
		c.Record = &rec
		c.CID = fakeCID(fmt.Sprint(p.DID, p.RKey, t))
	}
	s.appendLocked(event{timeUS: t, did: p.DID, collection: p.Collection}, frameJSON{DID: p.DID, Commit: &c})
	return Published{URI: "at://" + p.DID + "/" + p.Collection + "/" + p.RKey, TimeUS: t}
}

// PublishIdentity sends an identity event: the account's handle is now
// handle ("" when it has none that verifies). It returns the event's
// time_us.
func (s *Server) PublishIdentity(did, handle string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.nextTimeLocked()
	s.appendLocked(event{timeUS: t, did: did}, frameJSON{DID: did, Identity: &identityJSON{DID: did, Handle: handle, Seq: s.seq, Time: time.UnixMicro(t).UTC().Format(time.RFC3339Nano)}})
	return t
}

// PublishAccount sends an account event (the account became active or
// inactive with status). It returns the event's time_us.
func (s *Server) PublishAccount(did string, active bool, status string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.nextTimeLocked()
	s.appendLocked(event{timeUS: t, did: did}, frameJSON{DID: did, Account: &accountJSON{Active: active, DID: did, Seq: s.seq, Status: status, Time: time.UnixMicro(t).UTC().Format(time.RFC3339Nano)}})
	return t
}

// nextTimeLocked is the next event's time_us: the clock, now and then set
// back by up to StepBack (as production's, taken by parallel workers), and
// never one already used.
func (s *Server) nextTimeLocked() int64 {
	s.seq++
	t := time.Now().UnixMicro()
	if s.opts.StepBack < 0 {
		t = max(t, s.lastTimeUS+1)
	} else if rand.N(stepBackOneIn) == 0 {
		t -= rand.Int64N(s.opts.StepBack.Microseconds() + 1)
	}
	for s.used[t] {
		t++
	}
	s.used[t] = true
	s.lastTimeUS = max(s.lastTimeUS, t)
	return t
}

// appendLocked encodes an event, keeps it and sends it to the connections
// that want it.
func (s *Server) appendLocked(ev event, f frameJSON) {
	f.TimeUS = ev.timeUS
	switch {
	case f.Commit != nil:
		f.Kind = "commit"
	case f.Identity != nil:
		f.Kind = "identity"
	default:
		f.Kind = "account"
	}
	ev.data, _ = json.Marshal(f)
	s.history = append(s.history, ev)
	s.pruneLocked()
	for c := range s.conns {
		if c.filter.wants(ev) {
			s.sendLocked(c, ev.data)
		}
	}
}

// pruneLocked forgets events beyond the history limit or the replay window.
func (s *Server) pruneLocked() {
	floor := time.Now().Add(-s.opts.ReplayWindow).UnixMicro()
	drop := max(len(s.history)-s.opts.HistoryLimit, 0)
	for drop < len(s.history) && s.history[drop].timeUS < floor {
		drop++
	}
	// Reslicing keeps this O(1); the next growth of the slice copies only
	// the kept events.
	for _, ev := range s.history[:drop] {
		delete(s.used, ev.timeUS)
	}
	s.history = s.history[drop:]
}

// Oldest is the time_us of the oldest event a cursor can still reach, 0
// when there is none.
func (s *Server) Oldest() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	if len(s.history) == 0 {
		return 0
	}
	return s.history[0].timeUS
}

// Cut drops every connection and refuses new ones (503) for d.
func (s *Server) Cut(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseUntil = time.Now().Add(d)
	for c := range s.conns {
		c.close()
	}
}

// Stall makes the server accept connections and send nothing on any of
// them (events published meanwhile are kept for replay) until Unstall.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = true
}

// Unstall ends Stall.
func (s *Server) Unstall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = false
}

// Replay appends recorded v1 events (one JSON object each, as production
// sent them) to the history verbatim, with their own time_us, and sends
// them to the connections that want them. An event that is not one fails
// the whole call before anything is sent.
func (s *Server) Replay(lines [][]byte) error {
	evs := make([]event, 0, len(lines))
	for i, l := range lines {
		var head struct {
			DID    string `json:"did"`
			TimeUS int64  `json:"time_us"`
			Kind   string `json:"kind"`
			Commit *struct {
				Collection string `json:"collection"`
			} `json:"commit"`
		}
		if err := json.Unmarshal(l, &head); err != nil || head.DID == "" || head.TimeUS <= 0 {
			return fmt.Errorf("jetstream: recorded event %d is not a v1 event: %v", i, err)
		}
		ev := event{timeUS: head.TimeUS, did: head.DID, data: append([]byte(nil), l...)}
		if head.Kind == "commit" && head.Commit != nil {
			ev.collection = head.Commit.Collection
		}
		evs = append(evs, ev)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range evs {
		s.seq++
		s.used[ev.timeUS] = true // its own time, from the clock that recorded it: the server's clock goes on
		s.history = append(s.history, ev)
		for c := range s.conns {
			if c.filter.wants(ev) {
				s.sendLocked(c, ev.data)
			}
		}
	}
	return nil
}

// SendRaw sends frame as one text message to every connection, as it is: a
// test's way to deliver malformed, truncated or oversized messages.
func (s *Server) SendRaw(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.sendLocked(c, frame)
	}
}

// Conns is the number of open connections.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Accepted lists what each accepted connection asked for, oldest first.
func (s *Server) Accepted() []ConnInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ConnInfo(nil), s.infos...)
}

// Refused is how many handshakes were refused (during a Cut).
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Dropped is how many connections were dropped for reading too slowly.
func (s *Server) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// tid encodes a time_us and a clock id as an atproto TID: 13 base32
// characters that sort like the time.
func tid(timeUS, clock int64) string {
	v := uint64(timeUS)<<10 | uint64(clock)&0x3ff
	var b [13]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = tidAlphabet[v&31]
		v >>= 5
	}
	return string(b[:])
}

// fakeCID is a stable, CID-shaped string for s.
func fakeCID(s string) string {
	if s == "" {
		return ""
	}
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return "bafyrei" + tid(int64(h>>1), int64(h))
}
