package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// send sends an authorised request with a JSON body and returns the answer.
func (ts *testServer) send(t *testing.T, method, path, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	req.Header.Set("Content-Type", "application/json")
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

// TestRetention_TooLongIsRefusedAndChangesNothing sends a retention too
// long for a time.Duration ("213505d" once wrapped to 24h25m26s and the
// crawler kept nothing) to every place that takes one: a new crawler, a
// crawler's update, a new user and a user's default. Each is a 400 naming
// the bound, and nothing is stored.
func TestRetention_TooLongIsRefusedAndChangesNothing(t *testing.T) {
	ts := newTestServer(t, 0)
	seedCrawlers(t, ts, 1, 0, 0)
	ctx := context.Background()
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/crawlers", `{"user_id": 1, "source": "rss", "query": ["https://feeds.example.com/x.xml"], "retention": "213505d"}`},
		{http.MethodPatch, "/v1/crawlers/1", `{"retention": "213505d"}`},
		{http.MethodPatch, "/v1/crawlers/1", `{"retention": "106752d"}`},
		{http.MethodPost, "/v1/users", `{"name": "globex", "retention": "213505d"}`},
		{http.MethodPatch, "/v1/users/1", `{"retention": "213505d"}`},
	} {
		resp, body := ts.send(t, tc.method, tc.path, tc.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "must be at most 7300d") {
			t.Errorf("%s %s %s: %d %s, want 400 saying the retention must be at most 7300d", tc.method, tc.path, tc.body, resp.StatusCode, body)
		}
	}
	crawlers, err := ts.Store.ListCrawlers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(crawlers) != 1 || crawlers[0].RetentionSeconds != 0 {
		t.Errorf("crawlers after the refusals: %+v, want the one seeded, without retention", crawlers)
	}
	users, err := ts.Store.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 || users[0].RetentionSeconds != 0 {
		t.Errorf("users after the refusals: %+v, want the one seeded, without retention", users)
	}
}
