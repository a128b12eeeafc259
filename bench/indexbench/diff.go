package main

import (
	"encoding/json"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blevesearch/bleve/v2"
)

// example is one comment and one query run through the query language and
// both Bleve variants.
type example struct {
	text, author, authorID, lang string
	q                            string
}

var examples = []example{
	{text: "Visit example.com today", q: "example"},
	{text: "I don't know", q: "don"},
	{text: "Golang's new release", q: "golang"},
	{text: "pi is 3.14", q: "3"},
	{text: "the release is out", q: "the"},
	{text: "golang rocks", q: "#golang"},
	{text: "a#golang b", q: "#golang"},
	{text: "lorem ipsum dolor sit amet  needle", q: `"amet needle"`},
	{text: "black, widow", q: `"black widow"`},
	{text: "c rocks", q: `"c++ rocks"`},
	{text: "東京タワーに行った", q: "東京"},
	{text: "café—bar", q: "café"},
	{text: "hi @gopher.bsky.social", q: "@gopher"},
	{text: "hello", author: "Alice", authorID: "did:plc:abc123", q: "hello from:did:plc:abc123"},
	{text: "hello", author: "@Alice", q: "hello from:alice"},
	{text: "hello", lang: "en-GB", q: "hello lang:en"},
	{text: "go_lang", q: "go"},
	{text: "GOLANG!", q: "golang"},
	{text: "e-mail me", q: "mail"},
	{text: "¿Qué tal?", q: "qué"},
	{text: "I love “golang”", q: "golang"},
}

func diffMode() {
	idx := map[string]bleve.Index{}
	for _, v := range []string{"standard", "ql"} {
		i, err := bleve.NewMemOnly(newMapping(v))
		if err != nil {
			log.Fatal(err)
		}
		b := i.NewBatch()
		for n, e := range examples {
			c := api.Comment{ID: fmt.Sprint(n + 1), Text: e.text, Author: e.author, AuthorID: e.authorID, Lang: e.lang,
				PublishedAt: time.Unix(int64(n), 0)}
			line, _ := jsonMarshal(&c)
			if err := b.Index(c.ID, doc(v, &c, line)); err != nil {
				log.Fatal(err)
			}
		}
		if err := i.Batch(b); err != nil {
			log.Fatal(err)
		}
		idx[v] = i
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Println("| # | comment | query | query language (scan) | Bleve, standard analyzer | Bleve, its words + Query.Match |")
	fmt.Println("|---|---|---|---|---|---|")
	for n, e := range examples {
		id := fmt.Sprint(n + 1)
		q, err := query.Parse(e.q)
		if err != nil {
			log.Fatalf("%s: %v", e.q, err)
		}
		_, ql := q.Match(query.Doc{Text: e.text, Author: e.author, AuthorID: e.authorID, Lang: e.lang})
		req := bleve.NewSearchRequestOptions(direct(q.Root()), len(examples), 0, false)
		res, err := idx["standard"].Search(req)
		if err != nil {
			log.Fatal(err)
		}
		var std bool
		for _, h := range res.Hits {
			std = std || h.ID == id
		}
		r := search(idx["ql"], q, len(examples), false)
		qlIdx := slices.Contains(r.ids, id)
		fields := fmt.Sprintf("%q", e.text)
		if e.author != "" {
			fields += fmt.Sprintf(", author %q", e.author)
		}
		if e.authorID != "" {
			fields += fmt.Sprintf(", author_id %q", e.authorID)
		}
		if e.lang != "" {
			fields += fmt.Sprintf(", lang %q", e.lang)
		}
		mark := func(b bool) string {
			if b != ql {
				return "**" + yes(b) + "**"
			}
			return yes(b)
		}
		fmt.Printf("| %d | %s | `%s` | %s | %s | %s |\n", n+1, fields, e.q, yes(ql), mark(std), mark(qlIdx))
	}
}

func jsonMarshal(c *api.Comment) ([]byte, error) { return json.Marshal(c) }
