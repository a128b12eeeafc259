package xv2

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// streamConn is the one open stream.
type streamConn struct {
	users   bool // the client asked for expansions=author_id
	metrics bool // the client asked for tweet.fields=…,public_metrics
	out     chan frame
	cut     chan struct{}
	cutOnce sync.Once
}

// frame is one write to the stream; cut drops the connection after it.
type frame struct {
	data []byte
	cut  bool
}

func (c *streamConn) close() { c.cutOnce.Do(func() { close(c.cut) }) }

// send queues f; a reader too slow to keep the queue short is dropped.
func (c *streamConn) send(f frame) {
	select {
	case c.out <- f:
	default:
		c.close()
	}
}

func (s *Server) logConnection(r *http.Request, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connLog = append(s.connLog, Connection{At: time.Now(), Status: status, Query: r.URL.RawQuery})
}

// handleStream serves GET /2/tweets/search/stream: after any injected
// failure, and unless the app's one connection is taken, it streams each
// matching post as a "\r\n"-terminated JSON line, with "\r\n" every
// KeepAlive while idle.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	status := http.StatusOK
	switch {
	case s.closed:
		status = http.StatusServiceUnavailable
	case len(s.streamFail) > 0:
		status = s.streamFail[0]
		s.streamFail = s.streamFail[1:]
	case s.held || s.conn != nil:
		status = http.StatusTooManyRequests
		s.connLog = append(s.connLog, Connection{At: time.Now(), Status: status, Query: r.URL.RawQuery})
		s.mu.Unlock()
		writeProblem(w, status, problem{
			Title:           "ConnectionException",
			Detail:          "This stream is currently at the maximum allowed connection limit.",
			ConnectionIssue: "TooManyConnections",
			Type:            "https://api.twitter.com/2/problems/streaming-connection",
		})
		return
	}
	s.connLog = append(s.connLog, Connection{At: time.Now(), Status: status, Query: r.URL.RawQuery})
	if status != http.StatusOK {
		s.mu.Unlock()
		writeProblem(w, status, statusProblem(status))
		return
	}
	c := &streamConn{
		users:   slices.Contains(strings.Split(r.URL.Query().Get("expansions"), ","), "author_id"),
		metrics: slices.Contains(strings.Split(r.URL.Query().Get("tweet.fields"), ","), "public_metrics"),
		out:     make(chan frame, s.opts.ConnBuffer),
		cut:     make(chan struct{}),
	}
	s.conn = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.conn == c {
			s.conn = nil
		}
		s.mu.Unlock()
	}()

	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	keepAlive := time.NewTicker(s.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		// A stalled stream holds its queue and sends nothing.
		out := c.out
		if s.isStalled() {
			out = nil
		}
		select {
		case <-r.Context().Done():
			return
		case <-c.cut:
			return
		case <-s.done:
			return
		case <-keepAlive.C:
			if !s.isStalled() && !write([]byte("\r\n")) {
				return
			}
		case f := <-out:
			if !write(f.data) || f.cut {
				return
			}
		}
	}
}

func (s *Server) isStalled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// Wire shapes of a stream message.
type (
	tweetJSON struct {
		ID               string    `json:"id"`
		Text             string    `json:"text"`
		AuthorID         string    `json:"author_id"`
		CreatedAt        string    `json:"created_at"`
		Lang             string    `json:"lang,omitempty"`
		ConversationID   string    `json:"conversation_id"`
		ReferencedTweets []refJSON `json:"referenced_tweets,omitempty"`
		EditHistory      []string  `json:"edit_history_tweet_ids"`
		NoteTweet        *noteJSON `json:"note_tweet,omitempty"`
		// PublicMetrics are sent only when tweet.fields asks for them, as
		// X does.
		PublicMetrics *Metrics `json:"public_metrics,omitempty"`
	}
	refJSON struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	noteJSON struct {
		Text string `json:"text"`
	}
	userJSON struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Username string `json:"username"`
	}
	matchJSON struct {
		ID  string `json:"id"`
		Tag string `json:"tag,omitempty"`
	}
	messageJSON struct {
		Data     tweetJSON `json:"data"`
		Includes *struct {
			Users []userJSON `json:"users"`
		} `json:"includes,omitempty"`
		MatchingRules []matchJSON `json:"matching_rules"`
	}
)

// shortTextRunes is the length past which X moves a post's whole text to
// note_tweet.text and truncates text.
const shortTextRunes = 280

// streamMessage is a post as the stream delivers it: with its author when
// users (expansions=author_id) and its public_metrics when metrics.
func streamMessage(p Post, matched []Rule, users, metrics bool) messageJSON {
	t := tweetJSON{
		ID:             p.ID,
		Text:           p.Text,
		AuthorID:       p.AuthorID,
		CreatedAt:      p.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		Lang:           p.Lang,
		ConversationID: p.ConversationID,
		EditHistory:    []string{p.ID},
	}
	if rs := []rune(p.Text); len(rs) > shortTextRunes {
		t.Text = string(rs[:shortTextRunes-1]) + "…"
		t.NoteTweet = &noteJSON{Text: p.Text}
	}
	if p.ReplyTo != "" {
		t.ReferencedTweets = []refJSON{{Type: "replied_to", ID: p.ReplyTo}}
	}
	if metrics {
		t.PublicMetrics = &p.Metrics
	}
	m := messageJSON{Data: t}
	if users {
		m.Includes = &struct {
			Users []userJSON `json:"users"`
		}{Users: []userJSON{{ID: p.AuthorID, Name: p.Username, Username: p.Username}}}
	}
	for _, r := range matched {
		m.MatchingRules = append(m.MatchingRules, matchJSON{ID: r.ID, Tag: r.Tag})
	}
	return m
}
