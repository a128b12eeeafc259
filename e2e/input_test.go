package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
)

// TestInput_HiddenCharactersAndRouterErrors sends the hub names and
// queries an operator would not see as typed, and requests the router
// itself refuses: each gets a 400, 404 or 405 with a JSON reason, and
// nothing is stored.
func TestInput_HiddenCharactersAndRouterErrors(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 1})
	c.user(0)
	cases := []struct {
		name, method, path, body string
		code                     int
		want                     string
	}{
		{"bidi override in a name", "POST", "/v1/users", `{"name": "admin\u202Egpj"}`, 400, "bidirectional control U+202E at character 6"},
		{"control character in a name", "POST", "/v1/users", `{"name": "a\u0007b"}`, 400, "control character U+0007"},
		{"invalid UTF-8 in a name", "POST", "/v1/users", "{\"name\": \"a\xffb\"}", 400, "not valid UTF-8"},
		{"control character in a query", "POST", "/v1/crawlers", `{"user_id": 1, "source": "bluesky", "query": ["golang\u0000"]}`, 400, "query contains control character U+0000"},
		{"bidi in a filter", "POST", "/v1/crawlers", `{"user_id": 1, "source": "rss", "query": ["http://127.0.0.1:1/f"], "keywords": ["go\u2067"]}`, 400, "keywords contains bidirectional control U+2067"},
		{"zero width space in a name", "POST", "/v1/users", `{"name": "bob\u200b"}`, 400, "name contains invisible character U+200B at character 4"},
		{"zero width space in a query", "POST", "/v1/crawlers", `{"user_id": 1, "source": "bluesky", "query": ["golang\u200b"]}`, 400, "query contains invisible character U+200B at character 7"},
		{"soft hyphen in a filter", "POST", "/v1/crawlers", `{"user_id": 1, "source": "rss", "query": ["http://127.0.0.1:1/f"], "keywords": ["go\u00adlang"]}`, 400, "keywords contains invisible character U+00AD"},
		{"unknown path", "GET", "/v1/nothing", "", 404, "not found"},
		{"wrong method", "DELETE", "/v1/users", "", 405, "method not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := c.adminDo(tc.method, tc.path, clustertest.AdminToken, tc.body)
			var e api.Error
			if err := json.Unmarshal([]byte(body), &e); code != tc.code || err != nil || !strings.Contains(e.Error, tc.want) {
				t.Fatalf("%d %s, want %d with a JSON error containing %q", code, body, tc.code, tc.want)
			}
		})
	}
	users, err := c.Client.ListUsers(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	crawlers, err := c.Client.ListCrawlers(c.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 || len(crawlers) != 0 {
		t.Fatalf("refused requests stored %d users and %d crawlers, want 1 and 0", len(users), len(crawlers))
	}
}
