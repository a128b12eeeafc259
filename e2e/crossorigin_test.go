package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// rawCall sends one request as a browser (or a hostile tester) would: the
// Host, Origin and Content-Type it is given, no token. It returns the status
// and the body.
func rawCall(t *testing.T, method, url, host, origin, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCrossOrigin_HubWithoutTokensRefusesPagesOfOtherOrigins: a hub on
// loopback without tokens (a laptop demo) is reachable by every page its
// operator's browser opens. A page on another origin sends what a browser
// lets it send without asking: a text/plain POST ("no-cors"); a page on a
// name its owner points at 127.0.0.1 (DNS rebinding) sends JSON and reads
// the answer. Both are refused and nothing changes; the hub's own page and
// clients keep working.
func TestCrossOrigin_HubWithoutTokensRefusesPagesOfOtherOrigins(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Hub: func(cfg *hubapp.Settings) {
		cfg.NodeToken, cfg.AdminToken = "", ""
	}})
	hub := c.Hub.URL()
	_, port, _ := net.SplitHostPort(c.Hub.Addr())
	const user = `{"name":"mallory","comment_limit":0}`
	attacks := []struct {
		name                                    string
		method, path, host, origin, ctype, body string
		want                                    int
	}{
		{"no-cors text/plain POST from another origin", "POST", "/v1/users", "", "http://evil.example", "text/plain;charset=UTF-8", user, http.StatusForbidden},
		{"text/plain POST without an Origin (a form of an old browser)", "POST", "/v1/users", "", "", "text/plain", user, http.StatusUnsupportedMediaType},
		{"form POST", "POST", "/v1/users", "", "", "application/x-www-form-urlencoded", "name=mallory", http.StatusUnsupportedMediaType},
		{"bodiless reload from another origin", "POST", "/v1/reload?hard=true", "", "http://evil.example", "", "", http.StatusForbidden},
		{"page of another port on loopback", "POST", "/v1/users", "", "http://127.0.0.1:1", "application/json", user, http.StatusForbidden},
		{"rebinding: JSON POST to a name pointed at 127.0.0.1", "POST", "/v1/users", "evil.example:" + port, "http://evil.example:" + port, "application/json", user, http.StatusForbidden},
		{"rebinding: reading health", "GET", api.PathHealth, "evil.example:" + port, "", "", "", http.StatusForbidden},
		{"rebinding: reading users", "GET", "/v1/users", "evil.example:" + port, "", "", "", http.StatusForbidden},
		{"rebinding: the dashboard", "GET", "/", "evil.example:" + port, "", "", "", http.StatusForbidden},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			code, body := rawCall(t, a.method, hub+a.path, a.host, a.origin, a.ctype, a.body)
			if code != a.want {
				t.Fatalf("%s %s: %d %s, want %d", a.method, a.path, code, body, a.want)
			}
			if !strings.Contains(body, `"error"`) {
				t.Errorf("refusal without a JSON error: %s", body)
			}
		})
	}
	users, err := c.Client.ListUsers(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 0 {
		t.Fatalf("refused requests created users: %+v", users)
	}
	events, err := c.Client.Events(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if strings.HasPrefix(ev.Kind, "reload") {
			t.Errorf("a refused reload ran: %+v", ev)
		}
	}

	// The hub's own page (same origin, JSON) and its clients still work.
	if code, body := rawCall(t, "POST", hub+"/v1/users", "", hub, "application/json", user); code != http.StatusCreated {
		t.Fatalf("the dashboard's own POST: %d %s", code, body)
	}
	if code, body := rawCall(t, "GET", hub+"/", "", "", "", ""); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("the dashboard page: %d", code)
	}
	if code, body := rawCall(t, "GET", strings.Replace(hub, "127.0.0.1", "localhost", 1)+api.PathHealth, "", "", "", ""); code != http.StatusOK {
		t.Fatalf("health at localhost: %d %s", code, body)
	}
	if _, err := c.Client.CreateUser(c.Ctx, api.UserCreate{Name: "alice"}); err != nil {
		t.Fatalf("the admin client: %v", err)
	}
}

// TestCrossOrigin_SpawnRefusesOtherHostsAndOrigins: the spawn's node API
// and its open health are behind the same checks, and the hub, which
// reaches the spawn at its advertised address, still drives it.
func TestCrossOrigin_SpawnRefusesOtherHostsAndOrigins(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("xo")}, nil, 0)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running", func() bool { return c.crawler(cr.ID).State == api.StateRunning })
	spawn := c.Spawns[0].URL()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(spawn, "http://"))
	cases := []struct {
		name                              string
		method, path, host, origin, ctype string
		want                              int
	}{
		{"rebinding: health", "GET", api.PathHealth, "evil.example:" + port, "", "", http.StatusForbidden},
		{"rebinding: metrics", "GET", "/metrics", "evil.example:" + port, "", "", http.StatusForbidden},
		{"another origin: remove subscribers", "POST", api.PathSubscribersRemove, "", "http://evil.example", "text/plain", http.StatusForbidden},
		{"text/plain remove", "POST", api.PathSubscribersRemove, "", "", "text/plain", http.StatusUnsupportedMediaType},
		{"own name: health", "GET", api.PathHealth, "", "", "", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := rawCall(t, tc.method, spawn+tc.path, tc.host, tc.origin, tc.ctype, `{"epoch":"x","seq":1,"crawler_ids":[1]}`)
			if code != tc.want {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, code, body, tc.want)
			}
		})
	}
	// The hub still polls it: the crawler stays running there.
	if st := c.crawler(cr.ID); st.State != api.StateRunning || st.Node != c.Spawns[0].ID() {
		t.Fatalf("crawler %+v after the refused requests", st)
	}
}

// TestCrossOrigin_AllowedHostsLetAProxyThrough: behind a reverse proxy the
// hub is reached by the proxy's name, and its page comes from the proxy's
// origin; --allowed-hosts names it.
func TestCrossOrigin_AllowedHostsLetAProxyThrough(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Hub: func(cfg *hubapp.Settings) {
		cfg.AllowedHosts = []string{"bw.example.com"}
	}})
	hub := c.Hub.URL()
	req, err := http.NewRequestWithContext(c.Ctx, "POST", hub+"/v1/users", strings.NewReader(`{"name":"bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "bw.example.com"
	req.Header.Set("Origin", "https://bw.example.com")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clustertest.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("through the proxy's name: %d", resp.StatusCode)
	}
	if code, _ := rawCall(t, "GET", hub+api.PathHealth, "other.example.com", "", "", ""); code != http.StatusForbidden {
		t.Fatalf("a name not allowed: %d", code)
	}
}
