package alert

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// slackTexts returns every text of a Slack message: the top-level one and
// the blocks'.
func slackTexts(t *testing.T, body string) []string {
	t.Helper()
	var m struct {
		Text   string `json:"text"`
		Blocks []struct {
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	out := []string{m.Text}
	for _, b := range m.Blocks {
		if b.Text != nil {
			out = append(out, b.Text.Text)
		}
	}
	return out
}

func TestSlackBody_EscapesMentionsEverywhere(t *testing.T) {
	f := newFixture(t, nil)
	r, err := f.svc.NewRule(context.Background(), api.AlertRuleCreate{CrawlerID: f.crawler.ID, Kind: api.AlertMatch,
		Query: `"<!channel>"`, Slack: "http://127.0.0.1:9/services/x"})
	if err != nil {
		t.Fatal(err)
	}
	id := f.crawler.ID
	c := content{RuleID: 1, Kind: api.AlertMatch, CrawlerID: &id, At: time.Now(), Observed: 2, Query: r.Query,
		TopTerms: []api.TermCount{{Term: "<!here>", Count: 3}},
		Sample:   []api.AlertSample{{Author: "<@U123>", Text: "ping <!everyone> & co", URL: "https://example.com/c?a=1&b=2"}}}
	ds, err := f.svc.deliveries(r, c)
	if err != nil {
		t.Fatal(err)
	}
	texts := slackTexts(t, ds[0].Body)
	if len(texts) != 4 {
		t.Fatalf("%d texts in %s, want the top-level one and three blocks", len(texts), ds[0].Body)
	}
	for i, s := range texts {
		// What is left once the link, the one markup the hub writes, is
		// taken out must hold no markup of its own.
		plain := strings.Replace(s, "<https://example.com/c?a=1&amp;b=2|open>", "", 1)
		if strings.ContainsAny(plain, "<>") || strings.Contains(strings.ReplaceAll(plain, "&amp;", ""), "& ") {
			t.Errorf("text %d is not escaped: %q", i, s)
		}
	}
	if !strings.Contains(texts[0], "&lt;!channel&gt;") {
		t.Errorf("the top-level text %q lacks the escaped query", texts[0])
	}
}
