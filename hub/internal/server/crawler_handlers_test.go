package server

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// TestListCrawlers_Pages reads the crawler list a page at a time and gets
// every crawler once, in id order, as the unpaged list has them; bad page
// parameters are refused.
func TestListCrawlers_Pages(t *testing.T) {
	ts := newTestServer(t, 0)
	seedCrawlers(t, ts, 7, 0, 0)
	var all []api.Crawler
	ts.getJSON(t, "/v1/crawlers", &all)
	if len(all) != 7 {
		t.Fatalf("listed %d crawlers, want 7", len(all))
	}
	var paged []api.Crawler
	after, pages := int64(0), 0
	for {
		var page []api.Crawler
		ts.getJSON(t, fmt.Sprintf("/v1/crawlers?after=%d&limit=3", after), &page)
		if len(page) == 0 {
			break
		}
		if len(page) > 3 {
			t.Fatalf("a page of %d crawlers, limit 3", len(page))
		}
		paged = append(paged, page...)
		after = page[len(page)-1].ID
		pages++
	}
	if pages != 3 || len(paged) != len(all) {
		t.Fatalf("%d pages of %d crawlers in all, want 3 pages of %d", pages, len(paged), len(all))
	}
	for i := range all {
		if paged[i].ID != all[i].ID {
			t.Fatalf("crawler %d of the pages is %d, of the list %d", i, paged[i].ID, all[i].ID)
		}
	}
	for _, path := range []string{"/v1/crawlers?limit=0", "/v1/crawlers?limit=10001", "/v1/crawlers?after=-1", "/v1/crawlers?after=x"} {
		resp, body := ts.get(t, path, testAdminToken)
		if resp.StatusCode != http.StatusBadRequest || !regexp.MustCompile(`limit 1 to 10000`).MatchString(body) {
			t.Errorf("GET %s: %d %s, want 400", path, resp.StatusCode, body)
		}
	}
}

// TestCanonical_AKindsDeclarationShapesItsQueries checks that the hub asks
// a source kind's declaration, naming no kind itself: a kind a spawn
// brought (learned at registration) with a field its queries must name in
// every branch, and a kind nobody declared.
func TestCanonical_AKindsDeclarationShapesItsQueries(t *testing.T) {
	ts := newTestServer(t, 0)
	forum := api.SourceInfo{Name: "forum", Title: "A forum", Query: api.QueryLanguage, QueryHint: "board:golang generics",
		QueryFields: []string{"board"}, RequiredField: "board", TombstoneLifetime: api.Duration(time.Hour), Scope: api.ScopeNode}
	if _, err := ts.Hub.Sources().Learn([]api.SourceInfo{forum}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		source, query, canonical, refused string
	}{
		{"forum", "board:GoLang generics", "board:golang generics", ""},
		{"forum", "(board:golang OR board:rust) release", "(board:golang OR board:rust) release", ""},
		{"forum", "generics", "", "must name its board in every branch"},
		{"forum", "board:golang generics OR async", "", "must name its board in every branch"},
		{"forum", "generics -board:golang", "", "must name its board in every branch"},
		{"myspace", "golang", "", `unknown source "myspace"`},
	} {
		var row sqlstore.Crawler
		err := ts.Server.canonical(&row, tc.source, []string{tc.query}, nil)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s %q: %v", tc.source, tc.query, err)
		case tc.refused == "" && row.CanonicalQuery() != tc.canonical:
			t.Errorf("%s %q: canonical %q, want %q", tc.source, tc.query, row.CanonicalQuery(), tc.canonical)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s %q: %v, want an error saying %q", tc.source, tc.query, err, tc.refused)
		}
	}
}
