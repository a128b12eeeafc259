package feedserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
)

// RecordedPrefix is where recorded documents are served: GET
// /recorded/{name}.
const RecordedPrefix = "/recorded/"

// recordedName restricts recorded documents' names to something safe in a
// URL path; unlike feed names they may carry a file extension.
var recordedName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Recorded is a feed document as a real publisher served it: the body
// byte for byte, whatever its character set, and the Content-Type header
// exactly as given.
type Recorded struct {
	Body []byte
	// ContentType is the Content-Type header sent with Body, as it is:
	// with a charset, without one, or one that contradicts the
	// document's own XML declaration. Empty sends no Content-Type at all
	// (the server does not sniff one).
	ContentType string
}

// recorded is a recorded document being served, with its requests.
type recorded struct {
	doc      Recorded
	etag     string
	requests int
}

// Record serves doc at RecordedPrefix+name (replacing what was served
// there) and returns that path. It panics on a name that is not 1 to 128
// letters, digits, '.', '_' or '-'.
func (s *Server) Record(name string, doc Recorded) string {
	if !recordedName.MatchString(name) {
		panic(fmt.Sprintf("feedserver: invalid recorded document name %q: want 1 to 128 letters, digits, ., _ or -", name))
	}
	sum := sha256.Sum256(append([]byte(doc.ContentType+"\n"), doc.Body...))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recorded == nil {
		s.recorded = map[string]*recorded{}
	}
	s.recorded[name] = &recorded{doc: doc, etag: `"r-` + hex.EncodeToString(sum[:8]) + `"`}
	return RecordedPrefix + name
}

// RecordedRequests is how many requests the recorded document name has
// received, conditional ones answered with 304 included.
func (s *Server) RecordedRequests(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recorded[name]; ok {
		return r.requests
	}
	return 0
}

// handleRecorded serves a recorded document: its bytes unchanged, its
// Content-Type exactly as recorded (none when recorded without one), an
// ETag, and 304 to a request that sends the ETag back unless the server
// ignores conditional requests.
func (s *Server) handleRecorded(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	rec, ok := s.recorded[name]
	var doc Recorded
	var etag string
	if ok {
		rec.requests++
		doc, etag = rec.doc, rec.etag
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if doc.ContentType == "" {
		// A nil value keeps net/http from sniffing a Content-Type.
		w.Header()["Content-Type"] = nil
	} else {
		w.Header().Set("Content-Type", doc.ContentType)
	}
	w.Header().Set("ETag", etag)
	if !s.opts.IgnoreConditional && notModified(r, etag, s.start) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if _, err := w.Write(doc.Body); err != nil {
		s.opts.Logger.Debug("recorded document write failed", "name", name, "err", err)
	}
}
