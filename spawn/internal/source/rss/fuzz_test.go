package rss

import (
	"bytes"
	"net/url"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
)

// FuzzParse feeds arbitrary bytes through the same parse-and-convert path a
// fetched body takes: it must never panic, and every item it yields must
// have an id and bounded text.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><guid>1</guid><title>a</title><description>&lt;b&gt;x&lt;/b&gt;</description></item></channel></rss>`))
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>e</id><title>t</title><updated>2024-01-02T03:04:05Z</updated></entry></feed>`))
	f.Add([]byte(`{"version":"https://jsonfeed.org/version/1","items":[{"id":"1","content_text":"x"}]}`))
	f.Add([]byte(`<rss><channel><item><title>unterminated`))
	u, _ := url.Parse("http://feeds.example/x.xml")
	fd := newFeed(u, Options{}.withDefaults())
	f.Fuzz(func(t *testing.T, body []byte) {
		parsed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
		if err != nil {
			return
		}
		for _, it := range fd.items(parsed, time.Now()) {
			if it.ID == "" {
				t.Fatal("item without id")
			}
			if len(it.Text) > 64<<10 {
				t.Fatalf("text of %d bytes", len(it.Text))
			}
		}
	})
}
