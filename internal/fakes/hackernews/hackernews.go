// Package hackernews is a local Hacker News for tests: the official
// Firebase API (github.com/HackerNews/API, v0) and the Algolia HN Search
// API (hn.algolia.com/api, v1) on one loopback server, built from their
// documentation and recorded answers, quirks included:
//
//   - GET /v0/maxitem.json is the largest item id, a bare number; ids come
//     from one counter shared by stories, comments, jobs, polls and
//     pollopts, so they are dense.
//   - GET /v0/item/<id>.json is the item, or HTTP 200 with the body null
//     for an id without an item — also, for a while, for an item just
//     created (NullFor makes an id answer null for its first requests).
//     Only id is required; a field without a value is left out, never
//     null; deleted and dead appear only as true. A deleted item keeps
//     id, parent, time and type and loses by, text and kids; a dead one
//     keeps everything (its text is often "[flagged]").
//   - GET /v0/updates.json is {"items": [...], "profiles": [...]}: the
//     recently changed items (new kids, a new score, an edit, a deletion)
//     and profiles, newest first, UpdatesKept of each.
//   - Responses carry Content-Type application/json; charset=utf-8 and
//     Cache-Control no-cache; ?print=pretty is accepted and ignored.
//   - GET /api/v1/search_by_date answers as Algolia's HN index does:
//     newest first, tags ANDed by commas and ORed in parentheses
//     ("(story,comment)"), numericFilters on created_at_i (">", ">=", "<",
//     "<=", "=", comma-separated, ANDed), hitsPerPage (default 20, at most
//     1000) and page; no hit beyond the first 1000 of a query (a page past
//     them is a 400 with Algolia's message). Deleted and dead items are not
//     in the index, and an item shows only IndexLag after it was created.
//     A comment hit carries comment_text, parent_id, story_id, story_title
//     and story_url; a story hit title, url, story_text, points and
//     num_comments; both created_at, created_at_i, objectID (a string),
//     author and _tags (type, author_<by>, story_<root>).
//
// Tests add items with Add (the next ids, as HN assigns them) or AddRaw (a
// recorded payload, served verbatim), and delete, kill and edit them;
// AddHit puts a recorded search hit in the index. The
// server counts requests per endpoint and remembers when each came, so a
// test can check how politely a client polls.
package hackernews

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// Defaults of Options.
const (
	// DefaultUpdatesKept is how many item ids /v0/updates.json lists (the
	// README's example lists 29; live answers carry a few dozen).
	DefaultUpdatesKept = 60
	// maxHitsPerPage is Algolia's largest page.
	maxHitsPerPage = 1000
	// defaultHitsPerPage is Algolia's page size when none is asked for.
	defaultHitsPerPage = 20
	// paginationLimit is how many hits of one query Algolia hands out at
	// most (the index's paginationLimitedTo).
	paginationLimit = 1000
)

// paginationMessage is Algolia's answer to a page past paginationLimit.
const paginationMessage = "you can only fetch the 1000 hits for this query. You can extend the number of hits returned via the paginationLimitedTo index parameter or use the browse method."

// Options configure a Server; zero fields take the defaults.
type Options struct {
	// UpdatesKept is how many item ids updates.json lists.
	UpdatesKept int
	// IndexLag is how long after its time an item appears in the search
	// index.
	IndexLag time.Duration
	// Now is the server's clock; nil is time.Now.
	Now func() time.Time
}

// Item is a Hacker News item as the Firebase API serves it. Zero fields
// are left out, as the API leaves them out; URL is a pointer because a job
// can carry an empty url.
type Item struct {
	ID          int64   `json:"id"`
	Deleted     bool    `json:"deleted,omitempty"`
	Type        string  `json:"type,omitempty"`
	By          string  `json:"by,omitempty"`
	Time        int64   `json:"time,omitempty"`
	Text        string  `json:"text,omitempty"`
	Dead        bool    `json:"dead,omitempty"`
	Parent      int64   `json:"parent,omitempty"`
	Poll        int64   `json:"poll,omitempty"`
	Kids        []int64 `json:"kids,omitempty"`
	URL         *string `json:"url,omitempty"`
	Score       int     `json:"score,omitempty"`
	Title       string  `json:"title,omitempty"`
	Parts       []int64 `json:"parts,omitempty"`
	Descendants *int    `json:"descendants,omitempty"`
}

// URLOf returns a pointer to u, for Item.URL.
func URLOf(u string) *string { return &u }

// entry is an item the server holds: the item and, for a recorded one,
// the bytes it serves.
type entry struct {
	item Item
	raw  []byte
}

// Server is a running local Hacker News.
type Server struct {
	opts Options
	url  string

	mu       sync.Mutex
	items    map[int64]*entry
	max      int64
	nulls    map[int64]int // id → requests still answered null
	updates  []int64       // newest first
	recorded []indexed     // recorded search hits
	hits     map[string]int
	times    map[string][]time.Time
	fail     map[string]int // endpoint → requests still answered 503
}

// Endpoints the server counts requests of.
const (
	EndpointMaxItem = "maxitem"
	EndpointItem    = "item"
	EndpointUpdates = "updates"
	EndpointSearch  = "search_by_date"
)

// Start serves a local Hacker News until the test ends.
func Start(tb fakehttp.TB, opts Options) *Server {
	tb.Helper()
	if opts.UpdatesKept <= 0 {
		opts.UpdatesKept = DefaultUpdatesKept
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, items: map[int64]*entry{}, nulls: map[int64]int{}, hits: map[string]int{},
		times: map[string][]time.Time{}, fail: map[string]int{}}
	mux := fakehttp.NewMux()
	mux.HandleFunc("GET /v0/maxitem.json", s.handleMaxItem)
	mux.HandleFunc("GET /v0/item/{file}", s.handleItem)
	mux.HandleFunc("GET /v0/updates.json", s.handleUpdates)
	mux.HandleFunc("GET /api/v1/search_by_date", s.handleSearch)
	s.url = fakehttp.Serve(tb, mux, nil)
	return s
}

// URL is the server's base URL: the Firebase API is under /v0 and the
// search API under /api/v1, so it serves as both base URLs.
func (s *Server) URL() string { return s.url }

// Add stores items and returns their ids. An item without an id gets the
// next one; an item without a time gets the server's clock. A comment or
// pollopt is added to its parent's kids, and every item counts as updated.
func (s *Server) Add(items ...Item) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(items))
	for _, it := range items {
		if it.ID == 0 {
			it.ID = s.max + 1
		}
		if it.Time == 0 {
			it.Time = s.opts.Now().Unix()
		}
		s.max = max(s.max, it.ID)
		s.items[it.ID] = &entry{item: it}
		if p, ok := s.items[it.Parent]; ok && it.Parent != 0 && p.raw == nil {
			p.item.Kids = append(p.item.Kids, it.ID)
			if p.item.Type == "story" || p.item.Type == "poll" {
				n := 1
				if p.item.Descendants != nil {
					n += *p.item.Descendants
				}
				p.item.Descendants = &n
			}
			s.updatedLocked(it.Parent)
		}
		s.updatedLocked(it.ID)
		ids = append(ids, it.ID)
	}
	return ids
}

// AddRaw stores a recorded item payload, served byte for byte. Its id must
// be a number.
func (s *Server) AddRaw(raw []byte) (int64, error) {
	var it Item
	if err := json.Unmarshal(raw, &it); err != nil {
		return 0, fmt.Errorf("hackernews: recorded item: %w", err)
	}
	if it.ID <= 0 {
		return 0, fmt.Errorf("hackernews: recorded item without an id: %s", raw)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[it.ID] = &entry{item: it, raw: slices.Clone(raw)}
	s.max = max(s.max, it.ID)
	return it.ID, nil
}

// SetMaxItem moves maxitem to id without adding items: the ids between
// answer null (as ids whose items are not readable yet do) until added.
func (s *Server) SetMaxItem(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max = max(s.max, id)
}

// NullFor makes id answer null for its next n requests, as an item just
// created does for a while; n < 0 makes it answer null for good.
func (s *Server) NullFor(id int64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nulls[id] = n
}

// Unavailable makes the next n requests to endpoint answer 503.
func (s *Server) Unavailable(endpoint string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[endpoint] = n
}

// Delete deletes an item as HN does: it keeps id, parent, time and type,
// loses by, text and kids, and is listed as updated.
func (s *Server) Delete(id int64) {
	s.change(id, func(it *Item) {
		*it = Item{ID: it.ID, Deleted: true, Type: it.Type, Time: it.Time, Parent: it.Parent}
	})
}

// Kill marks an item dead (flagged or killed by moderators).
func (s *Server) Kill(id int64) {
	s.change(id, func(it *Item) { it.Dead = true })
}

// Edit replaces an item's text.
func (s *Server) Edit(id int64, text string) {
	s.change(id, func(it *Item) { it.Text = text })
}

func (s *Server) change(id int64, fn func(*Item)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[id]
	if !ok {
		return
	}
	fn(&e.item)
	e.raw = nil
	s.updatedLocked(id)
}

// updatedLocked puts id first in the updates list.
func (s *Server) updatedLocked(id int64) {
	s.updates = slices.DeleteFunc(s.updates, func(x int64) bool { return x == id })
	s.updates = slices.Insert(s.updates, 0, id)
	if len(s.updates) > s.opts.UpdatesKept {
		s.updates = s.updates[:s.opts.UpdatesKept]
	}
}

// Requests is how many requests endpoint has had.
func (s *Server) Requests(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[endpoint]
}

// ItemRequests is how many requests the item id has had.
func (s *Server) ItemRequests(id int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[EndpointItem+"/"+strconv.FormatInt(id, 10)]
}

// MaxPerSecond is the most requests, over every endpoint, that arrived
// within any one second.
func (s *Server) MaxPerSecond() int {
	s.mu.Lock()
	var all []time.Time
	for _, ts := range s.times {
		all = append(all, ts...)
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi, t := range all {
		for t.Sub(all[lo]) >= time.Second {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// count records a request; it reports false when the request must be
// answered 503.
func (s *Server) count(endpoint string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[endpoint]++
	s.times[endpoint] = append(s.times[endpoint], time.Now())
	if s.fail[endpoint] > 0 {
		s.fail[endpoint]--
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func unavailable(w http.ResponseWriter) {
	writeJSON(w, http.StatusServiceUnavailable, []byte(`{"error":"Service Unavailable"}`))
}

func (s *Server) handleMaxItem(w http.ResponseWriter, _ *http.Request) {
	if !s.count(EndpointMaxItem) {
		unavailable(w)
		return
	}
	s.mu.Lock()
	n := s.max
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, []byte(strconv.FormatInt(n, 10)))
}

func (s *Server) handleItem(w http.ResponseWriter, r *http.Request) {
	if !s.count(EndpointItem) {
		unavailable(w)
		return
	}
	file := r.PathValue("file")
	id, err := strconv.ParseInt(strings.TrimSuffix(file, ".json"), 10, 64)
	if !strings.HasSuffix(file, ".json") || err != nil {
		// Firebase answers a path that names no item with null too.
		writeJSON(w, http.StatusOK, []byte("null"))
		return
	}
	s.mu.Lock()
	s.hits[EndpointItem+"/"+strconv.FormatInt(id, 10)]++
	e, ok := s.items[id]
	if n := s.nulls[id]; n != 0 {
		if n > 0 {
			s.nulls[id] = n - 1
			if n == 1 {
				delete(s.nulls, id)
			}
		}
		ok = false
	}
	var body []byte
	if ok {
		body = e.raw
		if body == nil {
			body, _ = json.Marshal(e.item)
		}
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusOK, []byte("null"))
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleUpdates(w http.ResponseWriter, _ *http.Request) {
	if !s.count(EndpointUpdates) {
		unavailable(w)
		return
	}
	s.mu.Lock()
	doc := struct {
		Items    []int64  `json:"items"`
		Profiles []string `json:"profiles"`
	}{Items: slices.Clone(s.updates), Profiles: []string{}}
	s.mu.Unlock()
	if doc.Items == nil {
		doc.Items = []int64{}
	}
	body, _ := json.Marshal(doc)
	writeJSON(w, http.StatusOK, body)
}
