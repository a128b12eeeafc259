package twitter

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

const token = "twitter-driver-test-token"

// TestRecheck_JobURLsGoThroughTheGuard checks that the upload and download
// URLs of a compliance job, which come from X's answer and not from the
// operator, are held to --allow-targets like every crawl target: a job
// document pointing its upload at an address the guard forbids gets no
// post id, and the check fails saying why.
func TestRecheck_JobURLsGoThroughTheGuard(t *testing.T) {
	srv, apiURL := xv2.Start(t, xv2.Options{BearerToken: token})
	// Another loopback address than the API's, which the guard allows
	// alone: a stand-in for a private address a forged job names.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.2: %v", err)
	}
	var leaked atomic.Int64
	capture := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		leaked.Add(int64(len(b)))
		w.WriteHeader(http.StatusOK)
	}))
	capture.Listener = ln
	capture.Start()
	t.Cleanup(capture.Close)
	srv.SetStorageURL(capture.URL)

	allow, err := netguard.ParseAllow([]string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Settings{}
	s.SetDefaults()
	s.APIURL, s.BearerToken = apiURL, token
	k, err := s.Build(source.Deps{Guard: netguard.Options{Allow: allow}, Logger: testkit.Logger(t, "twitter")})
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := k.(source.Rechecker)
	if !ok {
		t.Fatalf("the v2 kind %T has no compliance check", k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = rc.Recheck(ctx, []string{IDPrefix + "1460323737035677698", IDPrefix + "1460323743083859968"})
	if n := leaked.Load(); n > 0 {
		t.Fatalf("%d bytes of stored post ids reached %s, which --allow-targets forbids", n, capture.URL)
	}
	if err == nil || !strings.Contains(err.Error(), "127.0.0.2") {
		t.Fatalf("Recheck = %v, want an error naming the refused address", err)
	}
}

// TestInfo_ScopeFollowsTheCredentials checks the declaration: one X
// connection serves the fleet over v2, each spawn has its own over v1.1.
func TestInfo_ScopeFollowsTheCredentials(t *testing.T) {
	v2 := &Settings{BearerToken: "b"}
	if info := v2.Info(); info.Scope != "fleet" || info.Recheck == 0 || info.IDPrefix != "tw:" {
		t.Errorf("v2 declaration %+v", info)
	}
	v1 := &Settings{ConsumerKey: "a", ConsumerSecret: "b", AccessToken: "c", AccessSecret: "d"}
	if info := v1.Info(); info.Scope != "node" || info.Recheck != 0 {
		t.Errorf("v1.1 declaration %+v", info)
	}
	if _, err := (&Settings{BearerToken: "b", ConsumerKey: "a"}).Build(source.Deps{}); err == nil {
		t.Error("both kinds of credentials were accepted")
	}
}
