package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// searchStories are the stories the search tests publish, oldest first:
// id, author, text.
var searchStories = [][3]string{
	{"s1", "alice", "golang release notes today"},
	{"s2", "bob", "rust is fast and the new release is out"},
	{"s3", "carol", "golang and rust together"},
	{"s4", "alice", "weather report for the weekend"},
	{"s5", "dave", "a new release of golang"},
	{"s6", "erin", "nothing to see here"},
}

// publishStories publishes stories on a feed, a minute apart, the last a
// minute ago.
func publishStories(c *cluster, feed string, stories [][3]string) {
	at := time.Now().Add(-time.Duration(len(stories)) * time.Minute)
	for i, s := range stories {
		c.Feeds.Publish(feed, feedserver.Item{GUID: s[0], Title: s[2], Author: s[1], Published: at.Add(time.Duration(i) * time.Minute)})
	}
}

func searchAll(t *testing.T, c *cluster, read func(api.SearchQuery) (api.SearchPage, error), q api.SearchQuery) ([]string, int) {
	t.Helper()
	var ids []string
	for pages := 1; ; pages++ {
		p, err := read(q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		for _, cm := range p.Comments {
			ids = append(ids, cm.ID)
		}
		if p.NextCursor == "" {
			return ids, pages
		}
		if pages > 100 {
			t.Fatal("the search does not end")
		}
		q.Cursor = p.NextCursor
	}
}

// TestSearch_QueryLanguageOverStoredComments searches a crawler's stored
// comments through the hub with a query using OR, NOT, a phrase, from:,
// NEAR and a prefix, page by page, and a user's comments across two
// crawlers.
func TestSearch_QueryLanguageOverStoredComments(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	news := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	sport := c.rssCrawler(u.ID, []string{c.FeedURL("sport")}, nil, 0)
	publishStories(c, "news", searchStories)
	publishStories(c, "sport", [][3]string{{"p1", "frank", "golang at the stadium"}, {"p2", "gina", "match report"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "stories stored", func() bool {
		return len(c.storedComments(news.ID)) == len(searchStories) && len(c.storedComments(sport.ID)) == 2
	})
	crawler := func(id int64) func(api.SearchQuery) (api.SearchPage, error) {
		return func(q api.SearchQuery) (api.SearchPage, error) { return c.Client.SearchComments(c.Ctx, id, q) }
	}

	tests := []struct {
		name, q string
		want    []string // newest first
	}{
		{"OR, NOT, a phrase and from:", `from:alice OR ("new release" -rust)`, []string{"s5", "s4", "s1"}},
		{"a word", "golang", []string{"s5", "s3", "s1"}},
		{"AND by juxtaposition", "golang rust", []string{"s3"}},
		{"NOT in words", "golang NOT rust", []string{"s5", "s1"}},
		{"whole words only", "go", nil},
		{"NEAR either way round", "golang NEAR/1 release", []string{"s5", "s1"}},
		{"NEAR in order", "golang NEAR/1f release", []string{"s1"}},
		{"NEAR/0 with a phrase", `"new release" NEAR/0f (is OR of)`, []string{"s5", "s2"}},
		{"a prefix", "weath* OR rel*", []string{"s5", "s4", "s2", "s1"}},
		{"empty: every comment", "", []string{"s6", "s5", "s4", "s3", "s2", "s1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, limit := range []int{1, 2, 50} {
				got, pages := searchAll(t, c, crawler(news.ID), api.SearchQuery{Q: tt.q, ExportQuery: api.ExportQuery{Limit: limit}})
				if !slices.Equal(got, tt.want) {
					t.Fatalf("limit %d: %v, want %v", limit, got, tt.want)
				}
				if min := (len(tt.want) + limit - 1) / limit; pages < min {
					t.Fatalf("limit %d: %d pages for %d matches", limit, pages, len(tt.want))
				}
			}
		})
	}

	// A range: only what was published in it.
	all := c.storedComments(news.ID)
	published := map[string]time.Time{}
	for _, cm := range all {
		published[cm.ID] = cm.PublishedAt
	}
	got, _ := searchAll(t, c, crawler(news.ID), api.SearchQuery{Q: "golang", ExportQuery: api.ExportQuery{
		Since: published["s3"], Until: published["s5"], Limit: 10}})
	if !slices.Equal(got, []string{"s3"}) {
		t.Fatalf("golang in [s3, s5): %v", got)
	}

	// A user's search reads every crawler of the user.
	got, _ = searchAll(t, c, func(q api.SearchQuery) (api.SearchPage, error) { return c.Client.SearchUserComments(c.Ctx, u.ID, q) },
		api.SearchQuery{Q: "golang", ExportQuery: api.ExportQuery{Limit: 2}})
	slices.Sort(got)
	if !slices.Equal(got, []string{"p1", "s1", "s3", "s5"}) {
		t.Fatalf("user search: %v", got)
	}
}

// TestSearch_RefusesBadInput: an invalid query gets 400 with the parser's
// message, a since after until 400, an unknown crawler or user 404, a
// cursor the search did not give 400; none changes anything.
func TestSearch_RefusesBadInput(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	publish(c, "news", "n1", "golang")
	testkit.WaitFor(t, clustertest.WaitTimeout, "stored", func() bool { return len(c.storedComments(cr.ID)) == 1 })
	path := func(base string, v url.Values) string { return base + "?" + v.Encode() }
	crawlerPath := fmt.Sprintf("/v1/crawlers/%d/comments", cr.ID)
	tests := []struct {
		name, path string
		code       int
		want       string
	}{
		{"unclosed parenthesis", path(crawlerPath, url.Values{"q": {"golang ("}}), http.StatusBadRequest, `query: unclosed "(" at column 8`},
		{"negations only", path(crawlerPath, url.Values{"q": {"-golang"}}), http.StatusBadRequest, "query: "},
		{"since after until", path(crawlerPath, url.Values{"q": {"golang"}, "since": {"2024-05-02T00:00:00Z"}, "until": {"2024-05-01T00:00:00Z"}}),
			http.StatusBadRequest, "since (2024-05-02T00:00:00Z) must be before until (2024-05-01T00:00:00Z)"},
		{"bad time", path(crawlerPath, url.Values{"q": {"golang"}, "since": {"yesterday"}}), http.StatusBadRequest, "since must be an RFC 3339 time"},
		{"bad limit", path(crawlerPath, url.Values{"q": {"golang"}, "limit": {"0"}}), http.StatusBadRequest, "limit must be between 1 and"},
		{"bad cursor", path(crawlerPath, url.Values{"q": {"golang"}, "cursor": {"nonsense"}}), http.StatusBadRequest, "cursor"},
		{"unknown crawler", path("/v1/crawlers/999/comments", url.Values{"q": {"golang"}}), http.StatusNotFound, "crawler 999 not found"},
		{"unknown user", path("/v1/users/999/comments", url.Values{"q": {"golang"}}), http.StatusNotFound, "user 999 not found"},
		{"user: bad query", path(fmt.Sprintf("/v1/users/%d/comments", u.ID), url.Values{"q": {`"open`}}), http.StatusBadRequest, "query: "},
		{"user: bad cursor", path(fmt.Sprintf("/v1/users/%d/comments", u.ID), url.Values{"cursor": {"x"}}), http.StatusBadRequest, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := adminGet(t, c, tt.path)
			var e api.Error
			if code != tt.code || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, tt.want) {
				t.Fatalf("%s: %d %s, want %d with %q", tt.path, code, body, tt.code, tt.want)
			}
		})
	}
}

// TestAnalyst_TermCurveComparisonAndExport reads a term's hourly curve
// (a hashtag merged with its word), compares three crawlers' volumes, and
// streams a search as CSV and JSON Lines.
func TestAnalyst_TermCurveComparisonAndExport(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	feeds := []string{"a", "b", "c"}
	var ids []int64
	for _, f := range feeds {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(f)}, nil, 0).ID)
	}
	// a: 3 comments, b: 2, c: 1; "#weather" twice and "weather" once in a.
	publishStories(c, "a", [][3]string{{"a1", "ann", "#weather is grim"}, {"a2", "ann", "more #weather today"}, {"a3", "bo", "weather report: =1+2"}})
	publishStories(c, "b", [][3]string{{"b1", "cy", "golang weekly"}, {"b2", "di", "golang release"}})
	publishStories(c, "c", [][3]string{{"c1", "ed", "golang"}})
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage counted", func() bool {
		return c.crawler(ids[0]).Usage == 3 && c.crawler(ids[1]).Usage == 2 && c.crawler(ids[2]).Usage == 1
	})

	// The term's curve, merged and not.
	var merged, tagOnly api.TermActivity
	testkit.WaitFor(t, clustertest.WaitTimeout, "term counts applied", func() bool {
		var err error
		merged, err = c.Client.TermActivity(c.Ctx, ids[0], "#weather", "24h", true)
		return err == nil && sumTerm(merged) == 3
	})
	tagOnly, err := c.Client.TermActivity(c.Ctx, ids[0], "#weather", "24h", false)
	if err != nil || sumTerm(tagOnly) != 2 || merged.Term != "weather" || len(merged.Steps) < 24 || merged.Step != "1h0m0s" {
		t.Fatalf("merged %+v; hashtag alone %+v, %v", merged, tagOnly, err)
	}

	// Three crawlers side by side: counts and shares.
	cmp, err := c.Client.Compare(c.Ctx, ids, false, "1h", "1m")
	if err != nil || len(cmp.Series) != 3 {
		t.Fatalf("compare: %+v, %v", cmp, err)
	}
	for i, want := range []int64{3, 2, 1} {
		s := cmp.Series[i]
		if s.CrawlerID != ids[i] || s.Total != want || fmt.Sprintf("%.3f", s.Share) != fmt.Sprintf("%.3f", float64(want)/6) {
			t.Fatalf("series %d: %+v, want total %d", i, s, want)
		}
		for _, st := range s.Steps {
			if st.Comments > 0 && (st.Share <= 0 || st.Share > 1) {
				t.Fatalf("series %d step %+v", i, st)
			}
		}
	}
	code, body := adminGet(t, c, "/v1/compare?crawlers=1,x")
	if code != http.StatusBadRequest || !strings.Contains(body, "crawlers must be ids") {
		t.Fatalf("bad ids: %d %s", code, body)
	}

	// Export of a search, streamed: CSV neutralised, JSON Lines verbatim.
	code, body = adminGet(t, c, fmt.Sprintf("/v1/users/%d/comments/export?format=csv&q=weather", u.ID))
	if code != http.StatusOK || !strings.HasPrefix(body, "id,crawler_id,source,author,") || strings.Count(body, "\n") != 4 {
		t.Fatalf("csv export: %d\n%s", code, body)
	}
	code, body = adminGet(t, c, fmt.Sprintf("/v1/crawlers/%d/comments/export?format=jsonl&q=golang", ids[1]))
	if code != http.StatusOK || strings.Count(body, "\n") != 2 || !strings.Contains(body, `"id":"b1"`) {
		t.Fatalf("jsonl export: %d\n%s", code, body)
	}
	code, body = adminGet(t, c, fmt.Sprintf("/v1/crawlers/%d/comments/export?format=xml", ids[1]))
	if code != http.StatusBadRequest || !strings.Contains(body, "format must be one of jsonl, csv") {
		t.Fatalf("bad format: %d %s", code, body)
	}
}

func sumTerm(a api.TermActivity) int64 {
	var n int64
	for _, s := range a.Steps {
		n += s.Count
	}
	return n
}
