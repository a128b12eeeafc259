package mastodon

import (
	"context"
	"encoding/json"
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
	authorized := s.authorized(r)
	s.mu.Lock()
	cut := time.Now().Before(s.cutUntil)
	if !authorized {
		s.rejected++
	}
	s.mu.Unlock()
	switch {
	case !authorized:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Invalid access token"})
		return
	case cut:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "Service Unavailable"})
		return
	}
	var protocols []string
	if p := strings.TrimSpace(r.Header.Get("Sec-WebSocket-Protocol")); p != "" {
		protocols = []string{p} // the token, echoed as Mastodon does
	}
	c := &conn{cut: make(chan struct{}), subs: map[string]bool{}}
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

// readClient handles the client's messages until it leaves.
func (s *Server) readClient(ctx context.Context, ws *websocket.Conn, c *conn) {
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var m struct {
			Type   string `json:"type"`
			Stream string `json:"stream"`
			Tag    string `json:"tag"`
		}
		s.mu.Lock()
		if err := json.Unmarshal(data, &m); err != nil {
			s.replyErrorLocked(c, "Invalid JSON", http.StatusBadRequest)
		} else {
			s.subscribeLocked(c, m.Type, m.Stream, m.Tag)
		}
		s.mu.Unlock()
	}
}

// subscribeLocked applies one subscribe or unsubscribe message, answering
// an invalid one with an error event as Mastodon does.
func (s *Server) subscribeLocked(c *conn, typ, stream, tag string) {
	ev := Subscription{At: time.Now(), Conn: c.n, Type: typ, Stream: stream}
	defer func() { s.subEvents = append(s.subEvents, ev) }()
	if typ != "subscribe" && typ != "unsubscribe" {
		s.replyErrorLocked(c, "Unknown message type", http.StatusBadRequest)
		return
	}
	switch stream {
	case "public":
	case "hashtag":
		if strings.TrimSpace(tag) == "" {
			s.replyErrorLocked(c, "No tag for stream provided", http.StatusBadRequest)
			return
		}
		stream = "hashtag:" + strings.ToLower(strings.TrimSpace(tag))
	default:
		s.replyErrorLocked(c, "Unknown stream type", http.StatusBadRequest)
		return
	}
	ev.Stream, ev.OK = stream, true
	if typ == "subscribe" {
		c.subs[stream] = true
	} else {
		delete(c.subs, stream)
	}
}

func (s *Server) replyErrorLocked(c *conn, msg string, status int) {
	b, _ := json.Marshal(map[string]any{"error": msg, "status": status})
	if s.conns[c] {
		s.sendLocked(c, b)
	}
}

// Wire types.
type (
	eventFrame struct {
		Stream  []string `json:"stream"`
		Event   string   `json:"event"`
		Payload string   `json:"payload,omitempty"`
	}
	accountJSON struct {
		ID          string `json:"id"`
		Username    string `json:"username"`
		Acct        string `json:"acct"`
		DisplayName string `json:"display_name"`
		URL         string `json:"url"`
	}
	tagJSON struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	}
	statusJSON struct {
		ID                 string      `json:"id"`
		CreatedAt          string      `json:"created_at"`
		InReplyToID        *string     `json:"in_reply_to_id"`
		InReplyToAccountID *string     `json:"in_reply_to_account_id"`
		Sensitive          bool        `json:"sensitive"`
		SpoilerText        string      `json:"spoiler_text"`
		Visibility         string      `json:"visibility"`
		Language           *string     `json:"language"`
		URI                string      `json:"uri"`
		URL                *string     `json:"url"`
		RepliesCount       int         `json:"replies_count"`
		ReblogsCount       int         `json:"reblogs_count"`
		FavouritesCount    int         `json:"favourites_count"`
		EditedAt           *string     `json:"edited_at"`
		Content            string      `json:"content"`
		Reblog             *statusJSON `json:"reblog"`
		Account            accountJSON `json:"account"`
		MediaAttachments   []any       `json:"media_attachments"`
		Mentions           []any       `json:"mentions"`
		Tags               []tagJSON   `json:"tags"`
		Emojis             []any       `json:"emojis"`
		Card               *struct{}   `json:"card"`
		Poll               *struct{}   `json:"poll"`
	}
)

// encodeStatus is st as a Mastodon Status entity, JSON-encoded: the
// string an event's payload carries.
func encodeStatus(st Status, domain string) string {
	b, _ := json.Marshal(statusEntity(st, domain))
	return string(b)
}

func statusEntity(st Status, domain string) *statusJSON {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	user, accDomain, remote := strings.Cut(st.Acct, "@")
	if !remote {
		accDomain = domain
	}
	out := &statusJSON{
		ID:               st.ID,
		CreatedAt:        st.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		InReplyToID:      opt(st.InReplyToID),
		SpoilerText:      st.SpoilerText,
		Sensitive:        st.SpoilerText != "",
		Visibility:       "public",
		Language:         opt(st.Language),
		URI:              st.URI,
		URL:              opt(st.URL),
		Content:          st.Content,
		ReblogsCount:     st.Reblogs,
		FavouritesCount:  st.Favourites,
		Account:          accountJSON{ID: "1", Username: user, Acct: st.Acct, DisplayName: user, URL: "https://" + accDomain + "/@" + user},
		MediaAttachments: []any{},
		Mentions:         []any{},
		Tags:             []tagJSON{},
		Emojis:           []any{},
	}
	if st.InReplyToID != "" {
		out.InReplyToAccountID = opt("1")
	}
	if !st.EditedAt.IsZero() {
		out.EditedAt = opt(st.EditedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	for _, t := range st.Tags {
		out.Tags = append(out.Tags, tagJSON{Name: strings.ToLower(t), URL: "https://" + domain + "/tags/" + strings.ToLower(t)})
	}
	if st.Reblog != nil {
		out.Reblog = statusEntity(*st.Reblog, domain)
		out.Content = ""
	}
	return out
}
