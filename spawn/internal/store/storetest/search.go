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
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
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
			batch = append(batch, api.Comment{ID: id, CrawlerID: 1, Source: Source, Author: "alice", AuthorID: "did:plc:alice",
				Text: text, URL: "https://example.com/" + id, PublishedAt: base.AddDate(0, 0, d).Add(time.Duration(i) * time.Minute),
				FetchedAt: base})
			all = append([]string{id}, all...)
		}
		batch = append(batch, api.Comment{ID: fmt.Sprintf("other-%d", d), CrawlerID: 2, Source: Source, Text: "golang elsewhere",
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
		late := api.Comment{ID: "late", CrawlerID: 1, Source: Source, Text: "late", PublishedAt: base.AddDate(0, 0, 4).Add(30 * time.Minute), FetchedAt: base}
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

// queryCorpus is what CheckQuerySearch writes: texts in several scripts
// with words, phrases, tags and mentions, by authors known by handle and
// account id, in several languages.
var queryCorpus = []struct {
	text, author, authorID, lang string
}{
	{"Golang 1.23 is out: range over func! #golang", "gopher", "did:plc:gopher", "en"},
	{"I don't like Java’s generics, golang’s are fine", "Alice", "did:plc:alice", "en-GB"},
	{"new york, new york — so good they named it twice", "bob.bsky.social", "did:plc:bob", "en"},
	{"東京タワーに行った。学習golangも", "tanaka", "did:plc:tanaka", "ja"},
	{"Olá! golang e rust em São Paulo @gopher.bsky.social", "maria", "did:plc:maria", "pt-BR"},
	{"nothing to see here", "alice", "did:plc:alice2", ""},
	{"café—bar «golang» meetup", "Ålice", "", "fr"},
	{"e-mail me about c++ rocks", "@Gopher", "did:plc:gopher", "en"},
	{"GOLANG!!! new release", "carol", "12345", "en-US"},
	{"rust is not golang", "dave", "did:plc:dave", "en"},
}

// QuerySearchQueries are the queries CheckQuerySearch asks, each of which
// a store with an index may answer from it.
var QuerySearchQueries = []string{
	"golang", "GOLANG", `"new york"`, "#golang", "@gopher", "from:alice", "from:did:plc:gopher", "golang lang:en", "são lang:pt",
	"golang -rust", "golang OR java", "(golang OR rust) lang:en", `"named it" twice`, "東京", "学習", "são", "c", "mail",
	"from:ålice golang", "haystack", "golang lang:ja", `golang -"new release"`,
}

// CheckQuerySearch writes the corpus into crawlers 7 and 8 (which must
// hold none) over five days, then asks every query of
// QuerySearchQueries of crawler 7 twice: with the parsed query (which a
// store with a search index reads through it) and with the matcher alone
// (every comment read). Both answers must be the same comments in the
// same order, at every page size and through a range.
func CheckQuerySearch(t *testing.T, s SearchStore) {
	ctx := context.Background()
	base := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	var batch []api.Comment
	for day := range 5 {
		for i, c := range queryCorpus {
			for _, crawler := range []int64{7, 8} {
				batch = append(batch, api.Comment{ID: fmt.Sprintf("q%d-%d", day, i), CrawlerID: crawler, Source: Source,
					Author: c.author, AuthorID: c.authorID, Lang: c.lang, Text: c.text, URL: "https://example.com/q",
					PublishedAt: base.AddDate(0, 0, day).Add(time.Duration(i*37) * time.Minute), FetchedAt: base})
			}
		}
	}
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, text := range QuerySearchQueries {
		parsed, err := query.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		match := func(c *api.Comment) bool {
			_, ok := parsed.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang, Sentiment: api.SentimentLabel(c.Sentiment)})
			return ok
		}
		for _, r := range []store.Range{{}, {Since: base.AddDate(0, 0, 1).Add(time.Hour), Until: base.AddDate(0, 0, 3).Add(3 * time.Hour)}} {
			want, _ := SearchAll(t, s, 7, store.Search{Match: match, Limit: 1000, Range: r})
			for _, limit := range []int{1, 3, 100} {
				got, _ := SearchAll(t, s, 7, store.Search{Match: match, Query: parsed, Limit: limit, Range: r})
				if !slices.Equal(IDs(got), IDs(want)) {
					t.Errorf("%s (range %v, limit %d): %v, want %v", text, r, limit, IDs(got), IDs(want))
				}
			}
			if text == "haystack" && len(want) != 0 || text == "golang" && len(want) == 0 {
				t.Errorf("%s: %d matches: the corpus does not test what it should", text, len(want))
			}
		}
	}
}
