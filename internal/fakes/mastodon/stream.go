package mastodon

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// handleStreaming serves one multiplexed WebSocket: the client's subscribe
// and unsubscribe messages change its streams, events of those streams and
// pings flow the other way until either side leaves. A stream named in the
// query (stream=public, or stream=hashtag&tag=…) is subscribed at once.
func (s *Server) handleStreaming(w http.ResponseWriter, r *http.Request) {
	scopes, refusal := s.authenticate(r)
	s.mu.Lock()
	cut := time.Now().Before(s.cutUntil)
	if refusal != "" {
		s.rejected++
	}
	s.mu.Unlock()
	switch {
	case refusal != "":
		refuseUpgrade(w, http.StatusUnauthorized, refusal)
		return
	case cut:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("<html><body><h1>503 Service Unavailable</h1></body></html>"))
		return
	}
	var protocols []string
	if p := strings.TrimSpace(r.Header.Get("Sec-WebSocket-Protocol")); p != "" {
		protocols = []string{p} // the token, echoed as Mastodon does
	}
	c := &conn{cut: make(chan struct{}), subs: map[string][]string{}, scopes: scopes}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:   protocols,
		OnPingReceived: func(context.Context, []byte) bool { return !s.stalled(c) },
	})
	if err != nil {
		return // Accept has answered
	}
	defer ws.CloseNow()
	ws.SetReadLimit(maxClientMessageBytes)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.accepted++
	c.n, c.out = s.accepted, make(chan []byte, s.opts.ConnBuffer)
	s.conns[c] = true
	if q := r.URL.Query(); q.Get("stream") != "" {
		s.subscribeLocked(c, "subscribe", q.Get("stream"), q.Get("tag"))
	}
	s.mu.Unlock()
	s.opts.Logger.Debug("streaming connected", "conn", c.n)
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()

	ctx, cancel := context.WithCancel(r.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		ws.CloseNow() // the reader stops
		wg.Wait()
	}()
	wg.Go(func() {
		defer cancel()
		s.readClient(ctx, ws, c)
	})
	wg.Go(func() { s.ping(ctx, ws, c) })

	for {
		var b []byte
		select {
		case <-ctx.Done():
			return
		case <-c.cut:
			return
		case b = <-c.out:
		}
		if s.stalled(c) {
			continue
		}
		wctx, wcancel := context.WithTimeout(ctx, writeTimeout)
		err := ws.Write(wctx, websocket.MessageText, b)
		wcancel()
		if err != nil {
			return
		}
	}
}

// authenticate finds the token as the streaming server does (the
// Authorization header, else the access_token parameter, else the
// Sec-WebSocket-Protocol header) and returns the token's scopes, or the
// reason it refuses the upgrade.
func (s *Server) authenticate(r *http.Request) (scopes []string, refusal string) {
	token := r.URL.Query().Get("access_token")
	if token == "" {
		token = r.Header.Get("Sec-WebSocket-Protocol")
	}
	if a := r.Header.Get("Authorization"); a != "" {
		token = strings.TrimPrefix(a, "Bearer ")
	}
	if token == "" {
		return nil, "Missing access token"
	}
	if !s.tokenOK(token) {
		return nil, "Invalid access token"
	}
	return s.opts.Scopes, ""
}

// tokenOK checks a presented token against the server's.
func (s *Server) tokenOK(token string) bool {
	s.mu.Lock()
	want := s.token
	s.mu.Unlock()
	return want == "" || subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

// refuseUpgrade answers a refused upgrade as the streaming server writes
// it on the raw socket: the status line and these headers, no body, and
// the connection closed.
func refuseUpgrade(w http.ResponseWriter, status int, message string) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Error-Message", message)
		w.WriteHeader(status)
		return
	}
	nc, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer nc.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nX-Request-Id: %s\r\nX-Error-Message: %s\r\n\r\n",
		status, http.StatusText(status), requestID(), message)
	_ = buf.Flush()
}

// requestID is a fresh X-Request-Id.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Server) stalled(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.stalled
}

// ping pings the client every PingInterval unless the connection stalls.
func (s *Server) ping(ctx context.Context, ws *websocket.Conn, c *conn) {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.stalled(c) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, writeTimeout)
		_ = ws.Ping(pctx)
		cancel()
	}
}

// readClient handles the client's messages until it leaves. As the
// streaming server does, it ignores binary frames' content (it closes the
// connection on them), invalid JSON and unknown message types.
func (s *Server) readClient(ctx context.Context, ws *websocket.Conn, c *conn) {
	for {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			_ = ws.Close(websocket.StatusUnsupportedData, "The mastodon streaming server does not support binary messages")
			return
		}
		var m struct {
			Type   string          `json:"type"`
			Stream json.RawMessage `json:"stream"`
			Tag    string          `json:"tag"`
		}
		if json.Unmarshal(data, &m) != nil || (m.Type != "subscribe" && m.Type != "unsubscribe") {
			continue
		}
		s.mu.Lock()
		s.subscribeLocked(c, m.Type, firstParam(m.Stream), m.Tag)
		s.mu.Unlock()
	}
}

// firstParam is the stream of a message: a string, or the first of an
// array of strings.
func firstParam(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many[0]
	}
	return ""
}

// subscribeLocked applies one subscribe or unsubscribe message, answering
// one the server refuses with an error event as Mastodon does: the scopes
// are checked first, then the stream.
func (s *Server) subscribeLocked(c *conn, typ, stream, tag string) {
	ev := Subscription{At: time.Now(), Conn: c.n, Type: typ, Stream: stream}
	defer func() { s.subEvents = append(s.subEvents, ev) }()
	if typ == "subscribe" && !hasScope(c.scopes, "read", "read:statuses") {
		s.replyErrorLocked(c, "Access token does not have the required scopes", http.StatusUnauthorized)
		return
	}
	key, name := stream, []string{stream}
	switch stream {
	case streamPublic, streamPublicLocal, streamPublicRemote, streamUser:
	case streamHashtag, streamHashtagLocal:
		if tag == "" {
			s.replyErrorLocked(c, "Missing tag name parameter", http.StatusBadRequest)
			return
		}
		key, name = stream+":"+strings.ToLower(tag), []string{stream, tag}
	default:
		s.replyErrorLocked(c, "Unknown stream type", http.StatusBadRequest)
		return
	}
	ev.Stream, ev.OK = key, true
	if typ == "subscribe" {
		if _, dup := c.subs[key]; !dup {
			c.subs[key] = name
		}
	} else {
		delete(c.subs, key)
	}
}

func (s *Server) replyErrorLocked(c *conn, msg string, status int) {
	b, _ := json.Marshal(map[string]any{"error": msg, "status": status})
	if s.conns[c] {
		s.sendLocked(c, b)
	}
}
