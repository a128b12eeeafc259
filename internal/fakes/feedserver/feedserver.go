// Package feedserver is a local RSS 2.0 and Atom server for tests and the
// demo: feeds come into existence when first asked for, items are published
// by the caller or generated on a timer, and the server counts the requests
// of every feed so a test can prove that subscribers sharing a data source
// cause one fetch per poll. It answers conditional requests (ETag and
// Last-Modified) with 304 like a well-behaved publisher, unless told to
// answer everything in full. It also serves recorded real feeds (Record)
// byte for byte with the Content-Type header a test gives, so that legacy
// character sets, a charset only in the header, none at all, or a header
// and an XML declaration that disagree reach a crawler as they do from
// real publishers.
package feedserver

import (
	"context"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// DefaultMaxItems is how many of its newest items a feed keeps serving.
const DefaultMaxItems = 50

// Formats a feed can be served in.
const (
	FormatRSS  = "rss"
	FormatAtom = "atom"
)

// feedName restricts feed names to something safe in a URL path.
var feedName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether name can be a feed's name: 1 to 64 letters,
// digits, '_' or '-'. Publish and Generate panic on any other name.
func ValidName(name string) error {
	if !feedName.MatchString(name) {
		return fmt.Errorf("feedserver: invalid feed name %q: want 1 to 64 letters, digits, _ or -", name)
	}
	return nil
}

// Options configure a Server. The zero value is ready to use.
type Options struct {
	// MaxItems is how many of its newest items a feed serves; 0 means
	// DefaultMaxItems.
	MaxItems int
	// Logger receives a line per generated item at debug level; nil
	// discards.
	Logger *slog.Logger
	// IgnoreConditional answers every request in full, as a publisher
	// without conditional GET support does: no 304, whatever the request's
	// If-None-Match or If-Modified-Since.
	IgnoreConditional bool
}

// Item is one feed entry. Zero fields are filled in by Publish: GUID with a
// unique id, Published with the current time, Link with the item's page on
// this server.
type Item struct {
	GUID        string
	Title       string
	Description string
	Link        string
	Author      string
	Published   time.Time
}

// feed is one feed's state; the Server's mutex guards it.
type feed struct {
	items    []Item // oldest first
	lang     string // the feed's language tag; empty for none
	version  uint64
	modified time.Time
	requests int
}

// Server serves and publishes feeds. It is safe for concurrent use.
type Server struct {
	opts  Options
	epoch int64            // makes generated GUIDs unique across restarts
	now   func() time.Time // the clock; tests replace it

	mu       sync.Mutex
	feeds    map[string]*feed
	recorded map[string]*recorded // documents served as recorded, by name
	seq      uint64
	start    time.Time
}

// New returns an empty server: every valid feed name serves an empty feed
// until something is published to it.
func New(opts Options) *Server {
	if opts.MaxItems <= 0 {
		opts.MaxItems = DefaultMaxItems
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	now := time.Now()
	return &Server{opts: opts, epoch: now.Unix(), now: time.Now, feeds: map[string]*feed{}, start: now.UTC()}
}

// Start runs a new server on a free loopback port until the test ends and
// returns it with its base URL.
func Start(tb fakehttp.TB, opts Options) (*Server, string) {
	tb.Helper()
	s := New(opts)
	return s, fakehttp.Serve(tb, s.Handler(), nil)
}

// Handler serves:
//
//	GET /feeds/{name}.xml               RSS 2.0 (?format=atom for Atom)
//	GET /feeds/{name}.atom              Atom
//	GET /recorded/{name}                a recorded document (Record)
//	GET /items/{feed}/{guid}            a small HTML page per item
//	GET /healthz                        200 when alive
//	GET /                               the list of feeds
func (s *Server) Handler() http.Handler {
	mux := fakehttp.NewMux()
	mux.HandleFunc("GET /feeds/{file}", s.handleFeed)
	mux.HandleFunc("GET /recorded/{name}", s.handleRecorded)
	mux.HandleFunc("GET /items/{feed}/{guid}", s.handleItem)
	mux.HandleFunc("GET /{$}", s.handleIndex)
	return mux
}

// feedLocked returns a feed, creating it on first use.
func (s *Server) feedLocked(name string) *feed {
	f, ok := s.feeds[name]
	if !ok {
		f = &feed{modified: s.start}
		s.feeds[name] = f
	}
	return f
}

// Publish adds an item to a feed (creating the feed) and returns it with
// its defaults filled in. Publishing an item whose GUID the feed already
// serves replaces it in place, as a publisher editing a post would.
func (s *Server) Publish(name string, it Item) Item {
	if err := ValidName(name); err != nil {
		panic(err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if it.GUID == "" {
		it.GUID = fmt.Sprintf("%s-%d-%d", name, s.epoch, s.seq)
	}
	if it.Published.IsZero() {
		it.Published = s.now()
	}
	if it.Link == "" {
		it.Link = "/items/" + name + "/" + it.GUID
	}
	f := s.feedLocked(name)
	if i := slices.IndexFunc(f.items, func(x Item) bool { return x.GUID == it.GUID }); i >= 0 {
		f.items[i] = it
	} else {
		f.items = append(f.items, it)
		if over := len(f.items) - s.opts.MaxItems; over > 0 {
			f.items = slices.Delete(f.items, 0, over)
		}
	}
	f.version++
	f.modified = s.now().UTC()
	return it
}

// SetLanguage declares a feed's language (an RFC 5646 tag such as "en" or
// "de-DE"), served as the RSS channel's <language> and the Atom feed's
// xml:lang; "" removes it.
func (s *Server) SetLanguage(name, lang string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.feedLocked(name)
	f.lang = lang
	f.version++
	f.modified = s.now().UTC()
}

// Requests is how many requests a feed has received, conditional ones
// answered with 304 included, in either format.
func (s *Server) Requests(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.feeds[name]; ok {
		return f.requests
	}
	return 0
}

// Items returns a feed's current items, newest first.
func (s *Server) Items(name string) []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.feeds[name]
	if !ok {
		return nil
	}
	out := slices.Clone(f.items)
	slices.Reverse(out)
	return out
}

// Feeds lists the feeds that have been requested or published to.
func (s *Server) Feeds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.feeds))
	for n := range s.feeds {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Generate publishes one item to each of the feeds every interval, with
// text that rotates through Topics, until ctx ends. It blocks; run it in a
// goroutine you own.
func (s *Server) Generate(ctx context.Context, feeds []string, every time.Duration) {
	for _, name := range feeds {
		if err := ValidName(name); err != nil {
			panic(err.Error())
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var n int
	for {
		for i, name := range feeds {
			it := s.Publish(name, GenerateItem(n+i*3))
			s.opts.Logger.Debug("item published", "feed", name, "guid", it.GUID, "title", it.Title)
		}
		n++
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Topics are the subjects generated items talk about. They include words
// the demo's crawlers filter on.
var Topics = []string{"golang", "cassandra", "crawler", "weather", "football", "elections", "markets", "music", "postgres", "space"}

var (
	headlines = []string{
		"New %s release draws attention",
		"Why %s matters this week",
		"Readers debate the future of %s",
		"Five things to know about %s today",
		"Experts weigh in on %s",
		"A quiet revolution in %s",
	}
	bodies = []string{
		"Community members shared their views on %s, and many mentioned %s as well.",
		"Analysts say %s is changing fast; some compare it with %s.",
		"A long thread about %s turned into a discussion of %s.",
		"Early reports on %s are mixed, while %s keeps trending.",
	}
	authors = []string{"alice", "bob", "carol", "dave", "erin", "frank"}
)

// GenerateItem returns the n-th item of an endless, deterministic sequence
// of realistic-looking posts.
func GenerateItem(n int) Item {
	if n < 0 {
		n = -n
	}
	topic := Topics[n%len(Topics)]
	other := Topics[(n*7+3)%len(Topics)]
	return Item{
		Title:       fmt.Sprintf(headlines[n%len(headlines)], topic),
		Description: "<p>" + fmt.Sprintf(bodies[n%len(bodies)], topic, other) + "</p>",
		Author:      authors[n%len(authors)],
	}
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	base := baseURL(r)
	fmt.Fprintln(w, "feeds:")
	for _, n := range s.Feeds() {
		fmt.Fprintf(w, "  %s/feeds/%s.xml  (atom: %s/feeds/%s.atom)\n", base, n, base, n)
	}
}

func (s *Server) handleItem(w http.ResponseWriter, r *http.Request) {
	name, guid := r.PathValue("feed"), r.PathValue("guid")
	s.mu.Lock()
	var it Item
	var ok bool
	if f, found := s.feeds[name]; found {
		if i := slices.IndexFunc(f.items, func(x Item) bool { return x.GUID == guid }); i >= 0 {
			it, ok = f.items[i], true
		}
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1><p>by %s, %s</p>%s\n",
		html.EscapeString(it.Title), html.EscapeString(it.Title), html.EscapeString(it.Author),
		it.Published.UTC().Format(time.RFC1123), it.Description)
}

func (s *Server) handleFeed(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	format := FormatRSS
	name, ok := strings.CutSuffix(file, ".xml")
	if !ok {
		if name, ok = strings.CutSuffix(file, ".atom"); ok {
			format = FormatAtom
		}
	}
	if !ok || !feedName.MatchString(name) {
		http.Error(w, "feedserver: want /feeds/<name>.xml or /feeds/<name>.atom, name of letters, digits, _ and -", http.StatusNotFound)
		return
	}
	switch r.URL.Query().Get("format") {
	case "":
	case FormatAtom:
		format = FormatAtom
	case FormatRSS:
		format = FormatRSS
	default:
		http.Error(w, "feedserver: format must be rss or atom", http.StatusBadRequest)
		return
	}

	s.mu.Lock()
	f := s.feedLocked(name)
	f.requests++
	items := slices.Clone(f.items)
	version, modified, lang := f.version, f.modified, f.lang
	s.mu.Unlock()

	etag := fmt.Sprintf(`"%s-%d-%s"`, name, version, format)
	w.Header().Set("ETag", etag)
	// Last-Modified has one-second resolution: a feed changed within the
	// current second could change again within it, unseen by a client
	// that compares dates, so such a feed is sent with its ETag only.
	if lm := modified.Truncate(time.Second); lm.Before(s.now().Truncate(time.Second)) {
		w.Header().Set("Last-Modified", lm.Format(http.TimeFormat))
	}
	w.Header().Set("Cache-Control", "no-cache")
	if !s.opts.IgnoreConditional && notModified(r, etag, modified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	slices.Reverse(items) // newest first, as publishers do
	base := baseURL(r)
	for i := range items {
		if strings.HasPrefix(items[i].Link, "/") {
			items[i].Link = base + items[i].Link
		}
	}
	self := base + r.URL.Path
	var doc any
	if format == FormatAtom {
		w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
		a := atomFeed(name, self, base, modified, items)
		a.Lang = lang
		doc = a
	} else {
		w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		r := rssFeed(name, self, base, modified, items)
		r.Channel.Language = lang
		doc = r
	}
	io.WriteString(w, xml.Header)
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		s.opts.Logger.Warn("feed write failed", "feed", name, "err", err)
	}
}

// notModified applies RFC 9110's rules: If-None-Match wins over
// If-Modified-Since when both are present.
func notModified(r *http.Request, etag string, modified time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == etag {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		if t, err := http.ParseTime(ims); err == nil {
			return !modified.Truncate(time.Second).After(t)
		}
	}
	return false
}

func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// RSS 2.0 document.
type rssDoc struct {
	XMLName xml.Name   `xml:"rss"`
	Version string     `xml:"version,attr"`
	DC      string     `xml:"xmlns:dc,attr"`
	Channel rssChannel `xml:"channel"`
}

type rssChannel struct {
	Title         string    `xml:"title"`
	Link          string    `xml:"link"`
	Description   string    `xml:"description"`
	LastBuildDate string    `xml:"lastBuildDate"`
	Language      string    `xml:"language,omitempty"`
	Items         []rssItem `xml:"item"`
}

type rssItem struct {
	Title       string  `xml:"title"`
	Link        string  `xml:"link,omitempty"`
	Description string  `xml:"description"`
	Creator     string  `xml:"dc:creator,omitempty"`
	GUID        rssGUID `xml:"guid"`
	PubDate     string  `xml:"pubDate"`
}

type rssGUID struct {
	IsPermaLink string `xml:"isPermaLink,attr"`
	Value       string `xml:",chardata"`
}

func rssFeed(name, self, base string, modified time.Time, items []Item) rssDoc {
	doc := rssDoc{
		Version: "2.0",
		DC:      "http://purl.org/dc/elements/1.1/",
		Channel: rssChannel{
			Title:         name,
			Link:          base + "/",
			Description:   "The " + name + " feed of the Black Widow feed server (" + self + ")",
			LastBuildDate: modified.Format(time.RFC1123Z),
		},
	}
	for _, it := range items {
		doc.Channel.Items = append(doc.Channel.Items, rssItem{
			Title:       it.Title,
			Link:        it.Link,
			Description: it.Description,
			Creator:     it.Author,
			GUID:        rssGUID{IsPermaLink: "false", Value: it.GUID},
			PubDate:     it.Published.UTC().Format(time.RFC1123Z),
		})
	}
	return doc
}

// Atom document.
type atomDoc struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	Lang    string      `xml:"xml:lang,attr,omitempty"`
	Title   string      `xml:"title"`
	ID      string      `xml:"id"`
	Updated string      `xml:"updated"`
	Links   []atomLink  `xml:"link"`
	Entries []atomEntry `xml:"entry"`
}

type atomLink struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr,omitempty"`
}

type atomEntry struct {
	Title     string      `xml:"title"`
	ID        string      `xml:"id"`
	Links     []atomLink  `xml:"link"`
	Published string      `xml:"published"`
	Updated   string      `xml:"updated"`
	Author    *atomAuthor `xml:"author,omitempty"`
	Summary   atomText    `xml:"summary"`
}

type atomAuthor struct {
	Name string `xml:"name"`
}

type atomText struct {
	Type  string `xml:"type,attr"`
	Value string `xml:",chardata"`
}

func atomFeed(name, self, base string, modified time.Time, items []Item) atomDoc {
	doc := atomDoc{
		Title:   name,
		ID:      self,
		Updated: modified.Format(time.RFC3339),
		Links:   []atomLink{{Href: self, Rel: "self"}, {Href: base + "/"}},
	}
	for _, it := range items {
		e := atomEntry{
			Title:     it.Title,
			ID:        it.GUID,
			Published: it.Published.UTC().Format(time.RFC3339Nano),
			Updated:   it.Published.UTC().Format(time.RFC3339Nano),
			Summary:   atomText{Type: "html", Value: it.Description},
		}
		if it.Link != "" {
			e.Links = []atomLink{{Href: it.Link}}
		}
		if it.Author != "" {
			e.Author = &atomAuthor{Name: it.Author}
		}
		doc.Entries = append(doc.Entries, e)
	}
	return doc
}
