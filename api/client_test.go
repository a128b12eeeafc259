package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request the fake hub saw.
type recorded struct {
	method, path, query, auth, contentType string
	body                                   map[string]any
}

// fakeHub answers every request with the canned (status, body) for
// "METHOD PATH" and records what it received.
type fakeHub struct {
	mu      sync.Mutex
	answers map[string]struct {
		status int
		body   string
	}
	got []recorded
}

func newFakeHub(t *testing.T) (*fakeHub, *httptest.Server) {
	t.Helper()
	f := &fakeHub{answers: map[string]struct {
		status int
		body   string
	}{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recorded{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
			auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type")}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &rec.body); err != nil {
				t.Errorf("request body %q is not a JSON object: %v", b, err)
			}
		}
		f.mu.Lock()
		f.got = append(f.got, rec)
		a, ok := f.answers[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no such route"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeHub) answer(route string, status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[route] = struct {
		status int
		body   string
	}{status, body}
}

func (f *fakeHub) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		t.Fatal("no request reached the fake hub")
	}
	return f.got[len(f.got)-1]
}

func ptr[T any](v T) *T { return &v }

func TestClient_Routes(t *testing.T) {
	f, srv := newFakeHub(t)
	c := NewClient(srv.URL+"/", "s3cret", nil)
	ctx := context.Background()
	user := `{"id":3,"name":"acme","comment_limit":10,"usage":1,"state":"active"}`
	crawler := `{"id":7,"user_id":3,"source":"rss","query":["https://a.example/"],"keywords":[],"state":"running","node":"n1"}`
	f.answer("POST /v1/users", 201, user)
	f.answer("GET /v1/users", 200, "["+user+"]")
	f.answer("GET /v1/users/3", 200, user)
	f.answer("PATCH /v1/users/3", 200, user)
	f.answer("POST /v1/crawlers", 201, crawler)
	f.answer("GET /v1/crawlers", 200, "["+crawler+"]")
	f.answer("GET /v1/crawlers/7", 200, crawler)
	f.answer("PATCH /v1/crawlers/7", 200, crawler)
	f.answer("DELETE /v1/crawlers/7", 204, "")
	f.answer("GET /v1/nodes", 200, `[{"id":"n1","url":"http://127.0.0.1:9","state":"attached","subscribers":2}]`)
	f.answer("POST /v1/reload", 200, `{"kind":"hard","assigned":4,"moved":1}`)
	f.answer("GET /v1/crawlers/7/comments", 200, `[{"id":"c1","crawler_id":7,"source":"rss","text":"hi"}]`)
	f.answer("GET /v1/health", 200, `{"epoch":"e1","nodes":[{"id":"n1","subscribers":2}],"crawlers":{"total":1,"assigned":1,"by_state":{"running":1}}}`)

	cases := []struct {
		name     string
		call     func() (any, error)
		method   string
		path     string
		query    string
		wantBody map[string]any
		check    func(t *testing.T, v any)
	}{
		{"create user", func() (any, error) { return c.CreateUser(ctx, UserCreate{Name: "acme", CommentLimit: 10}) },
			"POST", "/v1/users", "", map[string]any{"name": "acme", "comment_limit": 10.0},
			func(t *testing.T, v any) {
				if u := v.(User); u.ID != 3 || u.Name != "acme" || u.CommentLimit != 10 {
					t.Fatalf("user %+v", u)
				}
			}},
		{"list users", func() (any, error) { return c.ListUsers(ctx) }, "GET", "/v1/users", "", nil,
			func(t *testing.T, v any) {
				if us := v.([]User); len(us) != 1 || us[0].ID != 3 {
					t.Fatalf("users %+v", us)
				}
			}},
		{"get user", func() (any, error) { return c.GetUser(ctx, 3) }, "GET", "/v1/users/3", "", nil, nil},
		{"update user", func() (any, error) { return c.UpdateUser(ctx, 3, UserUpdate{CommentLimit: ptr[int64](0)}) },
			"PATCH", "/v1/users/3", "", map[string]any{"comment_limit": 0.0}, nil},
		{"create crawler", func() (any, error) {
			return c.CreateCrawler(ctx, CrawlerCreate{UserID: 3, Source: "rss", Query: []string{"https://a.example/"}, Enabled: ptr(false)})
		}, "POST", "/v1/crawlers", "", map[string]any{"user_id": 3.0, "source": "rss", "query": []any{"https://a.example/"}, "comment_limit": 0.0, "enabled": false},
			func(t *testing.T, v any) {
				if cr := v.(Crawler); cr.ID != 7 || cr.State != "running" || cr.Node != "n1" {
					t.Fatalf("crawler %+v", cr)
				}
			}},
		{"list crawlers", func() (any, error) { return c.ListCrawlers(ctx) }, "GET", "/v1/crawlers", "", nil, nil},
		{"get crawler", func() (any, error) { return c.GetCrawler(ctx, 7) }, "GET", "/v1/crawlers/7", "", nil, nil},
		{"update crawler", func() (any, error) {
			return c.UpdateCrawler(ctx, 7, CrawlerUpdate{Keywords: []string{}, CommentLimit: ptr[int64](5)})
		}, "PATCH", "/v1/crawlers/7", "", map[string]any{"keywords": []any{}, "comment_limit": 5.0}, nil},
		{"enable crawler", func() (any, error) { return c.UpdateCrawler(ctx, 7, CrawlerUpdate{Enabled: ptr(true)}) },
			"PATCH", "/v1/crawlers/7", "", map[string]any{"enabled": true}, nil},
		{"delete crawler", func() (any, error) { return nil, c.DeleteCrawler(ctx, 7) }, "DELETE", "/v1/crawlers/7", "", nil, nil},
		{"list nodes", func() (any, error) { return c.ListNodes(ctx) }, "GET", "/v1/nodes", "", nil,
			func(t *testing.T, v any) {
				if ns := v.([]Node); len(ns) != 1 || ns[0].Subscribers != 2 {
					t.Fatalf("nodes %+v", ns)
				}
			}},
		{"reload", func() (any, error) { return c.Reload(ctx, "hard") }, "POST", "/v1/reload", "", map[string]any{"kind": "hard"},
			func(t *testing.T, v any) {
				if r := v.(ReloadResponse); r.Assigned != 4 || r.Moved != 1 {
					t.Fatalf("reload %+v", r)
				}
			}},
		{"recent comments", func() (any, error) { return c.RecentComments(ctx, 7, 5) }, "GET", "/v1/crawlers/7/comments", "n=5", nil,
			func(t *testing.T, v any) {
				if cs := v.([]Comment); len(cs) != 1 || cs[0].ID != "c1" {
					t.Fatalf("comments %+v", cs)
				}
			}},
		{"recent comments, hub's default n", func() (any, error) { return c.RecentComments(ctx, 7, 0) }, "GET", "/v1/crawlers/7/comments", "", nil, nil},
		{"health", func() (any, error) { return c.Health(ctx) }, "GET", "/v1/health", "", nil,
			func(t *testing.T, v any) {
				if h := v.(HubHealth); h.Epoch != "e1" || h.Crawlers.ByState["running"] != 1 {
					t.Fatalf("health %+v", h)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			got := f.last(t)
			if got.method != tc.method || got.path != tc.path || got.query != tc.query {
				t.Fatalf("sent %s %s?%s, want %s %s?%s", got.method, got.path, got.query, tc.method, tc.path, tc.query)
			}
			if got.auth != "Bearer s3cret" {
				t.Fatalf("Authorization %q", got.auth)
			}
			if tc.wantBody != nil {
				if got.contentType != "application/json" {
					t.Fatalf("Content-Type %q", got.contentType)
				}
				wb, _ := json.Marshal(tc.wantBody)
				gb, _ := json.Marshal(got.body)
				if string(wb) != string(gb) {
					t.Fatalf("body %s, want %s", gb, wb)
				}
			} else if got.body != nil {
				t.Fatalf("unexpected body %v", got.body)
			}
			if tc.check != nil {
				tc.check(t, v)
			}
		})
	}
}

func TestClient_Errors(t *testing.T) {
	f, srv := newFakeHub(t)
	ctx := context.Background()
	c := NewClient(srv.URL, "", nil)

	// A JSON error body becomes a *StatusError with the server's message.
	f.answer("GET /v1/crawlers/9", 404, `{"error":"crawler 9 not found"}`)
	_, err := c.GetCrawler(ctx, 9)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || se.Message != "crawler 9 not found" || !IsNotFound(err) {
		t.Fatalf("GetCrawler(9) = %#v", err)
	}
	if got := f.last(t); got.auth != "" {
		t.Fatalf("no token configured, but Authorization %q was sent", got.auth)
	}
	// Plain-text and HTML bodies from something else in front of the hub.
	f.answer("GET /v1/nodes", 502, "bad gateway from proxy\n")
	if _, err := c.ListNodes(ctx); !errors.As(err, &se) || se.Code != 502 || se.Message != "bad gateway from proxy" {
		t.Fatalf("ListNodes = %v", err)
	}
	f.answer("GET /v1/users", 503, "<html><body>down</body></html>")
	if _, err := c.ListUsers(ctx); !errors.As(err, &se) || se.Message != "Service Unavailable" {
		t.Fatalf("ListUsers = %v", err)
	}
	// A JSON null list is an empty list.
	f.answer("GET /v1/crawlers", 200, "null")
	if cs, err := c.ListCrawlers(ctx); err != nil || cs == nil || len(cs) != 0 {
		t.Fatalf("ListCrawlers on null = %#v, %v", cs, err)
	}
	// A 2xx answer that is not JSON.
	f.answer("GET /v1/health", 200, "ok")
	if _, err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), "decode") {
		t.Fatalf("Health on a non-JSON answer = %v", err)
	}
	// Bad base URLs fail before any request.
	for _, base := range []string{"", "127.0.0.1:8700", "ftp://x", "http://"} {
		if _, err := NewClient(base, "", nil).Health(ctx); err == nil {
			t.Fatalf("base URL %q accepted", base)
		}
	}
}

func TestClient_ResponseCapAndDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/users":
			w.WriteHeader(200)
			_, _ = w.Write([]byte("["))
			chunk := []byte(strings.Repeat(`{"id":1},`, 1<<12))
			for written := 0; written <= MaxResponseBytes; written += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c := NewClient(srv.URL, "", nil)
	if _, err := c.ListUsers(context.Background()); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized answer: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Health(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Health past its deadline = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("deadline honoured only after %v", d)
	}
}

// TestClient_ReadsMoveOnFromABrokenHub: given two hubs, a read whose
// connection to the first breaks (accepted, then reset) is served by the
// second; a write that may have reached the first is not sent again.
func TestClient_ReadsMoveOnFromABrokenHub(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(broken.Close)
	var mu sync.Mutex
	served := map[string]int{}
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.Method]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`[{"id":7,"name":"u"}]`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":8,"name":"v"}`))
	}))
	t.Cleanup(good.Close)
	c := NewClient(broken.URL+","+good.URL, "", nil)
	users, err := c.ListUsers(context.Background())
	if err != nil || len(users) != 1 || users[0].ID != 7 {
		t.Fatalf("read: %v %v, want the second hub's answer", users, err)
	}
	// A client that has not learnt yet which hub answers.
	c = NewClient(broken.URL+","+good.URL, "", nil)
	if _, err := c.CreateUser(context.Background(), UserCreate{Name: "v"}); err == nil {
		t.Fatal("a write whose connection broke was sent to another hub")
	}
	mu.Lock()
	defer mu.Unlock()
	if served[http.MethodGet] != 1 || served[http.MethodPost] != 0 {
		t.Fatalf("the second hub served %v, want one read and no write", served)
	}
}
