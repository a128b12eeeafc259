package streamserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// handleMulti serves one multi-stream WebSocket: the client's subscribe and
// unsubscribe messages are answered with a status message each; matching
// interactions and ticks flow the other way until either side leaves.
// Hashes listed in the hashes query parameter are subscribed at once.
func (s *Server) handleMulti(w http.ResponseWriter, r *http.Request) {
	authorized := s.authorized(r)
	s.mu.Lock()
	status := http.StatusSwitchingProtocols
	switch {
	case !authorized:
		status = http.StatusUnauthorized
		s.rejected++
	case s.fail.left > 0:
		status = s.fail.status
		s.fail.left--
	}
	s.attempts = append(s.attempts, Attempt{At: time.Now(), Status: status})
	s.mu.Unlock()
	switch status {
	case http.StatusSwitchingProtocols:
	case http.StatusUnauthorized:
		writeJSON(w, status, map[string]string{"error": "Authorization failed"})
		return
	default:
		writeJSON(w, status, map[string]string{"error": http.StatusText(status)})
		return
	}
	ws, err := websocket.Accept(w, r, nil)
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
	c := &conn{n: s.accepted, out: make(chan frame, s.opts.ConnBuffer), cut: make(chan struct{}), subs: map[string]bool{}}
	s.conns[c] = true
	for _, h := range strings.Split(r.URL.Query().Get("hashes"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			s.subscribeLocked(c, h)
		}
	}
	s.sendLocked(c, frame{data: tick()})
	s.mu.Unlock()
	s.opts.Logger.Debug("multi-stream connected", "conn", c.n)
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()

	ctx, cancel := context.WithCancel(r.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		ws.CloseNow() // drops the connection now: the reader stops
		wg.Wait()
	}()
	wg.Go(func() {
		defer cancel()
		s.readClient(ctx, ws, c)
	})

	ticker := time.NewTicker(s.opts.TickInterval)
	defer ticker.Stop()
	for {
		var f frame
		select {
		case <-ctx.Done():
			return
		case <-c.cut:
			return
		case f = <-c.out:
		case <-ticker.C:
			f = frame{data: tick()}
		}
		s.mu.Lock()
		stalled := s.stalled
		s.mu.Unlock()
		if stalled && !f.partial {
			continue
		}
		if err := write(ctx, ws, f); err != nil || f.cut {
			return
		}
	}
}

// write sends one frame. A partial frame starts a message and never
// finishes it.
func write(ctx context.Context, ws *websocket.Conn, f frame) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if !f.partial {
		return ws.Write(ctx, websocket.MessageText, f.data)
	}
	w, err := ws.Writer(ctx, websocket.MessageText)
	if err != nil {
		return err
	}
	_, err = w.Write(f.data)
	return err
}

func tick() []byte {
	b, _ := json.Marshal(tickMessage{Tick: time.Now().Unix(), Status: "connected", Message: "Waiting for data"})
	return b
}

// readClient handles the client's messages until it leaves.
func (s *Server) readClient(ctx context.Context, ws *websocket.Conn, c *conn) {
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var m clientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			s.reply(c, statusMessage{Status: "failure", Message: "Malformed message: " + err.Error()})
			continue
		}
		s.mu.Lock()
		ev := Event{At: time.Now(), Conn: c.n, Action: m.Action, Hash: m.Hash}
		var st statusMessage
		switch m.Action {
		case "subscribe":
			st = s.subscribeLocked(c, m.Hash)
		case "unsubscribe":
			if c.subs[m.Hash] {
				delete(c.subs, m.Hash)
				st = statusMessage{Status: "success", Message: "Unsubscribed", Hash: m.Hash}
			} else {
				st = statusMessage{Status: "failure", Message: "Not subscribed to this stream", Hash: m.Hash}
			}
		default:
			st = statusMessage{Status: "failure", Message: "Unknown action " + m.Action, Hash: m.Hash}
		}
		ev.OK = st.Status == "success"
		s.events = append(s.events, ev)
		s.mu.Unlock()
		s.reply(c, st)
	}
}

func (s *Server) subscribeLocked(c *conn, hash string) statusMessage {
	switch {
	case s.filters[hash] == nil:
		return statusMessage{Status: "failure", Message: "Stream not found", Hash: hash}
	case !c.subs[hash] && len(c.subs) >= MaxSubscriptions:
		return statusMessage{Status: "failure", Message: "Too many streams on this connection", Hash: hash}
	}
	c.subs[hash] = true
	return statusMessage{Status: "success", Message: "Subscribed", Hash: hash}
}

func (s *Server) reply(c *conn, st statusMessage) {
	b, _ := json.Marshal(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[c] {
		s.sendLocked(c, frame{data: b})
	}
}
