package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// adminGet sends an admin GET and returns the status and body.
func adminGet(t *testing.T, c *cluster, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(c.Ctx, http.MethodGet, c.Hub.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clustertest.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestExport_PagedCommentsKeepTheRecentForm(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, nil, 0)
	for i := range 7 {
		publish(c, "news", fmt.Sprintf("n%d", i), fmt.Sprintf("story %d", i))
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage 7", func() bool { return c.crawler(cr.ID).Usage == 7 })

	// Without paging parameters the answer is the list of recent comments.
	code, body := adminGet(t, c, fmt.Sprintf("/v1/crawlers/%d/comments?n=3", cr.ID))
	var recent []api.Comment
	if code != http.StatusOK || json.Unmarshal([]byte(body), &recent) != nil || len(recent) != 3 {
		t.Fatalf("recent form: %d %s", code, body)
	}
	// With them, pages with a cursor, through the client.
	seen := map[string]bool{}
	q := api.ExportQuery{Limit: 3}
	for pages := 1; ; pages++ {
		p, err := c.Client.ExportComments(c.Ctx, cr.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range p.Comments {
			seen[cm.ID] = true
		}
		if p.NextCursor == "" {
			break
		}
		if pages > 10 {
			t.Fatal("export does not end")
		}
		q.Cursor = p.NextCursor
	}
	if len(seen) != 7 {
		t.Fatalf("paged export saw %d comments, want 7", len(seen))
	}

	tests := []struct {
		query string
		code  int
		want  string
	}{
		{"limit=0", 400, "limit must be between 1 and 1000"},
		{"limit=5000", 400, "limit must be between 1 and 1000"},
		{"since=yesterday", 400, "since must be an RFC 3339 time"},
		{"since=2024-05-02T00:00:00Z&until=2024-05-01T00:00:00Z", 400, "since (2024-05-02T00:00:00Z) must be before until"},
		{"cursor=bogus", 400, "is not one this export gave"},
		{"n=5&limit=5", 400, "a paged read takes limit instead"},
	}
	for _, tt := range tests {
		code, body := adminGet(t, c, fmt.Sprintf("/v1/crawlers/%d/comments?%s", cr.ID, tt.query))
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("?%s: %d %s; want %d with %q", tt.query, code, body, tt.code, tt.want)
		}
	}
	if code, body := adminGet(t, c, "/v1/crawlers/99/comments?limit=5"); code != 404 || !strings.Contains(body, "crawler 99 not found") {
		t.Errorf("unknown crawler: %d %s", code, body)
	}
}

func TestValidateQuery_AgreesWithCrawlerCreation(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 1})
	u := c.user(0)
	tests := []struct {
		in      api.QueryValidate
		wantErr string
	}{
		{in: api.QueryValidate{Source: "twitter", Query: "Golang OR rust -java"}},
		{in: api.QueryValidate{Source: "stream", Query: "golang,new release"}},
		{in: api.QueryValidate{Source: "rss", Query: c.FeedURL("a") + "," + c.FeedURL("b"), Keywords: "golang OR go"}},
		{in: api.QueryValidate{Source: "twitter", Query: "(golang OR rust"}, wantErr: `unclosed "("`},
		{in: api.QueryValidate{Source: "twitter", Query: "-java"}, wantErr: "query"},
		{in: api.QueryValidate{Source: "twitter", Query: ""}, wantErr: "empty"},
		{in: api.QueryValidate{Source: "rss", Query: "not a url"}, wantErr: "query"},
		{in: api.QueryValidate{Source: "gopher", Query: "x"}, wantErr: "unknown source"},
		{in: api.QueryValidate{Source: "twitter", Query: "golang", Keywords: "x"}, wantErr: "keywords filter only crawlers that read URLs"},
	}
	for _, tt := range tests {
		v, verr := c.Client.ValidateQuery(c.Ctx, tt.in)
		q := []string{tt.in.Query}
		if tt.in.Source == api.SourceRSS {
			q = strings.Split(tt.in.Query, ",")
		}
		var kw []string
		if tt.in.Keywords != "" {
			kw = []string{tt.in.Keywords}
		}
		cr, cerr := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: tt.in.Source, Query: q, Keywords: kw})
		if tt.wantErr != "" {
			var se *api.StatusError
			if verr == nil || !strings.Contains(verr.Error(), tt.wantErr) || !errors.As(verr, &se) || se.Code != 400 {
				t.Errorf("validate %+v = %v; want 400 with %q", tt.in, verr, tt.wantErr)
			}
			if cerr == nil || cerr.Error() != verr.Error() {
				t.Errorf("validate %+v said %v, creating said %v", tt.in, verr, cerr)
			}
			continue
		}
		if verr != nil || cerr != nil {
			t.Errorf("%+v: validate %v, create %v", tt.in, verr, cerr)
			continue
		}
		if v.QueryUUID != cr.QueryUUID || v.Canonical != cr.QueryCanonical {
			t.Errorf("%+v: validate %+v, created %+v", tt.in, v, cr)
		}
	}
}
