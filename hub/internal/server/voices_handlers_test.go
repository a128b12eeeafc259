package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// sendJSON sends an authorised request with body as JSON.
func (ts *testServer) sendJSON(t *testing.T, method, path string, body any) (*http.Response, string) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(raw))
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

// TestAuthors_ExactCountsAndBadParameters reads a crawler's and a user's
// top authors and breakdown over the API after two increments, and checks
// that bad windows, counts and ids are refused with their reason.
func TestAuthors_ExactCountsAndBadParameters(t *testing.T) {
	ts := newTestServer(t, 0)
	seedCrawlers(t, ts, 2, 0, 0)
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Minute)
	hour := at.Truncate(time.Hour)
	inc := func(seq uint64, crawler int64, authors []api.AuthorTally, langs []api.LangTally) api.Increment {
		var n int64
		for _, a := range authors {
			n += a.Comments
		}
		return api.Increment{NodeID: "n", Seq: seq, CrawlerID: crawler, UserID: 1, Count: n, Analytics: &api.IncrementAnalytics{
			Minutes: []api.MinuteActivity{{At: at.Truncate(time.Minute), Comments: n}},
			Authors: []api.HourAuthors{{At: hour, Authors: authors}},
			Langs:   []api.HourLangs{{At: hour, Langs: langs}},
		}}
	}
	_, err := ts.Store.ApplyIncrements(ctx, []api.Increment{
		inc(1, 1, []api.AuthorTally{{Author: "alice", AuthorID: "did:a", Comments: 3, Likes: 7}, {Author: "bob", Comments: 1, Reposts: 2}},
			[]api.LangTally{{Lang: "en", Comments: 3}, {Comments: 1}}),
		inc(2, 2, []api.AuthorTally{{Author: "bob", Comments: 4}}, []api.LangTally{{Lang: "de", Comments: 4}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var a api.Authors
	ts.getJSON(t, "/v1/crawlers/1/authors?window=1h&n=5", &a)
	want := []api.AuthorCount{
		{Author: "alice", AuthorID: "did:a", Comments: 3, Engagement: api.Engagement{Likes: 7}},
		{Author: "bob", Comments: 1, Engagement: api.Engagement{Reposts: 2}},
	}
	if a.Window != "1h" || len(a.Authors) != 2 || a.Authors[0] != want[0] || a.Authors[1] != want[1] {
		t.Fatalf("crawler 1's authors: %+v", a)
	}
	ts.getJSON(t, "/v1/users/1/authors?window=7d", &a)
	if len(a.Authors) != 2 || a.Authors[0].Author != "bob" || a.Authors[0].Comments != 5 || a.Authors[1].Author != "alice" {
		t.Fatalf("user 1's authors, summed over its crawlers: %+v", a)
	}
	var b api.Breakdown
	ts.getJSON(t, "/v1/users/1/breakdown?window=24h", &b)
	if b.Comments != 8 || len(b.Sources) != 1 || b.Sources[0].Key != api.SourceRSS || len(b.Languages) != 3 ||
		b.Languages[0].Key != "de" || b.Languages[0].Comments != 4 || b.Languages[0].Share != 0.5 {
		t.Fatalf("user 1's breakdown: %+v", b)
	}

	for _, tc := range []struct{ path, reason string }{
		{"/v1/crawlers/1/authors?window=2h", "window must be 1h, 24h or 7d"},
		{"/v1/crawlers/1/authors?n=0", "n must be between 1 and 500"},
		{"/v1/crawlers/1/authors?n=501", "n must be between 1 and 500"},
		{"/v1/crawlers/x/authors", "id must be a positive integer"},
		{"/v1/crawlers/1/breakdown?window=1d", "window must be 1h, 24h or 7d"},
	} {
		if resp, body := ts.get(t, tc.path, testAdminToken); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.reason) {
			t.Errorf("GET %s: %d %s, want 400 saying %q", tc.path, resp.StatusCode, body, tc.reason)
		}
	}
	for _, path := range []string{"/v1/crawlers/99/authors", "/v1/users/99/authors", "/v1/crawlers/99/breakdown", "/v1/users/99/breakdown"} {
		if resp, body := ts.get(t, path, testAdminToken); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", path, resp.StatusCode, body)
		}
	}
	if resp, _ := ts.get(t, "/v1/crawlers/1/authors", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("authors without the token: %d, want 401", resp.StatusCode)
	}
}

// TestCrawlerName_SetRenamedRefused names a crawler when it is created,
// renames it, removes the name, and refuses bad names without a change.
func TestCrawlerName_SetRenamedRefused(t *testing.T) {
	ts := newTestServer(t, 0)
	if _, err := ts.Store.CreateUser(context.Background(), "acme", 0); err != nil {
		t.Fatal(err)
	}
	resp, body := ts.sendJSON(t, http.MethodPost, "/v1/crawlers", map[string]any{"user_id": 1, "source": "twitter", "query": []string{"golang"}, "name": "Acme launch"})
	if resp.StatusCode != http.StatusCreated || !strings.Contains(body, `"name": "Acme launch"`) {
		t.Fatalf("create with a name: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		name, want string
		status     int
	}{
		{"Acme relaunch", "Acme relaunch", http.StatusOK},
		{strings.Repeat("é", 101), "Acme relaunch", http.StatusBadRequest},
		{" padded", "Acme relaunch", http.StatusBadRequest},
		{"tab\there", "Acme relaunch", http.StatusBadRequest},
		{"", "", http.StatusOK},
	} {
		resp, body := ts.sendJSON(t, http.MethodPatch, "/v1/crawlers/1", map[string]any{"name": tc.name})
		if resp.StatusCode != tc.status {
			t.Fatalf("rename to %q: %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		var c api.Crawler
		ts.getJSON(t, "/v1/crawlers/1", &c)
		if c.Name != tc.want {
			t.Fatalf("after renaming to %q the crawler is named %q, want %q", tc.name, c.Name, tc.want)
		}
	}
	var page []api.Crawler
	ts.getJSON(t, "/v1/crawlers?after=0&limit=10&match=GOLANG", &page)
	if len(page) != 1 || page[0].ID != 1 {
		t.Fatalf("crawlers matching golang: %+v", page)
	}
	if resp, body := ts.get(t, "/v1/crawlers?limit=10&match="+strings.Repeat("x", 201), testAdminToken); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a 201-byte match: %d %s", resp.StatusCode, body)
	}
}

// TestSentimentSplit_ActivityAndCompare applies increments whose minutes
// count positive and negative comments and reads the split back from a
// crawler's activity, from the comparison of two crawlers, and from the
// comparison of a user (its crawlers summed): each step's positive,
// neutral and negative sum to its comments.
func TestSentimentSplit_ActivityAndCompare(t *testing.T) {
	ts := newTestServer(t, 0)
	seedCrawlers(t, ts, 2, 0, 0)
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Minute)
	inc := func(seq uint64, crawler, comments, positive, negative int64) api.Increment {
		return api.Increment{NodeID: "n", Seq: seq, CrawlerID: crawler, UserID: 1, Count: comments, Analytics: &api.IncrementAnalytics{
			Minutes: []api.MinuteActivity{{At: at, Comments: comments, Positive: positive, Negative: negative}},
		}}
	}
	if _, err := ts.Store.ApplyIncrements(ctx, []api.Increment{inc(1, 1, 5, 2, 1), inc(2, 2, 4, 0, 3), inc(3, 1, 1, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	type split struct{ comments, positive, neutral, negative int64 }
	sum := func(steps []api.ActivityStep) (s split) {
		for _, st := range steps {
			s.comments += st.Comments
			s.positive += st.Positive
			s.neutral += st.Neutral
			s.negative += st.Negative
		}
		return s
	}
	var a api.Activity
	ts.getJSON(t, "/v1/crawlers/1/activity?window=1h&step=1m", &a)
	if got := sum(a.Steps); got != (split{6, 3, 2, 1}) {
		t.Fatalf("crawler 1's activity: %+v, want 6 comments: 3 positive, 2 neutral, 1 negative", got)
	}
	sumCmp := func(steps []api.CompareStep) (s split) {
		for _, st := range steps {
			if st.Positive+st.Neutral+st.Negative != st.Comments {
				t.Fatalf("compared step %+v: the split does not sum to its comments", st)
			}
			s.comments += st.Comments
			s.positive += st.Positive
			s.neutral += st.Neutral
			s.negative += st.Negative
		}
		return s
	}
	var cmp api.Comparison
	ts.getJSON(t, "/v1/compare?crawlers=1,2&window=1h&step=1m", &cmp)
	if len(cmp.Series) != 2 || sumCmp(cmp.Series[0].Steps) != (split{6, 3, 2, 1}) || sumCmp(cmp.Series[1].Steps) != (split{4, 0, 1, 3}) {
		t.Fatalf("the comparison of crawlers 1 and 2: %+v", cmp.Series)
	}
	ts.getJSON(t, "/v1/compare?users=1&window=24h&step=1h", &cmp)
	if len(cmp.Series) != 1 || sumCmp(cmp.Series[0].Steps) != (split{10, 3, 3, 4}) {
		t.Fatalf("user 1's comparison, its crawlers summed: %+v", cmp.Series)
	}
}
