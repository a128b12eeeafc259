package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

func TestDesiredNodes(t *testing.T) {
	cases := []struct {
		name                string
		subscribers, target int
		want                int
	}{
		{"idle cluster keeps one node", 0, 500, 1},
		{"one subscriber", 1, 500, 1},
		{"exactly one node's worth", 500, 500, 1},
		{"one over rounds up", 501, 500, 2},
		{"many", 12_345, 500, 25},
		{"target of one", 7, 1, 7},
		{"unset target uses the default", 1_001, 0, 3},
		{"negative target uses the default", 499, -4, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := desiredNodes(tc.subscribers, tc.target); got != tc.want {
				t.Fatalf("desiredNodes(%d, %d) = %d, want %d", tc.subscribers, tc.target, got, tc.want)
			}
		})
	}
}

// seedCrawlers adds a user and crawlers to the store: enabled ones, disabled
// ones and ones at their limit, then reloads the hub so its view holds them.
func seedCrawlers(t *testing.T, ts *testServer, enabled, disabled, atLimit int) {
	t.Helper()
	ctx := context.Background()
	u, err := ts.Store.CreateUser(ctx, "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	add := func(on, limited bool) {
		n++
		row := sqlstore.Crawler{UserID: u.ID, Enabled: on}
		if err := ts.Server.canonical(&row, api.SourceRSS, []string{fmt.Sprintf("https://feeds.example.com/%d.xml", n)}, nil); err != nil {
			t.Fatal(err)
		}
		c, err := ts.Store.CreateCrawler(ctx, row)
		if err != nil {
			t.Fatal(err)
		}
		if limited {
			if err := ts.Store.SetLimitReached(ctx, c.ID, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range enabled {
		add(true, false)
	}
	for range disabled {
		add(false, false)
	}
	for range atLimit {
		add(true, true)
	}
	if _, err := ts.Hub.Reload(ctx, false); err != nil {
		t.Fatal(err)
	}
}

func TestScaling_CountsWantedSubscribers(t *testing.T) {
	cases := []struct {
		name                       string
		target                     int
		enabled, disabled, atLimit int
		nodes                      int
		want                       api.Scaling
	}{
		{"empty hub wants one node", 500, 0, 0, 0, 0,
			api.Scaling{Nodes: 0, Subscribers: 0, TargetSubscribersPerNode: 500, DesiredNodes: 1}},
		{"disabled and limited crawlers need no node", 2, 3, 4, 5, 1,
			api.Scaling{Nodes: 1, Subscribers: 3, TargetSubscribersPerNode: 2, DesiredNodes: 2}},
		{"scale down", 10, 5, 0, 0, 3,
			api.Scaling{Nodes: 3, Subscribers: 5, TargetSubscribersPerNode: 10, DesiredNodes: 1}},
		{"default target", 0, 7, 1, 0, 2,
			api.Scaling{Nodes: 2, Subscribers: 7, TargetSubscribersPerNode: DefaultScalingTarget, DesiredNodes: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, tc.target)
			seedCrawlers(t, ts, tc.enabled, tc.disabled, tc.atLimit)
			for i := range tc.nodes {
				if _, err := ts.Hub.Register(api.RegisterRequest{NodeID: fmt.Sprintf("node-%d", i), URL: fmt.Sprintf("http://127.0.0.1:%d", 9000+i)}); err != nil {
					t.Fatal(err)
				}
			}
			var got api.Scaling
			ts.getJSON(t, api.PathScaling, &got)
			if got != tc.want {
				t.Fatalf("GET /v1/scaling = %+v, want %+v", got, tc.want)
			}
			// The gauge says the same.
			m := scrape(t, ts)
			if v := m["bw_hub_desired_nodes"]; v != fmt.Sprint(tc.want.DesiredNodes) {
				t.Fatalf("bw_hub_desired_nodes = %q, want %d", v, tc.want.DesiredNodes)
			}
		})
	}
}

// scrape reads the hub's /metrics into series → value.
func scrape(t *testing.T, ts *testServer) map[string]string {
	t.Helper()
	resp, body := ts.get(t, "/metrics", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	return out
}

func TestMetrics_ViewGauges(t *testing.T) {
	ts := newTestServer(t, 2)
	seedCrawlers(t, ts, 3, 1, 1)
	for _, id := range []string{"node-a", "node-b"} {
		if _, err := ts.Hub.Register(api.RegisterRequest{NodeID: id, URL: "http://127.0.0.1:9999"}); err != nil {
			t.Fatal(err)
		}
	}
	m := scrape(t, ts)
	want := map[string]string{
		"bw_hub_nodes":                            "2",
		"bw_hub_desired_nodes":                    "2",
		`bw_hub_crawlers{state="pending"}`:        "3",
		`bw_hub_crawlers{state="disabled"}`:       "1",
		`bw_hub_crawlers{state="limit_reached"}`:  "1",
		`bw_hub_crawlers{state="running"}`:        "0",
		`bw_hub_node_subscribers{node="node-a"}`:  "0",
		`bw_hub_node_data_sources{node="node-b"}`: "0",
	}
	for series, v := range want {
		if m[series] != v {
			t.Errorf("%s = %q, want %q", series, m[series], v)
		}
	}
	// The hub's own counters are served alongside.
	if _, ok := m["bw_hub_polls_total"]; !ok {
		t.Errorf("bw_hub_polls_total missing from /metrics")
	}
	if got := m["bw_hub_registrations_total"]; got != "2" {
		t.Errorf("bw_hub_registrations_total = %q, want 2", got)
	}
	// Two hubs in one process each export their own view and counters.
	other := newTestServer(t, 0)
	om := scrape(t, other)
	if got := om["bw_hub_nodes"]; got != "0" {
		t.Fatalf("second hub: bw_hub_nodes = %q, want 0", got)
	}
	if got := om["bw_hub_registrations_total"]; got != "0" {
		t.Fatalf("second hub: bw_hub_registrations_total = %q, want 0: the hubs share counters", got)
	}
}

func TestCrawlerHistory_Route(t *testing.T) {
	ts := newTestServer(t, 0)
	seedCrawlers(t, ts, 1, 0, 0)
	var h api.CrawlerHistory
	ts.getJSON(t, "/v1/crawlers/1/history", &h)
	if h.CrawlerID != 1 || h.StepSeconds <= 0 || len(h.CommentsPerMinute) == 0 || h.Until.IsZero() {
		t.Fatalf("history %+v", h)
	}
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/v1/crawlers/99/history", http.StatusNotFound, "crawler not found"},
		{"/v1/crawlers/x/history", http.StatusBadRequest, "positive integer"},
	} {
		resp, body := ts.get(t, tc.path, testAdminToken)
		if resp.StatusCode != tc.status || !regexp.MustCompile(tc.body).MatchString(body) {
			t.Fatalf("GET %s: %d %s, want %d %s", tc.path, resp.StatusCode, body, tc.status, tc.body)
		}
	}
}
