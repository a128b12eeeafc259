package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

const testToken = "admin-secret"

// fakeHub serves the hub's admin routes from memory, answering as the real
// hub does (status codes, {"error": …} bodies). The real hub is exercised by
// the end-to-end tests; this one checks bwctl's side.
type fakeHub struct {
	mu       sync.Mutex
	users    map[int64]api.User
	crawlers map[int64]api.Crawler
	nextID   int64
	bodies   []map[string]any // JSON bodies received, in order
	comments []api.Comment
	delay    time.Duration
}

func newFakeHub(t *testing.T) (*fakeHub, string) {
	t.Helper()
	f := &fakeHub{users: map[int64]api.User{}, crawlers: map[int64]api.Crawler{}, nextID: 1}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, api.Error{Error: fmt.Sprintf(format, args...)})
}

func (f *fakeHub) handler() http.Handler {
	mux := http.NewServeMux()
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		var raw map[string]any
		b := new(bytes.Buffer)
		_, _ = b.ReadFrom(r.Body)
		if json.Unmarshal(b.Bytes(), &raw) != nil || json.Unmarshal(b.Bytes(), v) != nil {
			writeErr(w, 400, "bad request: malformed JSON")
			return false
		}
		f.bodies = append(f.bodies, raw)
		return true
	}
	id := func(w http.ResponseWriter, r *http.Request) (int64, bool) {
		n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || n <= 0 {
			writeErr(w, 400, "id must be a positive integer, got %q", r.PathValue("id"))
			return 0, false
		}
		return n, true
	}
	mux.HandleFunc("POST /v1/users", func(w http.ResponseWriter, r *http.Request) {
		var in api.UserCreate
		if !decode(w, r, &in) {
			return
		}
		u := api.User{ID: f.nextID, Name: in.Name, CommentLimit: in.CommentLimit, State: "active", CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
		f.nextID++
		f.users[u.ID] = u
		writeJSON(w, 201, u)
	})
	mux.HandleFunc("GET /v1/users", func(w http.ResponseWriter, r *http.Request) {
		out := []api.User{}
		for i := int64(1); i < f.nextID; i++ {
			if u, ok := f.users[i]; ok {
				out = append(out, u)
			}
		}
		writeJSON(w, 200, out)
	})
	mux.HandleFunc("GET /v1/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, ok := id(w, r)
		if !ok {
			return
		}
		u, ok := f.users[n]
		if !ok {
			writeErr(w, 404, "user not found")
			return
		}
		writeJSON(w, 200, u)
	})
	mux.HandleFunc("PATCH /v1/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, ok := id(w, r)
		if !ok {
			return
		}
		var in api.UserUpdate
		if !decode(w, r, &in) {
			return
		}
		u, ok := f.users[n]
		if !ok {
			writeErr(w, 404, "user not found")
			return
		}
		u.CommentLimit = *in.CommentLimit
		f.users[n] = u
		writeJSON(w, 200, u)
	})
	mux.HandleFunc("POST /v1/crawlers", func(w http.ResponseWriter, r *http.Request) {
		var in api.CrawlerCreate
		if !decode(w, r, &in) {
			return
		}
		if _, ok := f.users[in.UserID]; !ok {
			writeErr(w, 400, "sqlstore: invalid: user %d does not exist", in.UserID)
			return
		}
		c := api.Crawler{ID: f.nextID, UserID: in.UserID, Source: in.Source, Query: in.Query, Keywords: in.Keywords,
			CommentLimit: in.CommentLimit, Enabled: in.Enabled == nil || *in.Enabled, State: api.StatePending,
			QueryUUID: "6ba7b810-9dad-51d1-80b4-00c04fd430c8", Version: 1}
		if c.Keywords == nil {
			c.Keywords = []string{}
		}
		if !c.Enabled {
			c.State = api.StateDisabled
		}
		f.nextID++
		f.crawlers[c.ID] = c
		writeJSON(w, 201, c)
	})
	mux.HandleFunc("GET /v1/crawlers", func(w http.ResponseWriter, r *http.Request) {
		out := []api.Crawler{}
		for i := int64(1); i < f.nextID; i++ {
			if c, ok := f.crawlers[i]; ok {
				out = append(out, c)
			}
		}
		writeJSON(w, 200, out)
	})
	mux.HandleFunc("GET /v1/crawlers/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, ok := id(w, r)
		if !ok {
			return
		}
		c, ok := f.crawlers[n]
		if !ok {
			writeErr(w, 404, "crawler %d not found", n)
			return
		}
		writeJSON(w, 200, c)
	})
	mux.HandleFunc("PATCH /v1/crawlers/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, ok := id(w, r)
		if !ok {
			return
		}
		var in api.CrawlerUpdate
		if !decode(w, r, &in) {
			return
		}
		c, ok := f.crawlers[n]
		if !ok {
			writeErr(w, 404, "crawler %d not found", n)
			return
		}
		if in.Query != nil {
			c.Query = in.Query
		}
		if in.Keywords != nil {
			c.Keywords = in.Keywords
		}
		if in.CommentLimit != nil {
			c.CommentLimit = *in.CommentLimit
		}
		if in.Enabled != nil {
			c.Enabled = *in.Enabled
			c.State = api.StateRunning
			if !c.Enabled {
				c.State = api.StateDisabled
			}
		}
		c.Version++
		f.crawlers[n] = c
		writeJSON(w, 200, c)
	})
	mux.HandleFunc("DELETE /v1/crawlers/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, ok := id(w, r)
		if !ok {
			return
		}
		if _, ok := f.crawlers[n]; !ok {
			writeErr(w, 404, "crawler %d not found", n)
			return
		}
		delete(f.crawlers, n)
		w.WriteHeader(204)
	})
	mux.HandleFunc("GET /v1/crawlers/{id}/comments", func(w http.ResponseWriter, r *http.Request) {
		n, ok := id(w, r)
		if !ok {
			return
		}
		if _, ok := f.crawlers[n]; !ok {
			writeErr(w, 404, "crawler %d not found", n)
			return
		}
		f.bodies = append(f.bodies, map[string]any{"n": r.URL.Query().Get("n")})
		writeJSON(w, 200, f.comments)
	})
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, []api.Node{
			{ID: "node-a", URL: "http://10.0.0.1:7000", State: api.NodeAttached, Subscribers: 2, LastPoll: time.Now()},
			{ID: "node-b", URL: "http://10.0.0.2:7000", State: api.NodeAttached, Subscribers: 1},
		})
	})
	mux.HandleFunc("POST /v1/reload", func(w http.ResponseWriter, r *http.Request) {
		var in api.ReloadRequest
		if !decode(w, r, &in) {
			return
		}
		writeJSON(w, 200, api.ReloadResponse{Kind: in.Kind, Assigned: 3, Moved: 1})
	})
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		delay := f.delay
		f.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		switch r.Header.Get("Authorization") {
		case "Bearer " + testToken:
		case "":
			writeErr(w, 401, "missing bearer token")
			return
		default:
			writeErr(w, 401, "invalid bearer token")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
	root := http.NewServeMux()
	root.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, api.HubHealth{Epoch: "epoch-123", Routing: "modulo",
			Nodes:    []api.HealthNode{{ID: "node-a", URL: "http://10.0.0.1:7000", Subscribers: 2}},
			Crawlers: api.HealthCrawlers{Total: 3, Assigned: 2, ByState: map[string]int{"running": 2, "disabled": 1}}})
	})
	root.Handle("/", admin)
	return root
}

func (f *fakeHub) lastBody(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatal("the fake hub received no body")
	}
	return f.bodies[len(f.bodies)-1]
}

// result is what one bwctl run produced.
type result struct {
	code           int
	stdout, stderr string
}

// bwctl runs the CLI in-process against hubURL with the admin token in the
// environment.
func bwctl(t *testing.T, hubURL string, args ...string) result {
	t.Helper()
	return bwctlEnv(t, map[string]string{"BW_HUB_URL": hubURL, "BW_ADMIN_TOKEN": testToken}, args...)
}

func bwctlEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
	return result{code, out.String(), errb.String()}
}

// ok fails unless the run succeeded with nothing on stderr.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q", r.code, r.stderr, r.stdout)
	}
	return r
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not the JSON expected: %v\n%s", err, s)
	}
	return v
}

func TestRun_UserCommands(t *testing.T) {
	f, hub := newFakeHub(t)
	u := decodeJSON[api.User](t, bwctl(t, hub, "user", "add", "acme corp", "--limit", "100", "--json").ok(t).stdout)
	if u.ID != 1 || u.Name != "acme corp" || u.CommentLimit != 100 {
		t.Fatalf("user add --json printed %+v", u)
	}
	if b := f.lastBody(t); b["name"] != "acme corp" || b["comment_limit"] != 100.0 {
		t.Fatalf("hub received %v", b)
	}
	bwctl(t, hub, "--json", "user", "add", "beta").ok(t)

	out := bwctl(t, hub, "user", "list").ok(t).stdout
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^ID\s+NAME\s+LIMIT\s+USAGE\s+STATE\s+CREATED$`).MatchString(lines[0]) {
		t.Fatalf("user list table:\n%s", out)
	}
	// Columns line up: every row has NAME where the header has it.
	col := strings.Index(lines[0], "NAME")
	if !strings.HasPrefix(lines[1][col:], "acme corp") || !strings.HasPrefix(lines[2][col:], "beta") {
		t.Fatalf("user list columns not aligned:\n%s", out)
	}
	users := decodeJSON[[]api.User](t, bwctl(t, hub, "user", "list", "--json").ok(t).stdout)
	if len(users) != 2 {
		t.Fatalf("user list --json: %+v", users)
	}

	out = bwctl(t, hub, "user", "show", "1").ok(t).stdout
	for _, re := range []string{`(?m)^id:\s+1$`, `(?m)^name:\s+acme corp$`, `(?m)^comment_limit:\s+100$`, `(?m)^created_at:\s+2024-01-02T03:04:05Z$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("user show lacks %s:\n%s", re, out)
		}
	}
	u = decodeJSON[api.User](t, bwctl(t, hub, "user", "set-limit", "1", "0", "--json").ok(t).stdout)
	if u.CommentLimit != 0 {
		t.Fatalf("set-limit printed %+v", u)
	}
	if b := f.lastBody(t); b["comment_limit"] != 0.0 {
		t.Fatalf("set-limit sent %v (comment_limit 0 must be sent, not omitted)", b)
	}
}

func TestRun_CrawlerCommands(t *testing.T) {
	f, hub := newFakeHub(t)
	bwctl(t, hub, "user", "add", "acme").ok(t)

	// Global and command flags in any order, before and after the words.
	out := bwctl(t, hub, "--json", "crawler", "--source", "rss", "add", "--user", "1",
		"--query", "https://a.example/feed, https://b.example/rss", "--keywords", "Go,rust,", "--limit", "50").ok(t).stdout
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("crawler add --json: %v\n%s", err, out)
	}
	for _, key := range []string{"id", "user_id", "source", "query", "keywords", "comment_limit", "enabled", "state", "node", "usage", "query_uuid"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("crawler add --json lacks %q:\n%s", key, out)
		}
	}
	if raw["id"] != 2.0 {
		t.Fatalf("crawler add printed id %v", raw["id"])
	}
	b := f.lastBody(t)
	wantBody := `{"comment_limit":50,"enabled":true,"keywords":["Go","rust"],"query":["https://a.example/feed","https://b.example/rss"],"source":"rss","user_id":1}`
	if got, _ := json.Marshal(b); string(got) != wantBody {
		t.Fatalf("hub received %s\nwant %s", got, wantBody)
	}

	c := decodeJSON[api.Crawler](t, bwctl(t, hub, "crawler", "add", "--user=1", "--source=twitter", "--query=golang", "--disabled", "--json").ok(t).stdout)
	if c.Enabled || c.State != api.StateDisabled || f.lastBody(t)["enabled"] != false {
		t.Fatalf("crawler add --disabled: %+v, body %v", c, f.lastBody(t))
	}

	out = bwctl(t, hub, "crawler", "show", "2").ok(t).stdout
	for _, re := range []string{`(?m)^id:\s+2$`, `(?m)^source:\s+rss$`, `(?m)^query:\s+https://a.example/feed, https://b.example/rss$`,
		`(?m)^keywords:\s+Go, rust$`, `(?m)^state:\s+pending$`, `(?m)^node:\s+-$`, `(?m)^query_uuid:\s+\S+$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("crawler show lacks %s:\n%s", re, out)
		}
	}
	out = bwctl(t, hub, "crawler", "list").ok(t).stdout
	if !regexp.MustCompile(`(?m)^ID\s+USER\s+SOURCE\s+STATE\s+NODE\s+USAGE\s+LIMIT\s+QUERY\n2\s+1\s+rss\s+pending\s+-\s+0\s+50\s+https://a.example/feed,https://b.example/rss\n3\s+1\s+twitter\s+disabled\s`).MatchString(out) {
		t.Fatalf("crawler list table:\n%s", out)
	}

	c = decodeJSON[api.Crawler](t, bwctl(t, hub, "crawler", "update", "2", "--keywords", "", "--limit", "7", "--json").ok(t).stdout)
	if len(c.Keywords) != 0 || c.CommentLimit != 7 {
		t.Fatalf("crawler update printed %+v", c)
	}
	if got, _ := json.Marshal(f.lastBody(t)); string(got) != `{"comment_limit":7,"keywords":[]}` {
		t.Fatalf("crawler update sent %s (an empty --keywords must clear the filter)", got)
	}
	if out := bwctl(t, hub, "crawler", "disable", "2").ok(t).stdout; !regexp.MustCompile(`(?m)^state:\s+disabled$`).MatchString(out) {
		t.Fatalf("crawler disable printed:\n%s", out)
	}
	if got, _ := json.Marshal(f.lastBody(t)); string(got) != `{"enabled":false}` {
		t.Fatalf("crawler disable sent %s", got)
	}
	bwctl(t, hub, "crawler", "enable", "2").ok(t)
	if got, _ := json.Marshal(f.lastBody(t)); string(got) != `{"enabled":true}` {
		t.Fatalf("crawler enable sent %s", got)
	}

	if out := bwctl(t, hub, "crawler", "delete", "3").ok(t).stdout; out != "crawler 3 deleted\n" {
		t.Fatalf("crawler delete printed %q", out)
	}
	del := decodeJSON[map[string]any](t, bwctl(t, hub, "crawler", "delete", "2", "--json").ok(t).stdout)
	if del["id"] != 2.0 || del["deleted"] != true {
		t.Fatalf("crawler delete --json printed %v", del)
	}
	if cs := decodeJSON[[]api.Crawler](t, bwctl(t, hub, "crawler", "list", "--json").ok(t).stdout); len(cs) != 0 {
		t.Fatalf("crawlers left: %+v", cs)
	}
}

func TestRun_NodesReloadCommentsStatus(t *testing.T) {
	f, hub := newFakeHub(t)
	out := bwctl(t, hub, "node", "list").ok(t).stdout
	if !regexp.MustCompile(`(?m)^ID\s+URL\s+STATE\s+SUBSCRIBERS\s+FAILURES\s+LAST POLL\s+STORE\nnode-a\s+http://10.0.0.1:7000\s+attached\s+2\s+0\s+\S+ ago\s+-\nnode-b\s.*\bnever\b`).MatchString(out) {
		t.Fatalf("node list table:\n%s", out)
	}
	if nodes := decodeJSON[[]api.Node](t, bwctl(t, hub, "node", "list", "--json").ok(t).stdout); len(nodes) != 2 {
		t.Fatalf("node list --json: %+v", nodes)
	}

	r := decodeJSON[api.ReloadResponse](t, bwctl(t, hub, "reload", "--hard", "--json").ok(t).stdout)
	if r.Kind != "hard" || r.Assigned != 3 || f.lastBody(t)["kind"] != "hard" {
		t.Fatalf("reload --hard: %+v", r)
	}
	if out := bwctl(t, hub, "reload", "--soft").ok(t).stdout; !regexp.MustCompile(`(?m)^kind:\s+soft\n`).MatchString(out) {
		t.Fatalf("reload --soft printed:\n%s", out)
	}

	bwctl(t, hub, "user", "add", "u").ok(t)
	bwctl(t, hub, "crawler", "add", "--user", "1", "--source", "stream", "--query", "acme").ok(t)
	f.mu.Lock()
	f.comments = []api.Comment{{ID: "c1", CrawlerID: 2, Author: "mallory\x1b[2J", Text: "line one\nline two\twith tab \u202eevil",
		PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)}}
	f.mu.Unlock()
	out = bwctl(t, hub, "comments", "recent", "2", "--n", "5").ok(t).stdout
	if strings.ContainsAny(out, "\x1b\t\u202e") || !strings.Contains(out, "line one line two with tab evil") ||
		!strings.Contains(out, "2024-06-01T10:00:00Z") {
		t.Fatalf("comments recent printed %q", out)
	}
	if f.lastBody(t)["n"] != "5" {
		t.Fatalf("comments recent asked for n=%v", f.lastBody(t)["n"])
	}
	cs := decodeJSON[[]api.Comment](t, bwctl(t, hub, "comments", "recent", "2", "--json").ok(t).stdout)
	if len(cs) != 1 || cs[0].Text != "line one\nline two\twith tab \u202eevil" {
		t.Fatalf("comments recent --json must keep the text as is: %+v", cs)
	}

	out = bwctl(t, hub, "status").ok(t).stdout
	for _, re := range []string{`(?m)^epoch:\s+epoch-123$`, `(?m)^crawlers:\s+3 total, 2 assigned$`,
		`(?m)^node-a\s+http://10.0.0.1:7000\s+2$`, `(?m)^running\s+2\ndisabled\s+1$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("status lacks %s:\n%s", re, out)
		}
	}
	if h := decodeJSON[api.HubHealth](t, bwctl(t, hub, "status", "--json").ok(t).stdout); h.Epoch != "epoch-123" {
		t.Fatalf("status --json: %+v", h)
	}
}

func TestRun_NilEnv(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &errb, nil); code != 0 || errb.Len() != 0 {
		t.Fatalf("run with a nil env: exit %d, stderr %q", code, errb.String())
	}
}

func TestRun_Help(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"crawler", "add", "--help"}, {"help", "crawler"}} {
		r := bwctlEnv(t, nil, args...).ok(t)
		if !strings.Contains(r.stdout, "bwctl crawler add --user ID --source rss|twitter|stream --query Q") ||
			!strings.Contains(r.stdout, "--hub URL") {
			t.Fatalf("bwctl %v printed:\n%s", args, r.stdout)
		}
	}
}

// TestRun_Failures checks exit codes and that every failure is exactly one
// line "bwctl: <reason>" on stderr with nothing on stdout.
func TestRun_Failures(t *testing.T) {
	_, hub := newFakeHub(t)
	bwctl(t, hub, "user", "add", "acme").ok(t)
	bwctl(t, hub, "crawler", "add", "--user", "1", "--source", "rss", "--query", "https://a.example/").ok(t)
	env := map[string]string{"BW_HUB_URL": hub, "BW_ADMIN_TOKEN": testToken}
	cases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		reason string // regexp of the text after "bwctl: "
	}{
		{"not found", env, []string{"crawler", "show", "9"}, 1, `^crawler 9 not found \(404\)$`},
		{"user not found", env, []string{"user", "show", "9"}, 1, `^user not found \(404\)$`},
		{"hub refuses", env, []string{"crawler", "add", "--user", "99", "--source", "rss", "--query", "https://a.example/"}, 1, `user 99 does not exist \(400\)$`},
		{"no token", map[string]string{"BW_HUB_URL": hub}, []string{"user", "list"}, 1, `^missing bearer token \(401\): no admin token given, set BW_ADMIN_TOKEN or --token$`},
		{"wrong token", env, []string{"user", "list", "--token", "nope"}, 1, `^invalid bearer token \(401\): the hub refused the admin token$`},
		{"no command", env, nil, 2, `^no command given`},
		{"unknown command", env, []string{"frobnicate"}, 2, `^unknown command "frobnicate"`},
		{"unknown subcommand", env, []string{"crawler", "explode", "1"}, 2, `^unknown crawler command "explode" \(want one of add, show, list, update, enable, disable, delete\)$`},
		{"group alone", env, []string{"user"}, 2, `^user needs a subcommand: add, list, show, set-limit$`},
		{"missing id", env, []string{"crawler", "show"}, 2, `^usage: bwctl crawler show ID$`},
		{"extra argument", env, []string{"crawler", "show", "1", "2"}, 2, `^usage: bwctl crawler show ID$`},
		{"bad id", env, []string{"crawler", "show", "abc"}, 2, `^crawler ID must be a positive integer, got "abc"$`},
		{"zero id", env, []string{"crawler", "delete", "0"}, 2, `positive integer`},
		{"negative limit", env, []string{"user", "set-limit", "1", "-1"}, 2, `^limit N must be a whole number`},
		{"bad limit flag", env, []string{"user", "add", "x", "--limit", "lots"}, 2, `^--limit must be a whole number`},
		{"unknown flag", env, []string{"user", "list", "--verbose"}, 2, `^unknown flag "--verbose"`},
		{"flag of another command", env, []string{"user", "list", "--limit", "3"}, 2, `^user list does not take --limit`},
		{"flag without value", env, []string{"user", "add", "x", "--limit"}, 2, `^flag --limit needs a value$`},
		{"bad switch value", env, []string{"user", "list", "--json=maybe"}, 2, `^flag --json is a switch`},
		{"crawler add without query", env, []string{"crawler", "add", "--user", "1", "--source", "rss"}, 2, `^crawler add needs --query$`},
		{"crawler add bad source", env, []string{"crawler", "add", "--user", "1", "--source", "ftp", "--query", "x"}, 2, `^--source must be one of rss, twitter, stream, got "ftp"$`},
		{"crawler add empty query", env, []string{"crawler", "add", "--user", "1", "--source", "rss", "--query", " , "}, 2, `^--query is empty$`},
		{"update nothing", env, []string{"crawler", "update", "1"}, 2, `^nothing to update`},
		{"reload neither", env, []string{"reload"}, 2, `^reload needs exactly one of --hard or --soft$`},
		{"reload both", env, []string{"reload", "--hard", "--soft"}, 2, `^reload needs exactly one`},
		{"bad n", env, []string{"comments", "recent", "1", "--n", "0"}, 2, `^--n must be a positive integer`},
		{"bad timeout", env, []string{"status", "--timeout", "soon"}, 2, `^--timeout "soon" is not a duration`},
		{"bad hub url", env, []string{"status", "--hub", "ftp://x"}, 2, `^hub URL "ftp://x" must look like http://host:port$`},
		{"control characters in input", env, []string{"crawler", "show", "1\n\x1b[31m"}, 2, `^crawler ID must be a positive integer, got "1\\n\\x1b\[31m"$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := bwctlEnv(t, tc.env, tc.args...)
			checkFailure(t, r, tc.code, tc.reason)
		})
	}
}

func checkFailure(t *testing.T, r result, code int, reason string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if r.stdout != "" {
		t.Fatalf("stdout %q on failure, want nothing", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "bwctl: ") || !strings.HasSuffix(r.stderr, "\n") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr %q is not one line \"bwctl: <reason>\"", r.stderr)
	}
	if got := strings.TrimSuffix(strings.TrimPrefix(r.stderr, "bwctl: "), "\n"); !regexp.MustCompile(reason).MatchString(got) {
		t.Fatalf("reason %q does not match %s", got, reason)
	}
}

func TestRun_HubUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := bwctlEnv(t, map[string]string{"BW_HUB_URL": "http://" + addr}, "crawler", "list")
	checkFailure(t, r, 1, `^hub unreachable at http://`+regexp.QuoteMeta(addr)+`: connection refused$`)

	// A password in the hub URL never reaches stderr.
	r = bwctlEnv(t, map[string]string{"BW_HUB_URL": "http://admin:hunter2@" + addr}, "crawler", "list")
	checkFailure(t, r, 1, `^hub unreachable at http://admin:xxxxx@`+regexp.QuoteMeta(addr)+`: connection refused$`)

	// --hub overrides the environment, and a bare host:port means http.
	_, hub := newFakeHub(t)
	r = bwctlEnv(t, map[string]string{"BW_HUB_URL": "http://" + addr, "BW_ADMIN_TOKEN": testToken},
		"node", "list", "--hub", strings.TrimPrefix(hub, "http://"))
	r.ok(t)
}

func TestRun_Timeout(t *testing.T) {
	f, hub := newFakeHub(t)
	f.mu.Lock()
	f.delay = 5 * time.Second
	f.mu.Unlock()
	start := time.Now()
	r := bwctl(t, hub, "user", "list", "--timeout", "100ms")
	checkFailure(t, r, 1, `^hub at `+regexp.QuoteMeta(hub)+` did not answer within 100ms$`)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("--timeout 100ms took %v", d)
	}
}

func TestRun_TokenFile(t *testing.T) {
	_, hub := newFakeHub(t)
	path := t.TempDir() + "/token"
	if err := os.WriteFile(path, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bwctlEnv(t, map[string]string{"BW_HUB_URL": hub, "BW_ADMIN_TOKEN_FILE": path}, "user", "list").ok(t)
	r := bwctlEnv(t, map[string]string{"BW_HUB_URL": hub, "BW_ADMIN_TOKEN_FILE": path + ".missing"}, "user", "list")
	checkFailure(t, r, 1, `^unable to read BW_ADMIN_TOKEN_FILE`)
}

func TestRun_ConfigFile(t *testing.T) {
	_, hub := newFakeHub(t)
	dir := t.TempDir()
	good := dir + "/bwctl.yaml"
	if err := os.WriteFile(good, []byte("hub: "+hub+"\ntoken: "+testToken+"\njson: true\ntimeout: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := bwctlEnv(t, nil, "node", "list", "--config", good).ok(t)
	if nodes := decodeJSON[[]api.Node](t, r.stdout); len(nodes) != 2 {
		t.Fatalf("node list with --config: %+v", nodes)
	}
	// A flag overrides the file.
	if r := bwctlEnv(t, map[string]string{"BW_CONFIG": good}, "node", "list", "--json=false").ok(t); !strings.HasPrefix(r.stdout, "ID ") {
		t.Fatalf("--json=false did not override the file: %q", r.stdout)
	}
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("hubb: http://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkFailure(t, bwctlEnv(t, nil, "status", "--config", bad), 1, `field hubb not found`)
}

func TestParseLine(t *testing.T) {
	cases := []struct {
		args  []string
		words string
		flags string
	}{
		{[]string{"crawler", "add", "--user", "1", "-source=rss", "--json"}, "crawler add", "json=true source=rss user=1"},
		{[]string{"--json=false", "user", "set-limit", "3", "-5"}, "user set-limit 3 -5", "json=false"},
		{[]string{"user", "add", "--", "--limit"}, "user add --limit", ""},
		{[]string{"user", "add", "-"}, "user add -", ""},
		{[]string{"--limit", "-1", "x"}, "x", "limit=-1"},
	}
	for _, tc := range cases {
		l, err := parseLine(tc.args)
		if err != nil {
			t.Fatalf("parseLine(%q): %v", tc.args, err)
		}
		var flags []string
		for _, name := range []string{"hub", "json", "limit", "source", "user"} {
			if v, ok := l.flags[name]; ok {
				flags = append(flags, name+"="+v)
			}
		}
		if got := strings.Join(l.words, " "); got != tc.words || strings.Join(flags, " ") != tc.flags {
			t.Fatalf("parseLine(%q) = %q %v, want %q %q", tc.args, got, flags, tc.words, tc.flags)
		}
	}
}

// FuzzRun feeds arbitrary command lines to bwctl: it must never panic, must
// exit 0, 1 or 2, and must fail with exactly one line on stderr.
func FuzzRun(f *testing.F) {
	fh := &fakeHub{users: map[int64]api.User{}, crawlers: map[int64]api.Crawler{}, nextID: 1}
	srv := httptest.NewServer(fh.handler())
	defer srv.Close()
	for _, seed := range []string{
		"user add acme --limit 5", "crawler add --user 1 --source rss --query https://x/", "crawler show 1 --json",
		"crawler update 1 --keywords ''", "reload --hard", "comments recent 1 --n 3", "status", "--timeout=-1s node list",
		"--hub=http://[::1 user list", "-- -- --", "crawler show 99999999999999999999", "user set-limit 1 -0",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, " ")
		var out, errb bytes.Buffer
		env := map[string]string{"BW_HUB_URL": srv.URL, "BW_ADMIN_TOKEN": testToken, "BW_TIMEOUT": "2s"}
		code := run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
		switch code {
		case 0:
		case 1, 2:
			if s := errb.String(); !strings.HasPrefix(s, "bwctl: ") || strings.Count(s, "\n") != 1 || out.Len() != 0 {
				t.Fatalf("bwctl %q: exit %d, stdout %q, stderr %q", line, code, out.String(), s)
			}
		default:
			t.Fatalf("bwctl %q: exit %d", line, code)
		}
	})
}
