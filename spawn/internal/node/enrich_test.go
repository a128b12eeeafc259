package node

import (
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/langid"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// storedOf waits until st holds want comments of crawler id and returns
// them by comment id.
func storedOf(t *testing.T, st *memStore, id int64, want int) map[string]api.Comment {
	t.Helper()
	testkit.WaitFor(t, waitTimeout, "the comments stored", func() bool { return st.count(id) >= want })
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]api.Comment{}
	for k, c := range st.rows[id] {
		out[k] = c
	}
	if len(out) != want {
		t.Fatalf("%d comments stored, want %d", len(out), want)
	}
	return out
}

// detectorLoaded waits until the language detector's models are loaded:
// until then it is unsure of every text.
func detectorLoaded(t *testing.T) {
	t.Helper()
	select {
	case <-langid.Default().Ready():
	case <-time.After(2 * time.Minute):
		t.Fatal("the language models did not load")
	}
}

func item(id, text, lang string) source.Item {
	return source.Item{ID: id, Text: text, Lang: lang, PublishedAt: time.Now(), FetchedAt: time.Now()}
}

func TestNode_CommentsCarrySentimentAndDetectedLanguage(t *testing.T) {
	for _, first := range []bool{false, true} {
		name := "scored after matching"
		q := "golang"
		if first {
			name, q = "scored before matching (lang: in the query)", "golang -lang:fr"
		}
		t.Run(name, func(t *testing.T) {
			detectorLoaded(t)
			n, kind, st := attachedNode(t)
			s := spec(1, 1, q)
			s.Keywords = []string{q}
			if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{s}}); err != nil {
				t.Fatal(err)
			}
			kind.send(q,
				item("pos", "I love golang, the new release is wonderful!", "en"),
				item("neg", "golang build broke again and the error messages are awful, I hate this", ""),
				item("de", "golang ist eine schöne Sprache und macht mir viel Freude", "de"),
				item("ja", "golang の新しいリリースはとても良いです。みんなに勧めたいと思います。", ""),
				item("short", "golang", ""),
			)
			got := storedOf(t, st, 1, 5)
			if c := got["pos"]; c.Sentiment == nil || c.Sentiment.Label != api.SentimentPositive || c.LangDetected || c.Lang != "en" {
				t.Errorf("pos: %+v lang %q detected %v", c.Sentiment, c.Lang, c.LangDetected)
			}
			if c := got["neg"]; c.Sentiment == nil || c.Sentiment.Label != api.SentimentNegative || !c.LangDetected || c.Lang != "en" {
				t.Errorf("neg: %+v lang %q detected %v", c.Sentiment, c.Lang, c.LangDetected)
			}
			// A language without a scorer: no sentiment, never a guess.
			if c := got["de"]; c.Sentiment != nil || c.LangDetected || c.Lang != "de" {
				t.Errorf("de: %+v lang %q detected %v", c.Sentiment, c.Lang, c.LangDetected)
			}
			if c := got["ja"]; c.Sentiment != nil || !c.LangDetected || c.Lang != "ja" {
				t.Errorf("ja: %+v lang %q detected %v", c.Sentiment, c.Lang, c.LangDetected)
			}
			// Too little to tell: no language, so no sentiment.
			if c := got["short"]; c.Sentiment != nil || c.LangDetected || c.Lang != "" {
				t.Errorf("short: %+v lang %q detected %v", c.Sentiment, c.Lang, c.LangDetected)
			}
		})
	}
}

func TestNode_SentimentAtomKeepsOnlyItsLabel(t *testing.T) {
	detectorLoaded(t)
	n, kind, st := attachedNode(t)
	s := spec(1, 1, "golang sentiment:negative")
	s.Keywords = s.Query
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{s}}); err != nil {
		t.Fatal(err)
	}
	kind.send("golang sentiment:negative",
		item("pos", "golang is great, I love it", "en"),
		item("neg", "golang compile errors are terrible and I hate them", "en"),
		item("neg2", "this golang bug is awful, worst day ever", ""),
		item("de", "golang ist schrecklich", "de"),
		item("other", "rust is terrible", "en"),
	)
	got := storedOf(t, st, 1, 2)
	for _, id := range []string{"neg", "neg2"} {
		if c, ok := got[id]; !ok || c.Sentiment.Label != api.SentimentNegative {
			t.Errorf("%s: %+v %v", id, c.Sentiment, ok)
		}
	}
}

func TestNode_NoSentimentLeavesCommentsAsTheSourceSaid(t *testing.T) {
	st := &memStore{}
	n, kind := attachedNodeConfig(t, Config{Store: st, NoSentiment: true})
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "golang")}}); err != nil {
		t.Fatal(err)
	}
	kind.send("golang", item("a", "I love golang so much, it is wonderful", ""))
	if c := storedOf(t, st, 1, 1)["a"]; c.Sentiment != nil || c.Lang != "" || c.LangDetected {
		t.Fatalf("%+v", c)
	}
}

// TestNode_OneItemManySubscribers: an item that matches several
// subscribers is enriched once, and each of its comments carries what
// was found.
func TestNode_OneItemManySubscribers(t *testing.T) {
	detectorLoaded(t)
	n, kind, st := attachedNode(t)
	var specs []api.SubscriberSpec
	for id := int64(1); id <= 3; id++ {
		specs = append(specs, spec(id, 1, "golang"))
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs}); err != nil {
		t.Fatal(err)
	}
	kind.send("golang",
		item("neg", "golang build broke again and the error messages are awful, I hate this", ""),
		item("pos", "I love golang, the new release is wonderful!", "en"),
	)
	for id := int64(1); id <= 3; id++ {
		got := storedOf(t, st, id, 2)
		if c := got["neg"]; c.Sentiment == nil || c.Sentiment.Label != api.SentimentNegative || !c.LangDetected || c.Lang != "en" {
			t.Errorf("crawler %d neg: %+v lang %q detected %v", id, c.Sentiment, c.Lang, c.LangDetected)
		}
		if c := got["pos"]; c.Sentiment == nil || c.Sentiment.Label != api.SentimentPositive || c.LangDetected || c.Lang != "en" {
			t.Errorf("crawler %d pos: %+v lang %q detected %v", id, c.Sentiment, c.Lang, c.LangDetected)
		}
	}
}

// TestEnrichComments: each run of comments of one item takes what its
// first comment's text says; comments enriched before matching keep
// theirs; one item alone and many items (in parallel) end the same.
func TestEnrichComments(t *testing.T) {
	detectorLoaded(t)
	n := &Node{enrich: newEnricher(Config{}, nil)}
	if n.enrich == nil {
		t.Fatal("no enricher")
	}
	neg := "golang build broke again and the error messages are awful, I hate this"
	pos := "I love golang, the new release is wonderful!"
	kept := &api.Sentiment{Label: api.SentimentNeutral}
	c := func(id, text, lang string, enriched bool) pending {
		p := pending{comment: api.Comment{ID: id, Text: text, Lang: lang}, enriched: enriched}
		if enriched {
			p.comment.Sentiment = kept
		}
		return p
	}
	for _, tc := range []struct {
		name string
		ps   []pending
	}{
		{"one item", []pending{c("a", neg, "", false), c("a", neg, "", false), c("a", neg, "", false)}},
		{"many items", []pending{
			c("a", neg, "", false), c("a", neg, "", false), c("b", pos, "en", true), c("b", pos, "en", true),
			c("c", pos, "en", false), c("a", neg, "", false), c("d", pos, "", false), c("d", pos, "", false),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.enrichComments(tc.ps)
			for i, p := range tc.ps {
				if !p.enriched {
					t.Fatalf("comment %d not enriched", i)
				}
				s := p.comment.Sentiment
				switch p.comment.ID {
				case "a":
					if s == nil || s.Label != api.SentimentNegative || p.comment.Lang != "en" || !p.comment.LangDetected {
						t.Errorf("comment %d: %+v", i, p.comment)
					}
				case "b":
					if s != kept || p.comment.LangDetected {
						t.Errorf("comment %d (enriched before) changed: %+v", i, p.comment)
					}
				case "c", "d":
					if s == nil || s.Label != api.SentimentPositive || p.comment.Lang != "en" || p.comment.LangDetected != (p.comment.ID == "d") {
						t.Errorf("comment %d: %+v", i, p.comment)
					}
				}
			}
		})
	}
}
