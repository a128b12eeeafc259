package feedserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// waitTimeout bounds every condition a test waits for.
const waitTimeout = 5 * time.Second

func get(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestServer_ServesRSSAndAtom(t *testing.T) {
	s, base := Start(t, Options{})
	pub := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	s.Publish("news", Item{GUID: "a", Title: "first golang post", Description: "<b>hello</b>", Author: "alice", Published: pub})
	s.Publish("news", Item{GUID: "b", Title: "second", Description: "world", Published: pub.Add(time.Minute), Link: "https://example.com/b"})

	tests := []struct {
		name, path, feedType string
	}{
		{"rss", "/feeds/news.xml", "rss"},
		{"atom by extension", "/feeds/news.atom", "atom"},
		{"atom by query", "/feeds/news.xml?format=atom", "atom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, base+tt.path, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			f, err := gofeed.NewParser().ParseString(body)
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, body)
			}
			if f.FeedType != tt.feedType {
				t.Fatalf("feed type %q, want %q", f.FeedType, tt.feedType)
			}
			if len(f.Items) != 2 {
				t.Fatalf("%d items, want 2", len(f.Items))
			}
			newest, oldest := f.Items[0], f.Items[1]
			if newest.GUID != "b" || oldest.GUID != "a" {
				t.Fatalf("items %q, %q: want newest first", newest.GUID, oldest.GUID)
			}
			if newest.Link != "https://example.com/b" || oldest.Link != base+"/items/news/a" {
				t.Fatalf("links %q, %q", newest.Link, oldest.Link)
			}
			if oldest.Title != "first golang post" || !strings.Contains(oldest.Description, "<b>hello</b>") {
				t.Fatalf("oldest item %+v", oldest)
			}
			if oldest.PublishedParsed == nil || !oldest.PublishedParsed.Equal(pub) {
				t.Fatalf("published %v, want %v", oldest.PublishedParsed, pub)
			}
			if len(oldest.Authors) == 0 || oldest.Authors[0].Name != "alice" {
				t.Fatalf("authors %+v", oldest.Authors)
			}
		})
	}
	if got := s.Requests("news"); got != 3 {
		t.Fatalf("Requests(news) = %d, want 3 (both formats count)", got)
	}
	resp, _ := get(t, base+"/items/news/a", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("item page: status %d", resp.StatusCode)
	}
}

// fakeClock is a settable clock for the server.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestServer_ConditionalGet(t *testing.T) {
	s, base := Start(t, Options{})
	clock := &fakeClock{t: time.Date(2024, 1, 2, 3, 4, 5, 100e6, time.UTC)}
	s.now = clock.now
	url := base + "/feeds/tech.xml"
	s.Publish("tech", Item{Title: "one"})
	if resp, _ := get(t, url, nil); resp.Header.Get("Last-Modified") != "" || resp.Header.Get("ETag") == "" {
		t.Fatalf("a feed changed this second must carry only an ETag, got %v", resp.Header)
	}
	clock.add(time.Second)
	resp, _ := get(t, url, nil)
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if etag == "" || lastMod == "" {
		t.Fatalf("validators missing: ETag %q, Last-Modified %q", etag, lastMod)
	}
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"matching etag", map[string]string{"If-None-Match": etag}, http.StatusNotModified},
		{"etag in a list", map[string]string{"If-None-Match": `"x", ` + etag}, http.StatusNotModified},
		{"other etag", map[string]string{"If-None-Match": `"other"`}, http.StatusOK},
		{"not modified since", map[string]string{"If-Modified-Since": lastMod}, http.StatusNotModified},
		{"etag wins over date", map[string]string{"If-None-Match": `"other"`, "If-Modified-Since": lastMod}, http.StatusOK},
		{"atom etag differs", map[string]string{"If-None-Match": strings.Replace(etag, "rss", "atom", 1)}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := get(t, url, tt.header)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}

	// A new item changes both validators.
	s.Publish("tech", Item{Title: "two"})
	for _, h := range []map[string]string{{"If-None-Match": etag}, {"If-Modified-Since": lastMod}} {
		if resp, _ := get(t, url, h); resp.StatusCode != http.StatusOK {
			t.Fatalf("after publish with %v: status %d, want 200", h, resp.StatusCode)
		}
	}
	if got := s.Requests("tech"); got != 2+len(tests)+2 {
		t.Fatalf("Requests(tech) = %d, want %d (304s count)", got, 2+len(tests)+2)
	}
}

func TestServer_IgnoreConditionalAnswersInFull(t *testing.T) {
	s, base := Start(t, Options{IgnoreConditional: true})
	s.Publish("tech", Item{Title: "one", Published: time.Now().Add(-time.Hour)})
	url := base + "/feeds/tech.xml"
	resp, _ := get(t, url, nil)
	etag := resp.Header.Get("ETag")
	for _, h := range []map[string]string{{"If-None-Match": etag}, {"If-None-Match": "*"}, {"If-Modified-Since": time.Now().UTC().Format(http.TimeFormat)}} {
		resp, body := get(t, url, h)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "<title>one</title>") {
			t.Fatalf("with %v: status %d, want the feed in full", h, resp.StatusCode)
		}
	}
}

func TestServer_KeepsNewestItemsAndReplacesByGUID(t *testing.T) {
	s, _ := Start(t, Options{MaxItems: 3})
	for i := range 5 {
		s.Publish("sport", Item{GUID: fmt.Sprint(i), Title: fmt.Sprint("item ", i)})
	}
	s.Publish("sport", Item{GUID: "3", Title: "edited"})
	items := s.Items("sport")
	var got []string
	for _, it := range items {
		got = append(got, it.GUID+"="+it.Title)
	}
	if want := "4=item 4,3=edited,2=item 2"; strings.Join(got, ",") != want {
		t.Fatalf("items %v, want %s", got, want)
	}
}

func TestServer_RoutesAndErrors(t *testing.T) {
	s, base := Start(t, Options{})
	tests := []struct {
		path string
		want int
	}{
		{"/healthz", http.StatusOK},
		{"/", http.StatusOK},
		{"/feeds/never-published.xml", http.StatusOK},
		{"/feeds/bad.name.xml", http.StatusNotFound},
		{"/feeds/news.json", http.StatusNotFound},
		{"/feeds/news.xml?format=json", http.StatusBadRequest},
		{"/items/news/missing", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, base+tt.path, nil)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
	if s.Requests("never-published") != 1 || s.Requests("unknown") != 0 {
		t.Fatalf("requests: never-published %d, unknown %d", s.Requests("never-published"), s.Requests("unknown"))
	}
	_, body := get(t, base+"/feeds/never-published.xml", nil)
	if f, err := gofeed.NewParser().ParseString(body); err != nil || len(f.Items) != 0 {
		t.Fatalf("empty feed: %v, %+v", err, f)
	}
}

func TestServer_GenerateUntilCancelled(t *testing.T) {
	s, _ := Start(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Generate(ctx, []string{"news", "tech"}, 10*time.Millisecond)
	}()
	t.Cleanup(func() { cancel(); <-done })
	testkit.WaitFor(t, waitTimeout, "three items in each feed", func() bool {
		return len(s.Items("news")) >= 3 && len(s.Items("tech")) >= 3
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Generate did not return after cancel")
	}
	items := s.Items("news")
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.GUID] || it.Title == "" || it.Author == "" || it.Published.IsZero() {
			t.Fatalf("bad generated item %+v", it)
		}
		seen[it.GUID] = true
	}
	var all strings.Builder
	for i := range len(Topics) {
		it := GenerateItem(i)
		all.WriteString(it.Title + " " + it.Description + " ")
	}
	for _, w := range []string{"golang", "cassandra", "crawler", "weather"} {
		if !strings.Contains(all.String(), w) {
			t.Fatalf("generated text never mentions %q", w)
		}
	}
}

func TestServer_ConcurrentPublishAndFetch(t *testing.T) {
	s, base := Start(t, Options{MaxItems: 10})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 25 {
				s.Publish("busy", Item{GUID: fmt.Sprintf("%d-%d", w, i), Title: "x"})
			}
		}()
		go func() {
			defer wg.Done()
			for range 10 {
				resp, err := http.Get(base + "/feeds/busy.xml")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := len(s.Items("busy")); n != 10 {
		t.Fatalf("%d items kept, want 10", n)
	}
	if n := s.Requests("busy"); n != 40 {
		t.Fatalf("Requests(busy) = %d, want 40", n)
	}
}
