package main

import (
	"context"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// TestRun_CrawlerExpandTakesTermsAsTheLanguageWritesThem ORs phrases,
// #tags, @users and from: into a crawler's query as the query language
// writes them (a term with a space and no quotes is a phrase too), and
// refuses, on one line, a term the language does not read.
func TestRun_CrawlerExpandTakesTermsAsTheLanguageWritesThem(t *testing.T) {
	cl := clustertest.New(t, clustertest.Options{Timings: timings})
	hub := cl.Hub.URL()
	bwctl(t, hub, "user", "add", "acme").ok(t)
	bwctl(t, hub, "crawler", "add", "--user=1", "--source=twitter", "--query=golang", "--disabled").ok(t)

	c := decodeJSON[api.Crawler](t, bwctl(t, hub, "crawler", "expand", "1", `"black widow"`, "#spiders", "@bob", "from:alice.bsky.social", "web crawler", "学习", "--json").ok(t).stdout)
	// The canonical form of the query the terms make, as the language
	// writes it.
	q, err := query.Parse(`golang OR "black widow" OR #spiders OR @bob OR from:alice.bsky.social OR "web crawler" OR 学习`)
	if err != nil {
		t.Fatal(err)
	}
	want := q.String()
	if c.QueryCanonical != want {
		t.Fatalf("expanded query %q, want %q", c.QueryCanonical, want)
	}
	if got, err := cl.Client.GetCrawler(context.Background(), 1); err != nil || got.QueryCanonical != want {
		t.Fatalf("the hub holds %q (%v)", got.QueryCanonical, err)
	}
	for _, bad := range []string{`"unclosed`, "(rust", "", "#"} {
		r := bwctl(t, hub, "crawler", "expand", "1", bad)
		if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "query") && !strings.Contains(r.stderr, "term") {
			t.Errorf("expand %q: exit %d, stderr %q; want a one-line refusal", bad, r.code, r.stderr)
		}
	}
	if got, _ := cl.Client.GetCrawler(context.Background(), 1); got.QueryCanonical != want {
		t.Fatalf("refused terms changed the query to %q", got.QueryCanonical)
	}
}
