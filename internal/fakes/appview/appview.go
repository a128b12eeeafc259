// Package appview is a local Bluesky AppView for tests and the demo: it
// answers app.bsky.actor.getProfiles as the real one does, so a client
// written against it works against https://public.api.bsky.app.
//
// As served here (from the lexicon and the AppView's XRPC server in
// bluesky-social/atproto):
//
//	GET /xrpc/app.bsky.actor.getProfiles?actors=did:plc:…&actors=alice.bsky.social
//
// answers 200 {"profiles": [{"did", "handle", "displayName", …}, …]} in the
// order asked, each actor (a DID or a handle) at most once. An actor the
// AppView does not know — never seen, deleted, taken down — is simply
// absent: no error, no placeholder. An account whose handle does not
// verify shows "handle.invalid". The lexicon allows 1 to 25 actors: more,
// none, or a malformed one is refused with 400 and the XRPC error body the
// AppView's lexicon validation produces, {"error": "InvalidRequest",
// "message": "Error: Params/actors must not have more than 25 elements"}.
//
// The server counts calls and the actors asked for, so a benchmark can
// report calls per new DID.
package appview

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

const (
	// ProfilesPath is getProfiles' XRPC path.
	ProfilesPath = "/xrpc/app.bsky.actor.getProfiles"
	// MaxActors is the lexicon's maxLength of actors.
	MaxActors = 25
	// InvalidHandle is what the AppView shows for an account whose handle
	// does not verify.
	InvalidHandle = "handle.invalid"
)

// Profile is one account the AppView knows.
type Profile struct {
	DID         string `json:"did"`
	Handle      string `json:"handle"`
	DisplayName string `json:"displayName,omitempty"`
}

// Server is the local AppView. It is safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	url      string
	byDID    map[string]Profile
	byHandle map[string]string // lower-cased handle → DID
	calls    int
	didCalls int // calls asking for at least one DID
	actors   int
	refused  int
	fail     int // calls still to answer with 502
}

// New returns an AppView that knows no account.
func New() *Server {
	return &Server{byDID: map[string]Profile{}, byHandle: map[string]string{}}
}

// Start runs a new AppView on a free loopback port until the test ends.
func Start(tb fakehttp.TB) *Server {
	tb.Helper()
	s := New()
	base := fakehttp.Serve(tb, s.Handler(), nil)
	s.mu.Lock()
	s.url = base
	s.mu.Unlock()
	return s
}

// URL is the AppView's base URL (give it to --bluesky-appview-url).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Handler serves getProfiles and GET /healthz.
func (s *Server) Handler() http.Handler {
	mux := fakehttp.NewMux()
	mux.HandleFunc("GET "+ProfilesPath, s.getProfiles)
	return mux
}

// Set makes the AppView describe an account with a handle (InvalidHandle
// for one whose handle does not verify), replacing what it knew of it.
func (s *Server) Set(did, handle string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byDID[did]; ok {
		delete(s.byHandle, strings.ToLower(old.Handle))
	}
	s.byDID[did] = Profile{DID: did, Handle: handle}
	if handle != InvalidHandle {
		s.byHandle[strings.ToLower(handle)] = did
	}
}

// Delete forgets an account, as the AppView does for a deleted or taken
// down one.
func (s *Server) Delete(did string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byDID[did]; ok {
		delete(s.byHandle, strings.ToLower(old.Handle))
		delete(s.byDID, did)
	}
}

// FailNext makes the next n calls fail with 502, as a proxy in front of an
// overloaded AppView does.
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	s.fail = n
	s.mu.Unlock()
}

// Calls is how many getProfiles calls were answered (refused ones too).
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// DIDCalls is how many calls asked for at least one DID (the others asked
// for handles only).
func (s *Server) DIDCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.didCalls
}

// Actors is how many actors the calls asked for in all.
func (s *Server) Actors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actors
}

// Refused is how many calls were refused with 400.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// xrpcError writes an XRPC error answer.
func xrpcError(w http.ResponseWriter, status int, name, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": name, "message": message})
}

func (s *Server) getProfiles(w http.ResponseWriter, r *http.Request) {
	actors := r.URL.Query()["actors"]
	s.mu.Lock()
	s.calls++
	s.actors += len(actors)
	for _, a := range actors {
		if strings.HasPrefix(a, "did:") {
			s.didCalls++
			break
		}
	}
	if s.fail > 0 {
		s.fail--
		s.mu.Unlock()
		http.Error(w, "error code: 502", http.StatusBadGateway)
		return
	}
	msg := ""
	switch {
	case len(actors) == 0:
		msg = `Error: Params must have the property "actors"`
	case len(actors) > MaxActors:
		msg = "Error: Params/actors must not have more than 25 elements"
	default:
		for i, a := range actors {
			if !strings.HasPrefix(a, "did:") && !strings.Contains(a, ".") {
				msg = "Error: Params/actors/" + strconv.Itoa(i) + " must be a valid did or a handle"
				break
			}
		}
	}
	if msg != "" {
		s.refused++
		s.mu.Unlock()
		xrpcError(w, http.StatusBadRequest, "InvalidRequest", msg)
		return
	}
	out := struct {
		Profiles []Profile `json:"profiles"`
	}{Profiles: []Profile{}}
	seen := map[string]bool{}
	for _, a := range actors {
		did := a
		if !strings.HasPrefix(a, "did:") {
			did = s.byHandle[strings.ToLower(a)]
		}
		p, ok := s.byDID[did]
		if !ok || seen[did] {
			continue
		}
		seen[did] = true
		out.Profiles = append(out.Profiles, p)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(out)
}
