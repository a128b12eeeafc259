package server

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
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
