package rss

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// TestFeed_HostileItemFieldsAreBounded feeds items whose fields a hostile
// or broken feed controls: a 1 MiB GUID, script and data links, a year-0
// date and markup hidden in an attribute.
func TestFeed_HostileItemFieldsAreBounded(t *testing.T) {
	hugeGUID := strings.Repeat("g", 1<<20)
	doc := fmt.Sprintf(`<rss version="2.0"><channel><title>t</title>
<item><title>huge id</title><guid>%s</guid><link>https://example.com/ok</link></item>
<item><title>script link</title><guid>js</guid><link>javascript:alert(1)</link></item>
<item><title>data link</title><guid>data</guid><link>data:text/html,x</link></item>
<item><title>year zero</title><guid>y0</guid><pubDate>Sat, 01 Jan 0000 00:00:00 +0000</pubDate></item>
<item><title>attribute</title><guid>attr</guid><description>&lt;a title="x&gt;y"&gt;golang&lt;/a&gt;</description></item>
</channel></rss>`, hugeGUID)
	fs := newFeedServer(t, doc)
	_, rec := start(t, testOptions(), fs.URL)
	testkit.WaitFor(t, waitDeadline, "5 items", func() bool { return len(rec.all()) == 5 })
	byTitle := map[string]source.Item{}
	for _, it := range rec.all() {
		if len(it.ID) > source.MaxIDBytes {
			t.Errorf("item id of %d bytes stored", len(it.ID))
		}
		title, _, _ := strings.Cut(it.Text, "\n")
		byTitle[title] = it
	}
	if it := byTitle["huge id"]; it.URL != "https://example.com/ok" || it.ID != source.ItemID(hugeGUID) {
		t.Errorf("huge id item: id %.20q url %q", it.ID, it.URL)
	}
	for _, title := range []string{"script link", "data link"} {
		if u := byTitle[title].URL; u != "" {
			t.Errorf("%s: url %q kept", title, u)
		}
	}
	if p := byTitle["year zero"].PublishedAt; p.Before(source.EarliestPublished) || time.Since(p) > time.Minute {
		t.Errorf("year-0 item published at %v, want its first-seen time", p)
	}
	if text := byTitle["attribute"].Text; text != "attribute\ngolang" {
		t.Errorf("attribute item text %q", text)
	}
}

// TestFeed_ItemsCarryTheFeedLanguage reads the channel's <language> (RSS)
// and xml:lang (Atom) into every item's language, lowercased; a value that
// is no language tag is dropped.
func TestFeed_ItemsCarryTheFeedLanguage(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"rss", `<rss version="2.0"><channel><title>t</title><language>en-US</language>
<item><title>a</title><guid>a</guid></item></channel></rss>`, "en-us"},
		{"atom", `<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="de"><title>t</title>
<entry><title>a</title><id>a</id></entry></feed>`, "de"},
		{"not a tag", `<rss version="2.0"><channel><title>t</title><language>english please</language>
<item><title>a</title><guid>a</guid></item></channel></rss>`, ""},
		{"none", `<rss version="2.0"><channel><title>t</title>
<item><title>a</title><guid>a</guid></item></channel></rss>`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFeedServer(t, tc.doc)
			_, rec := start(t, testOptions(), fs.URL)
			testkit.WaitFor(t, waitDeadline, "item", func() bool { return len(rec.all()) == 1 })
			if got := rec.all()[0].Lang; got != tc.want {
				t.Fatalf("lang %q, want %q", got, tc.want)
			}
		})
	}
}
