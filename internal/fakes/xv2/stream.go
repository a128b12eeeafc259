package xv2

import (
	"net/http"
	"sync"
	"time"
)

// streamConn is the one open stream.
type streamConn struct {
	fields  fields // what the client asked for
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

// handleStream serves GET /2/tweets/search/stream: within the app's
// connection rate limit, after any injected failure, and unless the app's
// one connection is taken (or still held by a client that went away), it
// streams each matching post as a "\r\n"-terminated JSON line, with "\r\n"
// every KeepAlive while idle.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := time.Now()
	limit, remaining, reset, allowed := s.streamRate.take(now)
	setRateHeaders(w, limit, remaining, reset)
	status := http.StatusOK
	switch {
	case s.closed:
		status = http.StatusServiceUnavailable
	case !allowed:
		status = http.StatusTooManyRequests
	case len(s.streamFail) > 0:
		status = s.streamFail[0]
		s.streamFail = s.streamFail[1:]
	case s.held || s.conn != nil || now.Before(s.heldUntil):
		status = http.StatusTooManyRequests
		s.connLog = append(s.connLog, Connection{At: time.Now(), Status: status, Query: r.URL.RawQuery})
		s.mu.Unlock()
		writeProblem(w, status, problem{
			Title:           "ConnectionException",
			Detail:          "This stream is currently at the maximum allowed connection limit.",
			ConnectionIssue: "TooManyConnections",
			Type:            "https://api.x.com/2/problems/streaming-connection",
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
		fields: parseFields(r.URL.Query()),
		out:    make(chan frame, s.opts.ConnBuffer),
		cut:    make(chan struct{}),
	}
	s.conn = c
	s.mu.Unlock()
	// gone is set when the client went away rather than the server
	// ending the stream: X keeps counting such a connection for a while.
	gone := false
	defer func() {
		s.mu.Lock()
		if s.conn == c {
			s.conn = nil
			if gone && s.opts.SlotHold > 0 {
				s.heldUntil = time.Now().Add(s.opts.SlotHold)
			}
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
			gone = true
			return
		case <-c.cut:
			return
		case <-s.done:
			return
		case <-keepAlive.C:
			if !s.isStalled() && !write([]byte("\r\n")) {
				gone = true
				return
			}
		case f := <-out:
			if !write(f.data) {
				gone = true
				return
			}
			if f.cut {
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
