package hackernews

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServer_ItemsNullsAndDeletions(t *testing.T) {
	s := Start(t, Options{})
	story := s.Add(Item{Type: "story", By: "pg", Title: "t", Time: 1})[0]
	c := s.Add(Item{Type: "comment", By: "a", Parent: story, Text: "x", Time: 2})[0]
	if _, body := get(t, s.URL()+"/v0/maxitem.json"); body != "2" {
		t.Errorf("maxitem %q", body)
	}
	if _, body := get(t, s.URL()+"/v0/item/99.json"); body != "null" {
		t.Errorf("missing item %q, want null", body)
	}
	s.NullFor(c, 1)
	if _, body := get(t, s.URL()+"/v0/item/2.json?print=pretty"); body != "null" {
		t.Errorf("item just created %q, want null once", body)
	}
	if _, body := get(t, s.URL()+"/v0/item/2.json"); !strings.Contains(body, `"parent":1`) {
		t.Errorf("item %q", body)
	}
	s.Delete(c)
	if _, body := get(t, s.URL()+"/v0/item/2.json"); body != `{"id":2,"deleted":true,"type":"comment","time":2,"parent":1}` {
		t.Errorf("deleted item %q", body)
	}
	_, body := get(t, s.URL()+"/v0/updates.json")
	var u struct {
		Items    []int64  `json:"items"`
		Profiles []string `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(body), &u); err != nil || len(u.Items) == 0 || u.Items[0] != c || u.Profiles == nil {
		t.Errorf("updates %q", body)
	}
}

func TestServer_SearchPagesStopAtAThousandHits(t *testing.T) {
	s := Start(t, Options{})
	items := make([]Item, 1200)
	for i := range items {
		items[i] = Item{Type: "comment", By: "a", Parent: 0, Text: "x", Time: int64(1000 + i)}
	}
	items[0] = Item{Type: "story", By: "a", Title: "root", Time: 999}
	s.Add(items...)
	status, body := get(t, s.URL()+"/api/v1/search_by_date?tags=(story,comment)&numericFilters=created_at_i%3E1100&hitsPerPage=500&page=1")
	var page struct {
		Hits   []map[string]any `json:"hits"`
		NbHits int              `json:"nbHits"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Hits) != 500 || page.NbHits != 1099 {
		t.Fatalf("page 1: %d %d hits of %d", status, len(page.Hits), page.NbHits)
	}
	if got := page.Hits[0]["created_at_i"].(float64); got != 1699 {
		t.Errorf("page 1 starts at %v, want newest first", got)
	}
	status, body = get(t, s.URL()+"/api/v1/search_by_date?tags=comment&hitsPerPage=500&page=2")
	if status != http.StatusBadRequest || !strings.Contains(body, "only fetch the 1000 hits") {
		t.Errorf("past 1000 hits: %d %s", status, body)
	}
}
