// Package fakehub is a hub that answers a spawn's registration and nothing
// else: tests that drive a spawn node directly (upserts, polls) use it so
// the node attaches without a real hub behind it.
package fakehub

import (
	"encoding/json"
	"net/http"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// What every registration is answered with.
const (
	Epoch  = "e1"
	NodeID = "n1"
)

// Start runs the fake hub until the test ends and returns its base URL.
// Every path but registration answers 404.
func Start(tb fakehttp.TB) string {
	tb.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.PathRegister, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.RegisterResponse{Epoch: Epoch, NodeID: NodeID})
	})
	return fakehttp.Serve(tb, mux, nil)
}
