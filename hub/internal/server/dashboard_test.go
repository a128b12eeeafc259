package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/hub/internal/cluster"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

const testAdminToken = "admin-token-for-tests"

// testServer is a hub's HTTP surface over a fresh SQLite database, with a
// control loop that is not running: tests drive reloads themselves.
type testServer struct {
	*Server
	url string
}

func newTestServer(t *testing.T, scalingTarget int) *testServer {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	hub, err := cluster.New(cluster.Config{Store: store, NodeToken: "node-token", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Hub: hub, Store: store, AdminToken: testAdminToken, NodeToken: "node-token", Logger: logger, ScalingTarget: scalingTarget}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &testServer{Server: s, url: srv.URL}
}

// get sends a GET with the given bearer token ("" for none).
func (ts *testServer) get(t *testing.T, path, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// getJSON sends an authorised GET and decodes a 200 answer into v.
func (ts *testServer) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, body := ts.get(t, path, testAdminToken)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

func TestDashboard_Routes(t *testing.T) {
	ts := newTestServer(t, 0)
	cases := []struct {
		name, path, token string
		status            int
		contentType       string
		contains          string
	}{
		{"page needs no token", "/", "", http.StatusOK, "text/html; charset=utf-8", `<script src="/assets/app.js"`},
		{"script", "/assets/app.js", "", http.StatusOK, "text/javascript; charset=utf-8", "REFRESH_MS"},
		{"trends script", "/assets/trends.js", "", http.StatusOK, "text/javascript; charset=utf-8", "TERMS_SHOWN"},
		{"style", "/assets/style.css", "", http.StatusOK, "text/css; charset=utf-8", ".badge"},
		{"icon", "/assets/favicon.svg", "", http.StatusOK, "image/svg+xml", "<svg"},
		{"unknown asset", "/assets/nope.js", "", http.StatusNotFound, "application/json", "no dashboard asset"},
		{"index is not an asset", "/assets/index.html", "", http.StatusNotFound, "application/json", ""},
		{"no directory listing", "/assets/", "", http.StatusNotFound, "application/json", ""},
		{"escape attempt", "/assets/..%2fdashboard.go", "", http.StatusNotFound, "application/json", ""},
		{"unknown page", "/nope", "", http.StatusNotFound, "", ""},
		{"data still needs the token", "/v1/crawlers", "", http.StatusUnauthorized, "application/json", "missing bearer token"},
		{"history needs the token", "/v1/crawlers/1/history", "", http.StatusUnauthorized, "application/json", ""},
		{"scaling needs the token", "/v1/scaling", "", http.StatusUnauthorized, "application/json", ""},
		{"a wrong token is refused", "/v1/nodes", "not-the-token", http.StatusUnauthorized, "application/json", "invalid bearer token"},
		{"data with the token", "/v1/nodes", testAdminToken, http.StatusOK, "application/json", "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := ts.get(t, tc.path, tc.token)
			if resp.StatusCode != tc.status {
				t.Fatalf("GET %s: status %d, want %d (%s)", tc.path, resp.StatusCode, tc.status, body)
			}
			if tc.contentType != "" && resp.Header.Get("Content-Type") != tc.contentType {
				t.Fatalf("GET %s: content type %q, want %q", tc.path, resp.Header.Get("Content-Type"), tc.contentType)
			}
			if !strings.Contains(body, tc.contains) {
				t.Fatalf("GET %s: body lacks %q:\n%.300s", tc.path, tc.contains, body)
			}
		})
	}
}

func TestDashboard_PageHeadersAndRevalidation(t *testing.T) {
	ts := newTestServer(t, 0)
	resp, body := ts.get(t, "/", "")
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "default-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Fatalf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("X-Content-Type-Options %q", resp.Header.Get("X-Content-Type-Options"))
	}
	// The page holds no data and no secret, and no inline script.
	if strings.Contains(body, testAdminToken) || strings.Contains(body, "<script>") {
		t.Fatalf("page body carries data or an inline script:\n%s", body)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag on the page")
	}
	req, _ := http.NewRequest(http.MethodGet, ts.url+"/assets/app.js", nil)
	req.Header.Set("If-None-Match", dashboardAssets["app.js"].etag)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidating app.js: status %d, want 304", r2.StatusCode)
	}
}

// TestDashboard_ScriptInsertsTextOnly guards the page against hostile
// comment text: the script never assigns markup.
func TestDashboard_ScriptInsertsTextOnly(t *testing.T) {
	scripts := 0
	for name, a := range dashboardAssets {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		scripts++
		for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(a.body), banned) {
				t.Errorf("%s uses %s", name, banned)
			}
		}
	}
	if scripts < 3 {
		t.Fatalf("%d scripts checked, want app.js, manage.js and trends.js at least", scripts)
	}
}
