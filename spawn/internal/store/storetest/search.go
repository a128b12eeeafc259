// Package storetest holds the checks every comment store passes, run by
// each store's own tests against a real instance (a directory, a Cassandra
// keyspace): searching (CheckSearch), taking comments back
// (CheckRetractor), and the search benchmarks both stores share
// (BenchSearch).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// SearchStore is a store that searches.
type SearchStore interface {
	store.Store
	store.Searcher
}

// SearchAll pages through a search and returns every match and the pages
// it took. It fails the test when a page holds more than its limit or the
// search does not end.
func SearchAll(t testing.TB, s store.Searcher, crawler int64, q store.Search) ([]api.Comment, int) {
	t.Helper()
	var all []api.Comment
	for pages := 1; ; pages++ {
		p, err := s.Search(context.Background(), crawler, q)
		if err != nil {
			t.Fatalf("Search(cursor %q): %v", q.Cursor, err)
		}
		if len(p.Comments) > max(q.Limit, 1) {
			t.Fatalf("a page of %d holds %d comments", q.Limit, len(p.Comments))
		}
		all = append(all, p.Comments...)
		if p.Next == "" {
			return all, pages
		}
		if pages > 10_000 {
			t.Fatal("the search does not end")
		}
		q.Cursor = p.Next
	}
}

// IDs lists the comments' ids.
func IDs(cs []api.Comment) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// CheckSearch writes comments of crawlers 1 and 2 (which must hold none)
// on four days, the oldest written first and each day in published order,
// and checks searches of crawler 1: newest day first and newest comment
// first within a day, the same matches whatever the page size and scan
// bound, ranges, and a cursor it did not make refused.
func CheckSearch(t *testing.T, s SearchStore) {
	ctx := context.Background()
	base := time.Date(2024, 3, 10, 6, 0, 0, 0, time.UTC)
	perDay := map[int]int{0: 5, 1: 1, 3: 9, 4: 4} // day 2 has none
	var all []string                              // newest first
	for _, d := range []int{0, 1, 3, 4} {
		var batch []api.Comment
		for i := range perDay[d] {
			id := fmt.Sprintf("d%d-%d", d, i)
			text := "plain words"
			if i%2 == 0 {
				text = "golang release " + id
			}
			batch = append(batch, api.Comment{ID: id, CrawlerID: 1, Source: api.SourceBluesky, Author: "alice", AuthorID: "did:plc:alice",
				Text: text, URL: "https://example.com/" + id, PublishedAt: base.AddDate(0, 0, d).Add(time.Duration(i) * time.Minute),
				FetchedAt: base})
			all = append([]string{id}, all...)
		}
		batch = append(batch, api.Comment{ID: fmt.Sprintf("other-%d", d), CrawlerID: 2, Source: api.SourceBluesky, Text: "golang elsewhere",
			PublishedAt: base.AddDate(0, 0, d), FetchedAt: base})
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	golang := func(c *api.Comment) bool { return strings.Contains(c.Text, "golang") }
	var golangIDs []string
	for _, id := range all {
		if i := id[len(id)-1] - '0'; i%2 == 0 {
			golangIDs = append(golangIDs, id)
		}
	}

	t.Run("every comment, newest first, any page size", func(t *testing.T) {
		for _, limit := range []int{1, 3, 9, 100} {
			got, pages := SearchAll(t, s, 1, store.Search{Limit: limit})
			if !slices.Equal(IDs(got), all) {
				t.Fatalf("limit %d: %v, want %v", limit, IDs(got), all)
			}
			if want := (len(all) + limit - 1) / limit; pages < want {
				t.Fatalf("limit %d: %d pages, want at least %d", limit, pages, want)
			}
		}
	})
	t.Run("matches only, whatever the scan bound", func(t *testing.T) {
		for _, scan := range []int{1, 2, 5, 1000} {
			got, _ := SearchAll(t, s, 1, store.Search{Match: golang, Limit: 2, MaxScan: scan})
			if !slices.Equal(IDs(got), golangIDs) {
				t.Fatalf("scan bound %d: %v, want %v", scan, IDs(got), golangIDs)
			}
		}
	})
	t.Run("a page stops at the scan bound with a cursor", func(t *testing.T) {
		p, err := s.Search(ctx, 1, store.Search{Match: func(*api.Comment) bool { return false }, Limit: 10, MaxScan: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Comments) != 0 || p.Next == "" || p.Scanned != 3 {
			t.Fatalf("page %+v: want no match, 3 scanned and a cursor", p)
		}
	})
	t.Run("range", func(t *testing.T) {
		r := store.Range{Since: base.AddDate(0, 0, 1), Until: base.AddDate(0, 0, 3).Add(2 * time.Minute)}
		got, _ := SearchAll(t, s, 1, store.Search{Limit: 2, Range: r})
		want := []string{"d3-1", "d3-0", "d1-0"}
		if !slices.Equal(IDs(got), want) {
			t.Fatalf("%v, want %v", IDs(got), want)
		}
	})
	t.Run("a crawler with no comments", func(t *testing.T) {
		got, pages := SearchAll(t, s, 99, store.Search{Limit: 5})
		if len(got) != 0 || pages != 1 {
			t.Fatalf("%d comments in %d pages", len(got), pages)
		}
	})
	t.Run("a cursor it did not make", func(t *testing.T) {
		for _, cur := range []string{"garbage", "eyJkIjoieCJ9"} {
			if _, err := s.Search(ctx, 1, store.Search{Cursor: cur, Limit: 5}); !errors.Is(err, store.ErrCursor) {
				t.Fatalf("cursor %q: %v, want ErrCursor", cur, err)
			}
		}
	})
	t.Run("comments written after the first page are not read twice", func(t *testing.T) {
		p, err := s.Search(ctx, 1, store.Search{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		late := api.Comment{ID: "late", CrawlerID: 1, Source: api.SourceBluesky, Text: "late", PublishedAt: base.AddDate(0, 0, 4).Add(30 * time.Minute), FetchedAt: base}
		if err := s.Write(ctx, []api.Comment{late}); err != nil {
			t.Fatal(err)
		}
		rest, _ := SearchAll(t, s, 1, store.Search{Limit: 2, Cursor: p.Next})
		got := append(IDs(p.Comments), IDs(rest)...)
		if !slices.Equal(got, all) {
			t.Fatalf("%v, want %v", got, all)
		}
	})
}
