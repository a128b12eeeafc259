package feedserver

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// staticETag is the one version every document of StartStatic has.
const staticETag = `"v1"`

// BigRSS returns an RSS 2.0 document titled name with n items, newest
// first: GUIDs name-n down to name-1, published a second apart after
// 2026-01-01. An item takes about 85 bytes, so a test can build a feed
// of megabytes to see what a huge document does to a crawler.
func BigRSS(name string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>` + name + `</title>`)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := n; i > 0; i-- {
		fmt.Fprintf(&b, "<item><guid>%s-%d</guid><pubDate>%s</pubDate></item>\n", name, i, base.Add(time.Duration(i)*time.Second).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	return b.Bytes()
}

// StartStatic serves docs, keyed by URL path, on a free loopback port
// until the test ends and returns the base URL. Unlike Start it builds
// nothing per request: the documents are fixed, all share one ETag and a
// request that sends it back gets 304, so a large document is read in
// full only once per crawler. Other paths are 404.
func StartStatic(tb fakehttp.TB, docs map[string][]byte) string {
	tb.Helper()
	return fakehttp.Serve(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", staticETag)
		if r.Header.Get("If-None-Match") == staticETag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(doc)
	}), nil)
}
