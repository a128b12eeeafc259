package e2e

import (
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// TestSentiment_FeedCommentsCarrySentimentAndDetectedLanguage: a feed that
// names no language; its English items are scored, its German and
// Japanese ones get their language detected and no sentiment, and a
// crawler of "golang sentiment:negative" stores only the negative one.
func TestSentiment_FeedCommentsCarrySentimentAndDetectedLanguage(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 1})
	items := map[string]string{
		"pos": "golang 1.30 is wonderful, I love the new release and the great tooling",
		"neg": "golang builds broke again today, the errors are awful and I hate this mess",
		"de":  "golang ist eine schreckliche Sprache und ich hasse sie wirklich sehr",
		"ja":  "golang の新しいリリースはとても良いです。みんなに勧めたいと思います。",
	}
	for id, title := range items {
		c.Feeds.Publish("news", feedserver.Item{GUID: id, Title: title})
	}
	u := c.user(0)
	all := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, []string{"golang"}, 0)
	neg := c.rssCrawler(u.ID, []string{c.FeedURL("news")}, []string{"golang sentiment:negative"}, 0)
	if neg.Keywords[0] != "golang sentiment:negative" {
		t.Fatalf("filter stored as %q", neg.Keywords)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the feed's comments", func() bool { return len(c.storedComments(all.ID)) == len(items) })
	byText := map[string]api.Comment{}
	for _, cm := range c.storedComments(all.ID) {
		byText[cm.Text] = cm
	}
	check := func(id, lang, label string) {
		t.Helper()
		cm, ok := byText[items[id]]
		if !ok {
			t.Fatalf("%s: not stored", id)
		}
		if cm.Lang != lang || !cm.LangDetected {
			t.Errorf("%s: lang %q detected %v, want %q detected", id, cm.Lang, cm.LangDetected, lang)
		}
		if got := api.SentimentLabel(cm.Sentiment); got != label {
			t.Errorf("%s: sentiment %+v, want %q", id, cm.Sentiment, label)
		}
		if s := cm.Sentiment; s != nil && (s.Score < -1 || s.Score > 1) {
			t.Errorf("%s: score %v", id, s.Score)
		}
	}
	check("pos", "en", api.SentimentPositive)
	check("neg", "en", api.SentimentNegative)
	check("de", "de", "") // a language without a scorer: no sentiment
	check("ja", "ja", "")
	testkit.WaitFor(t, clustertest.WaitTimeout, "the negative comment", func() bool { return len(c.storedComments(neg.ID)) >= 1 })
	if got := c.storedComments(neg.ID); len(got) != 1 || got[0].Text != items["neg"] {
		t.Fatalf("golang sentiment:negative stored %+v", got)
	}
}
