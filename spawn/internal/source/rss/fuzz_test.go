package rss

import (
	"bytes"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
)

// FuzzParse feeds arbitrary bytes through the same parse-and-convert path a
// fetched body takes: it must never panic, every item it yields must have
// an id and bounded text, and the feed's <ttl> must read as a bounded
// duration.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><guid>1</guid><title>a</title><description>&lt;b&gt;x&lt;/b&gt;</description></item></channel></rss>`))
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>e</id><title>t</title><updated>2024-01-02T03:04:05Z</updated></entry></feed>`))
	f.Add([]byte(`{"version":"https://jsonfeed.org/version/1","items":[{"id":"1","content_text":"x"}]}`))
	f.Add([]byte(`<rss><channel><item><title>unterminated`))
	f.Add([]byte(`<rss version="2.0"><channel><ttl>99999999999999</ttl><item><guid>1</guid></item></channel></rss>`))
	u, _ := url.Parse("http://feeds.example/x.xml")
	opts := Options{}.withDefaults()
	fd := newFeed(u, opts, newHostLimiter(opts.HostDelay))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := gofeed.NewParser()
		p.KeepOriginalFeed = true
		parsed, err := p.Parse(bytes.NewReader(body))
		if err != nil {
			return
		}
		if ttl := feedTTL(parsed); ttl < 0 || ttl > maxCacheHint {
			t.Fatalf("ttl %v out of bounds", ttl)
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

// FuzzCacheHeaders reads arbitrary Cache-Control, Age, Expires, Date and
// Retry-After values: never a panic, never a negative wait or one past
// maxCacheHint.
func FuzzCacheHeaders(f *testing.F) {
	f.Add("public, max-age=300", "10", "", "", "120")
	f.Add("no-cache, max-age=60", "", "Mon, 01 Jan 2024 00:00:00 GMT", "Sun, 31 Dec 2023 00:00:00 GMT", "Mon, 01 Jan 2024 00:00:00 GMT")
	f.Add(`max-age="9999999999999999999"`, "-5", "0", "", "99999999999999")
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, cacheControl, age, expires, date, retryAfter string) {
		h := http.Header{}
		for k, v := range map[string]string{"Cache-Control": cacheControl, "Age": age, "Expires": expires, "Date": date} {
			if v != "" {
				h.Set(k, v)
			}
		}
		if _, d := cacheLifetime(h, now); d < 0 || d > maxCacheHint {
			t.Fatalf("cacheLifetime(%v) = %v", h, d)
		}
		if d := parseRetryAfter(retryAfter, now); d < 0 || d > maxCacheHint {
			t.Fatalf("parseRetryAfter(%q) = %v", retryAfter, d)
		}
	})
}
