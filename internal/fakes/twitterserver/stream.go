package twitterserver

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// handleFilter serves statuses/filter.json: after the OAuth check and any
// injected failure, it streams every matching tweet as one JSON object per
// "\r\n"-terminated line, with a blank line every KeepAlive while idle.
// With delimited=length each message is preceded by its length in bytes.
func (s *Server) handleFilter(w http.ResponseWriter, r *http.Request) {
	authErr := s.checkAuth(r)
	track := splitTrack(r.Form.Get("track"))

	s.mu.Lock()
	attempt := Connection{At: time.Now(), Track: track, Method: r.Method}
	status := http.StatusOK
	switch {
	case authErr != nil:
		status = http.StatusUnauthorized
		s.unauthorized++
	case s.streamFail.left > 0:
		status = s.streamFail.status
		s.streamFail.left--
	}
	hang := s.hang && status == http.StatusOK
	attempt.Status = status
	s.connLog = append(s.connLog, attempt)
	s.mu.Unlock()

	switch {
	case authErr != nil:
		s.opts.Logger.Debug("stream refused", "err", authErr)
		writeError(w, status, 32, "Could not authenticate you.")
		return
	case status != http.StatusOK:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "%d %s\n", status, statusText(status))
		return
	case hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	terms, status, msg := parseTrack(track)
	if status != http.StatusOK {
		s.mu.Lock()
		s.connLog[len(s.connLog)-1].Status = status
		s.mu.Unlock()
		http.Error(w, msg, status)
		return
	}

	c := &streamConn{
		terms:     terms,
		delimited: r.Form.Get("delimited") == "length",
		out:       make(chan frame, s.opts.ConnBuffer),
		cut:       make(chan struct{}),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	s.opts.Logger.Debug("stream opened", "track_terms", len(terms))

	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flush()
	keepAlive := time.NewTicker(s.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.cut:
			// Abort the connection without ending the chunked body, as
			// a dropped TCP connection looks to the client.
			panic(http.ErrAbortHandler)
		case f := <-c.out:
			if _, err := w.Write(f.data); err != nil {
				return
			}
			flush()
			if f.cut {
				panic(http.ErrAbortHandler)
			}
		case <-keepAlive.C:
			s.mu.Lock()
			stalled := s.stalled
			s.mu.Unlock()
			if stalled {
				continue
			}
			if _, err := w.Write([]byte("\r\n")); err != nil {
				return
			}
			flush()
		}
	}
}

// splitTrack splits a track parameter into its comma-separated terms.
func splitTrack(raw string) []string {
	var out []string
	for _, t := range strings.Split(raw, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// parseTrack validates track terms as Twitter does and splits each into its
// lower-cased words. It returns the HTTP status to refuse them with.
func parseTrack(track []string) ([][]string, int, string) {
	if len(track) == 0 {
		return nil, http.StatusNotAcceptable, "No filter parameters found. Expect at least one parameter: follow track locations\n"
	}
	if len(track) > MaxTrackTerms {
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("Parameter track has %d terms, at most %d allowed\n", len(track), MaxTrackTerms)
	}
	terms := make([][]string, 0, len(track))
	for _, t := range track {
		if len(t) > MaxTrackBytes || !utf8.ValidString(t) {
			return nil, http.StatusNotAcceptable, fmt.Sprintf("Track term %q is longer than %d bytes or not UTF-8\n", t, MaxTrackBytes)
		}
		terms = append(terms, strings.Fields(strings.ToLower(t)))
	}
	return terms, http.StatusOK, ""
}

// matchAny reports whether lower-cased text contains any term: every word
// of the term, anywhere, each as a whole word (Twitter's track semantics:
// a space is AND, a comma OR).
func matchAny(text string, terms [][]string) bool {
	for _, words := range terms {
		if matchAll(text, words) {
			return true
		}
	}
	return false
}

func matchAll(text string, words []string) bool {
	if len(words) == 0 {
		return false
	}
	for _, w := range words {
		if !textmatch.ContainsPhrase(text, w) {
			return false
		}
	}
	return true
}
