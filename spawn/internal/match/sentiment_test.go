package match

import (
	"slices"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// TestQueries_SentimentAtom: a sentiment: atom tests the item's label and
// never stands in for a term that must occur; an item without a sentiment
// matches no sentiment: atom, and a negated one.
func TestQueries_SentimentAtom(t *testing.T) {
	subs := map[int64]*query.Query{}
	for id, src := range map[int64]string{
		1: "golang sentiment:negative",
		2: "golang -sentiment:negative",
		3: "golang lang:en sentiment:positive",
		4: "(golang OR rust) sentiment:neutral",
		5: "golang",
	} {
		q, err := query.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		subs[id] = q
	}
	ix := NewQueries(subs)
	for _, tc := range []struct {
		sentiment, lang string
		want            []int64
	}{
		{"negative", "en", []int64{1, 5}},
		{"positive", "en", []int64{2, 3, 5}},
		{"positive", "fr", []int64{2, 5}},
		{"neutral", "en", []int64{2, 4, 5}},
		{"", "de", []int64{2, 5}},
	} {
		var got []int64
		for _, h := range ix.Match(Item{Text: "golang errors are terrible", Lang: tc.lang, Sentiment: tc.sentiment}) {
			got = append(got, h.Subscriber)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("sentiment %q lang %q: matched %v, want %v", tc.sentiment, tc.lang, got, tc.want)
		}
	}
}
