package jetstream

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// cursorTimeMin is the smallest cursor read as a unix-microsecond time_us;
// the real service reads smaller ones as its own sequence numbers, which
// this server does not keep, so they count as too old.
const cursorTimeMin = 1_000_000_000_000_000

// Wire shapes of the events.
type (
	frameJSON struct {
		DID      string        `json:"did"`
		TimeUS   int64         `json:"time_us"`
		Kind     string        `json:"kind"`
		Commit   *commitJSON   `json:"commit,omitempty"`
		Identity *identityJSON `json:"identity,omitempty"`
		Account  *accountJSON  `json:"account,omitempty"`
	}
	commitJSON struct {
		Rev        string      `json:"rev"`
		Operation  string      `json:"operation"`
		Collection string      `json:"collection"`
		RKey       string      `json:"rkey"`
		Record     *recordJSON `json:"record,omitempty"`
		CID        string      `json:"cid,omitempty"`
	}
	recordJSON struct {
		Type      string          `json:"$type"`
		CreatedAt string          `json:"createdAt"`
		Embed     json.RawMessage `json:"embed,omitempty"`
		Facets    json.RawMessage `json:"facets,omitempty"`
		Langs     []string        `json:"langs,omitempty"`
		Reply     *replyJSON      `json:"reply,omitempty"`
		Text      string          `json:"text"`
	}
	replyJSON struct {
		Parent refJSON `json:"parent"`
		Root   refJSON `json:"root"`
	}
	refJSON struct {
		CID string `json:"cid"`
		URI string `json:"uri"`
	}
	identityJSON struct {
		DID    string `json:"did"`
		Handle string `json:"handle,omitempty"`
		Seq    int64  `json:"seq"`
		Time   string `json:"time"`
	}
	accountJSON struct {
		Active bool   `json:"active"`
		DID    string `json:"did"`
		Seq    int64  `json:"seq"`
		Status string `json:"status,omitempty"`
		Time   string `json:"time"`
	}
)

// filter is what one connection asked for.
type filter struct {
	collections []string // exact names, or prefixes ending in "."; empty = all
	dids        []string // empty = all
}

func (f filter) wants(ev event) bool {
	if len(f.dids) > 0 && !slices.Contains(f.dids, ev.did) {
		return false
	}
	if ev.collection == "" || len(f.collections) == 0 {
		return true // identity and account events ignore wantedCollections
	}
	for _, c := range f.collections {
		if c == ev.collection || strings.HasSuffix(c, ".") && strings.HasPrefix(ev.collection, c) {
			return true
		}
	}
	return false
}

// conn is one client connection.
type conn struct {
	filter   filter
	compress bool // binary frames compressed with the dictionary
	out      chan []byte
	cut      chan struct{}
	cutOnce  sync.Once
}

func (c *conn) close() { c.cutOnce.Do(func() { close(c.cut) }) }

// sendLocked queues a frame for c, dropping the connection when its queue
// is full.
func (s *Server) sendLocked(c *conn, data []byte) {
	select {
	case c.out <- data:
	default:
		s.dropped++
		c.close()
	}
}

// handleSubscribe serves one /subscribe WebSocket: the kept events from
// the cursor on, then live events, until either side leaves.
func (s *Server) handleSubscribe(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	refuse := ""
	status := http.StatusServiceUnavailable
	switch {
	case s.closed:
		refuse = "server closed"
	case time.Now().Before(s.refuseUntil):
		refuse = "service unavailable"
	}
	if refuse != "" {
		s.refused++
	}
	s.mu.Unlock()
	if refuse != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": refuse})
		return
	}
	f := filter{dids: q["wantedDids"]}
	for _, c := range q["wantedCollections"] {
		f.collections = append(f.collections, strings.TrimSuffix(c, "*"))
	}
	cursor, _ := strconv.ParseInt(q.Get("cursor"), 10, 64)
	// As the real server: ?compress=true or the Socket-Encoding header.
	compress := q.Get("compress") == "true" || r.Header.Get("Socket-Encoding") == "zstd"

	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer ws.CloseNow()
	ctx := ws.CloseRead(r.Context()) // the client sends nothing but control frames

	c := &conn{filter: f, compress: compress, out: make(chan []byte, s.opts.ConnBuffer), cut: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.infos = append(s.infos, ConnInfo{Cursor: cursor, Collections: slices.Clone(q["wantedCollections"]), DIDs: f.dids, Compress: compress})
	backlog := s.backlogLocked(f, cursor)
	s.conns[c] = true
	s.mu.Unlock()
	s.opts.Logger.Debug("jetstream client connected", "cursor", cursor, "replay", len(backlog))
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()

	for _, data := range backlog {
		if !s.write(ctx, c, ws, data) {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.cut:
			return
		case data := <-c.out:
			if !s.write(ctx, c, ws, data) {
				return
			}
		}
	}
}

// backlogLocked is the kept events a connection replays: those from cursor
// on (from the oldest kept when cursor is older), none without a cursor or
// with one in the future. As the real service reads its store keyed by
// time_us, a replay comes in time_us order, not in the order the events
// were first sent.
func (s *Server) backlogLocked(f filter, cursor int64) [][]byte {
	if cursor <= 0 {
		return nil
	}
	s.pruneLocked()
	if cursor < cursorTimeMin {
		cursor = 0
	}
	var kept []event
	for _, ev := range s.history {
		if ev.timeUS >= cursor && f.wants(ev) {
			kept = append(kept, ev)
		}
	}
	slices.SortStableFunc(kept, func(a, b event) int { return cmp.Compare(a.timeUS, b.timeUS) })
	out := make([][]byte, len(kept))
	for i, ev := range kept {
		out[i] = ev.data
	}
	return out
}

// write sends one frame unless the server stalls; it reports whether the
// connection is still usable.
func (s *Server) write(ctx context.Context, c *conn, ws *websocket.Conn, data []byte) bool {
	s.mu.Lock()
	stalled := s.stalled
	s.mu.Unlock()
	select {
	case <-c.cut:
		return false
	default:
	}
	if stalled {
		return true
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if c.compress {
		return ws.Write(wctx, websocket.MessageBinary, compressFrame(data)) == nil
	}
	return ws.Write(wctx, websocket.MessageText, data) == nil
}
