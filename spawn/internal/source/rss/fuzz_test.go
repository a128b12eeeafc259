package rss

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// FuzzParse feeds arbitrary bytes, under an arbitrary Content-Type,
// through the same decode-trim-parse-convert path a fetched body takes: it
// must never panic, every item it yields must have an id, bounded and
// valid UTF-8 text and http(s) links, and the feed's <ttl> must read as a
// bounded duration. The seeds include every recorded feed of the corpus;
// some are large, so give the fuzzer a short minimisation budget:
//
//	go test -run '^$' -fuzz FuzzParse -fuzzminimizetime 5s ./spawn/internal/source/rss/
func FuzzParse(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><guid>1</guid><title>a</title><description>&lt;b&gt;x&lt;/b&gt;</description></item></channel></rss>`), "")
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>e</id><title>t</title><updated>2024-01-02T03:04:05Z</updated></entry></feed>`), "application/atom+xml")
	f.Add([]byte(`{"version":"https://jsonfeed.org/version/1","items":[{"id":"1","content_text":"x"}]}`), "application/feed+json")
	f.Add([]byte(`<rss><channel><item><title>unterminated`), "")
	f.Add([]byte(`<rss version="2.0"><channel><ttl>99999999999999</ttl><item><guid>1</guid></item></channel></rss>`), "")
	f.Add([]byte("<?xml version=\"1.0\" encoding=\"utf-8\"?><rss><channel><item><title>Caf\xe9 \xff</title></item></channel></rss>"), "text/xml; charset=windows-1251")
	files, err := filepath.Glob(filepath.Join(corpusDir, "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		if (strings.HasSuffix(name, ".xml") || strings.HasSuffix(name, ".json")) && filepath.Base(name) != "expected.json" {
			body, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(body, "")
			f.Add(body, "text/xml; charset=ISO-8859-1")
		}
	}
	u, _ := url.Parse("http://feeds.example/x.xml")
	opts := Options{}.withDefaults()
	fd := newFeed(u, opts, newHostLimiter(opts.HostDelay))
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		parsed, _, dec, err := parseDocument(body, contentType)
		if !utf8.Valid(dec.body) {
			t.Fatalf("decoded body is not UTF-8 (read as %s from %s)", dec.charset, dec.from)
		}
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
			if len(it.Text) > 64<<10 || !utf8.ValidString(it.Text) {
				t.Fatalf("text of %d bytes, valid UTF-8 %v", len(it.Text), utf8.ValidString(it.Text))
			}
			if len(it.Links) > maxLinks {
				t.Fatalf("%d links", len(it.Links))
			}
			for _, l := range it.Links {
				if source.WebURL(l) != l {
					t.Fatalf("link %q is no web URL", l)
				}
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
