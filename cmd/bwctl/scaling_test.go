package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestRun_Scaling(t *testing.T) {
	want := api.Scaling{Nodes: 2, Subscribers: 1234, TargetSubscribersPerNode: 500, DesiredNodes: 3}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathScaling, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			writeErr(w, http.StatusUnauthorized, "missing bearer token")
			return
		}
		writeJSON(w, http.StatusOK, want)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	out := bwctl(t, srv.URL, "scaling").ok(t).stdout
	for _, re := range []string{`(?m)^nodes:\s+2$`, `(?m)^subscribers:\s+1234$`,
		`(?m)^target_subscribers_per_node:\s+500$`, `(?m)^desired_nodes:\s+3$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("scaling lacks %s:\n%s", re, out)
		}
	}
	if got := decodeJSON[api.Scaling](t, bwctl(t, srv.URL, "scaling", "--json").ok(t).stdout); got != want {
		t.Fatalf("scaling --json: %+v, want %+v", got, want)
	}
	checkFailure(t, bwctlEnv(t, map[string]string{"BW_HUB_URL": srv.URL}, "scaling"), 1, `no admin token given`)
	checkFailure(t, bwctl(t, srv.URL, "scaling", "extra"), 2, `^usage: bwctl scaling$`)
}
