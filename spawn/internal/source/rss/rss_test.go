package rss

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// Test timings: short, so a test that waits on several polls stays fast.
const (
	testInterval   = 20 * time.Millisecond
	testMaxBackoff = 80 * time.Millisecond
	testFetch      = 300 * time.Millisecond
	waitDeadline   = 5 * time.Second
)

// feedServer is an httptest feed whose answer a test can change.
type feedServer struct {
	*httptest.Server
	mu          sync.Mutex
	body        string
	etag        string
	lastMod     string
	status      int
	header      http.Header
	hang        bool
	requests    int
	log         requestLog // when each request arrived
	notModified int
	conditional []string // If-None-Match / If-Modified-Since seen, as "inm|ims"
}

func newFeedServer(t *testing.T, body string) *feedServer {
	t.Helper()
	fs := &feedServer{body: body, status: http.StatusOK}
	release := make(chan struct{})
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.log.add()
		fs.mu.Lock()
		fs.requests++
		inm, ims := r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
		if inm != "" || ims != "" {
			fs.conditional = append(fs.conditional, inm+"|"+ims)
		}
		body, etag, lastMod, status, hang := fs.body, fs.etag, fs.lastMod, fs.status, fs.hang
		for k, v := range fs.header {
			w.Header()[k] = v
		}
		if etag != "" && inm == etag {
			fs.notModified++
			fs.mu.Unlock()
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fs.mu.Unlock()
		if hang {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		if lastMod != "" {
			w.Header().Set("Last-Modified", lastMod)
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(fs.Close)
	t.Cleanup(func() { close(release) })
	return fs
}

func (fs *feedServer) set(fn func(fs *feedServer)) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fn(fs)
}

func (fs *feedServer) count() (requests, notModified int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.requests, fs.notModified
}

// recorder collects what a source emits.
type recorder struct {
	mu      sync.Mutex
	batches [][]source.Item
	fail    error
}

func (r *recorder) emit(ctx context.Context, items []source.Item) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.batches = append(r.batches, items)
	return ctx.Err()
}

func (r *recorder) all() []source.Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []source.Item
	for _, b := range r.batches {
		out = append(out, b...)
	}
	return out
}

func (r *recorder) batchCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

// loopback is the range test servers listen in.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func testOptions() Options {
	return Options{
		Client:       netguard.NewClient(netguard.Options{Allow: loopback}),
		Interval:     testInterval,
		MaxBackoff:   testMaxBackoff,
		FetchTimeout: testFetch,
	}
}

// start runs the data source for url until the test ends, and checks that
// Run returns promptly once cancelled.
func start(t *testing.T, opts Options, url string) (*feed, *recorder) {
	t.Helper()
	rec := &recorder{}
	return startWith(t, opts, url, rec), rec
}

// startWith is start with a recorder the test has prepared (one that
// fails from the first hand-over, say).
func startWith(t *testing.T, opts Options, url string, rec *recorder) *feed {
	t.Helper()
	k := New(opts)
	keys, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{CrawlerID: 1, Source: api.SourceRSS, Query: []string{url}}))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := k.New(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	spawntest.Run(t, ds, rec.emit)
	return ds.(*feed)
}

const rssDoc = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:content="http://purl.org/rss/1.0/modules/content/">
<channel>
  <title>Example</title>
  <link>https://example.com/</link>
  <description>test</description>
  <item>
    <title>Newest: golang &amp; friends</title>
    <link>https://example.com/3</link>
    <guid isPermaLink="false">guid-3</guid>
    <description>&lt;p&gt;Hello &lt;b&gt;world&lt;/b&gt;&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;</description>
    <dc:creator>alice</dc:creator>
    <pubDate>Tue, 02 Jan 2024 10:00:00 +0000</pubDate>
  </item>
  <item>
    <title>Link only</title>
    <link>/relative/2</link>
    <content:encoded><![CDATA[<div>Full <i>content</i> here</div>]]></content:encoded>
    <description>short summary</description>
    <pubDate>Mon, 01 Jan 2024 10:00:00 +0000</pubDate>
  </item>
  <item>
    <title>Title and date only</title>
    <pubDate>Sun, 31 Dec 2023 10:00:00 +0000</pubDate>
  </item>
</channel>
</rss>`

const atomDoc = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Atom example</title>
  <id>urn:feed</id>
  <updated>2024-02-02T00:00:00Z</updated>
  <author><name>feed author</name></author>
  <entry>
    <title>Second entry</title>
    <id>urn:entry:2</id>
    <link href="https://example.com/e2"/>
    <updated>2024-02-02T00:00:00Z</updated>
    <summary type="html">&lt;p&gt;weather report&lt;/p&gt;</summary>
  </entry>
  <entry>
    <title>First entry</title>
    <id>urn:entry:1</id>
    <link href="https://example.com/e1"/>
    <published>2024-02-01T00:00:00Z</published>
    <updated>2024-02-01T12:00:00Z</updated>
    <author><name>bob</name></author>
    <content type="html">&lt;p&gt;cassandra tips&lt;/p&gt;</content>
  </entry>
</feed>`

func TestFeed_ParsesRSSAndAtom(t *testing.T) {
	type want struct {
		id, text, url, author string
		published             time.Time
	}
	day := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }
	tests := []struct {
		name string
		doc  string
		want func(base string) []want
	}{
		{
			name: "rss",
			doc:  rssDoc,
			want: func(base string) []want {
				return []want{
					{id: hashID("Title and date only\nSun, 31 Dec 2023 10:00:00 +0000\n"), text: "Title and date only", published: day(2023, 12, 31, 10)},
					{id: hashID("/relative/2"), text: "Link only\nFull content here", url: base + "/relative/2", published: day(2024, 1, 1, 10)},
					{id: "guid-3", text: "Newest: golang & friends\nHello world", url: "https://example.com/3", author: "alice", published: day(2024, 1, 2, 10)},
				}
			},
		},
		{
			name: "atom",
			doc:  atomDoc,
			want: func(string) []want {
				return []want{
					{id: "urn:entry:1", text: "First entry\ncassandra tips", url: "https://example.com/e1", author: "bob", published: day(2024, 2, 1, 0)},
					{id: "urn:entry:2", text: "Second entry\nweather report", url: "https://example.com/e2", author: "feed author", published: day(2024, 2, 2, 0)},
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFeedServer(t, tt.doc)
			before := time.Now()
			ds, rec := start(t, testOptions(), fs.URL+"/feed")
			testkit.WaitFor(t, waitDeadline, "items emitted", func() bool { return rec.batchCount() > 0 })
			if err := ds.Err(); err != nil {
				t.Fatalf("Err() = %v", err)
			}
			got := rec.all()
			want := tt.want(fs.URL)
			if len(got) != len(want) {
				t.Fatalf("got %d items, want %d: %+v", len(got), len(want), got)
			}
			for i, w := range want {
				g := got[i]
				if g.ID != w.id || g.Text != w.text || g.URL != w.url || g.Author != w.author || !g.PublishedAt.Equal(w.published) {
					t.Errorf("item %d:\n got %+v\nwant %+v", i, g, w)
				}
				if g.FetchedAt.Before(before) || g.FetchedAt.After(time.Now()) {
					t.Errorf("item %d: fetched at %v, want the fetch time", i, g.FetchedAt)
				}
			}
		})
	}
}

func TestKind_KeysOnePerCanonicalFeedURL(t *testing.T) {
	k := New(testOptions())
	tests := []struct {
		name    string
		query   []string
		want    []string
		wantErr bool
	}{
		{name: "one feed", query: []string{"http://example.com/a.xml"}, want: []string{"rss:http://example.com/a.xml"}},
		{name: "two feeds sorted", query: []string{"https://b.example/x", "http://a.example/y"}, want: []string{"rss:http://a.example/y", "rss:https://b.example/x"}},
		{name: "same feed spelled twice", query: []string{"HTTP://Example.COM:80/a", "http://example.com/a#top"}, want: []string{"rss:http://example.com/a"}},
		{name: "not http", query: []string{"ftp://example.com/a"}, wantErr: true},
		{name: "empty", query: nil, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{CrawlerID: 7, Source: api.SourceRSS, Query: tt.query}))
			if tt.wantErr {
				if !errors.Is(err, query.ErrInvalid) {
					t.Fatalf("Keys(%q) error = %v, want query.ErrInvalid", tt.query, err)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("Keys(%q) = %v, %v; want %v", tt.query, got, err, tt.want)
			}
		})
	}
	for _, bad := range []string{"http://example.com/", "rss:", "rss:file:///etc/passwd", "rss:http://"} {
		if _, err := k.New(bad); err == nil {
			t.Errorf("New(%q) succeeded, want an error", bad)
		}
	}
}

func TestFeed_EmitsEachItemOnceAcrossFetches(t *testing.T) {
	fs := newFeedServer(t, rssDoc)
	_, rec := start(t, testOptions(), fs.URL)
	testkit.WaitFor(t, waitDeadline, "first batch", func() bool { return rec.batchCount() == 1 })
	first := rec.all()

	// The feed does not change: several more fetches emit nothing.
	n, _ := fs.count()
	testkit.WaitFor(t, waitDeadline, "three more fetches", func() bool { r, _ := fs.count(); return r >= n+3 })
	if c := rec.batchCount(); c != 1 {
		t.Fatalf("%d batches after unchanged re-fetches, want 1", c)
	}

	// A new item (newest first in the document) is emitted alone.
	fs.set(func(fs *feedServer) {
		fs.body = strings.Replace(rssDoc, "<item>", `<item><title>Brand new</title><guid>guid-4</guid><pubDate>Wed, 03 Jan 2024 10:00:00 +0000</pubDate></item>
  <item>`, 1)
	})
	testkit.WaitFor(t, waitDeadline, "second batch", func() bool { return rec.batchCount() == 2 })
	all := rec.all()
	if len(all) != len(first)+1 || all[len(all)-1].ID != "guid-4" {
		t.Fatalf("after a new item, emitted %+v", all[len(first):])
	}
}

func TestFeed_UndatedItemsKeepFirstSeenTime(t *testing.T) {
	doc := `<rss version="2.0"><channel><title>t</title>
<item><title>b</title><link>https://example.com/b</link></item>
<item><title>a</title><link>https://example.com/a</link></item>
</channel></rss>`
	fs := newFeedServer(t, doc)
	ds, rec := start(t, testOptions(), fs.URL)
	testkit.WaitFor(t, waitDeadline, "first batch", func() bool { return rec.batchCount() == 1 })
	first := rec.all()
	if len(first) != 2 || first[0].ID != hashID("https://example.com/a") || first[1].ID != hashID("https://example.com/b") {
		t.Fatalf("undated items must keep document order oldest first: %+v", first)
	}
	n, _ := fs.count()
	testkit.WaitFor(t, waitDeadline, "two more fetches", func() bool { r, _ := fs.count(); return r >= n+2 })

	// A new subscriber gets the current items again, with the same ids
	// and the same first-seen publication times.
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{{CrawlerID: 2, Version: 1}}...))
	testkit.WaitFor(t, waitDeadline, "replay", func() bool { return rec.batchCount() == 2 })
	replay := rec.all()[2:]
	for i := range first {
		if replay[i].ID != first[i].ID || !replay[i].PublishedAt.Equal(first[i].PublishedAt) {
			t.Fatalf("replayed item %d = %+v, first emitted as %+v", i, replay[i], first[i])
		}
	}
	// The same subscribers again: nothing to replay.
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{{CrawlerID: 2, Version: 1}}...))
	n, _ = fs.count()
	testkit.WaitFor(t, waitDeadline, "two more fetches", func() bool { r, _ := fs.count(); return r >= n+2 })
	if c := rec.batchCount(); c != 2 {
		t.Fatalf("%d batches, want 2: an unchanged subscriber set replays nothing", c)
	}
}

func TestFeed_FutureDatesClamped(t *testing.T) {
	doc := `<rss version="2.0"><channel><title>t</title>
<item><title>from the future</title><guid>f</guid><pubDate>Fri, 01 Jan 2100 00:00:00 +0000</pubDate></item>
</channel></rss>`
	fs := newFeedServer(t, doc)
	_, rec := start(t, testOptions(), fs.URL)
	testkit.WaitFor(t, waitDeadline, "item", func() bool { return rec.batchCount() == 1 })
	if it := rec.all()[0]; it.PublishedAt.After(time.Now()) || it.PublishedAt.Year() != time.Now().Year() {
		t.Fatalf("published at %v, want clamped to the fetch time", it.PublishedAt)
	}
}

func TestFeed_SeenSetBounded(t *testing.T) {
	// A feed that shows a sliding window of 3 items, moving on each fetch.
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n := next
		next++
		mu.Unlock()
		fmt.Fprint(w, `<rss version="2.0"><channel><title>t</title>`)
		for i := n + 2; i >= n; i-- {
			fmt.Fprintf(w, `<item><title>item %d</title><guid>g%d</guid></item>`, i, i)
		}
		fmt.Fprint(w, `</channel></rss>`)
	}))
	t.Cleanup(srv.Close)
	opts := testOptions()
	opts.SeenLimit = 10
	_, rec := start(t, opts, srv.URL)
	testkit.WaitFor(t, waitDeadline, "40 items", func() bool { return len(rec.all()) >= 40 })
	seen := map[string]bool{}
	for _, it := range rec.all() {
		if seen[it.ID] {
			t.Fatalf("item %s emitted twice", it.ID)
		}
		seen[it.ID] = true
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	if got := truncate(s, 5); got != "éé" {
		t.Fatalf("truncate = %q", got)
	}
	if got := truncate("abc", 5); got != "abc" {
		t.Fatalf("truncate = %q", got)
	}
}
