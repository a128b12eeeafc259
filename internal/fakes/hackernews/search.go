package hackernews

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// hit is one search hit, with the fields Algolia's HN index sends.
type hit struct {
	CreatedAt   string   `json:"created_at"`
	CreatedAtI  int64    `json:"created_at_i"`
	Title       *string  `json:"title,omitempty"`
	URL         *string  `json:"url,omitempty"`
	Author      string   `json:"author"`
	Points      *int     `json:"points"`
	StoryText   *string  `json:"story_text,omitempty"`
	CommentText *string  `json:"comment_text,omitempty"`
	NumComments *int     `json:"num_comments,omitempty"`
	StoryID     *int64   `json:"story_id,omitempty"`
	StoryTitle  *string  `json:"story_title,omitempty"`
	StoryURL    *string  `json:"story_url,omitempty"`
	ParentID    *int64   `json:"parent_id,omitempty"`
	UpdatedAt   string   `json:"updated_at"`
	Children    []int64  `json:"children"`
	Tags        []string `json:"_tags"`
	ObjectID    string   `json:"objectID"`
}

// indexed is a hit the index holds: made from an item, or recorded.
type indexed struct {
	id, createdAt int64
	tags          []string
	body          json.RawMessage
}

// AddHit puts a recorded search hit in the index, served byte for byte;
// an item with the same id shadows it. Its objectID must be a number.
func (s *Server) AddHit(raw []byte) error {
	var h struct {
		ObjectID   string   `json:"objectID"`
		CreatedAtI int64    `json:"created_at_i"`
		Tags       []string `json:"_tags"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("hackernews: recorded hit: %w", err)
	}
	id, err := strconv.ParseInt(h.ObjectID, 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("hackernews: recorded hit with objectID %q", h.ObjectID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorded = append(s.recorded, indexed{id: id, createdAt: h.CreatedAtI, tags: h.Tags, body: slices.Clone(raw)})
	return nil
}

// numericFilter is one condition on created_at_i.
type numericFilter struct {
	op    string
	value int64
}

func (f numericFilter) holds(v int64) bool {
	switch f.op {
	case ">":
		return v > f.value
	case ">=":
		return v >= f.value
	case "<":
		return v < f.value
	case "<=":
		return v <= f.value
	}
	return v == f.value
}

// parseNumericFilters reads Algolia's numericFilters: conditions separated
// by commas, all of which must hold. Only created_at_i is supported.
func parseNumericFilters(s string) ([]numericFilter, bool) {
	var out []numericFilter
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		rest, ok := strings.CutPrefix(part, "created_at_i")
		if !ok {
			return nil, false
		}
		rest = strings.TrimSpace(rest)
		var f numericFilter
		for _, op := range []string{">=", "<=", ">", "<", "="} {
			if v, ok := strings.CutPrefix(rest, op); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return nil, false
				}
				f = numericFilter{op: op, value: n}
				break
			}
		}
		if f.op == "" {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

// parseTags reads Algolia's tags: groups separated by commas, ANDed; a
// group in parentheses is a comma list ORed.
func parseTags(s string) [][]string {
	var groups [][]string
	for s != "" {
		s = strings.TrimLeft(s, ",")
		if s == "" {
			break
		}
		if strings.HasPrefix(s, "(") {
			end := strings.Index(s, ")")
			if end < 0 {
				end = len(s)
			}
			groups = append(groups, strings.Split(s[1:min(end, len(s))], ","))
			s = s[min(end+1, len(s)):]
			continue
		}
		end := strings.Index(s, ",")
		if end < 0 {
			end = len(s)
		}
		groups = append(groups, []string{s[:end]})
		s = s[end:]
	}
	return groups
}

// rootLocked follows an item's parents (and a pollopt's poll) to the story
// or poll that starts its thread.
func (s *Server) rootLocked(it Item) Item {
	for range 1000 {
		up := it.Parent
		if up == 0 {
			up = it.Poll
		}
		p, ok := s.items[up]
		if up == 0 || !ok {
			return it
		}
		it = p.item
	}
	return it
}

// hitLocked is the search hit of an item.
func (s *Server) hitLocked(it Item) hit {
	at := time.Unix(it.Time, 0).UTC()
	h := hit{CreatedAt: at.Format("2006-01-02T15:04:05Z"), CreatedAtI: it.Time, Author: it.By,
		UpdatedAt: s.opts.Now().UTC().Format("2006-01-02T15:04:05Z"), Children: slices.Clone(it.Kids),
		ObjectID: strconv.FormatInt(it.ID, 10)}
	if h.Children == nil {
		h.Children = []int64{}
	}
	root := s.rootLocked(it)
	rootID := root.ID
	h.StoryID = &rootID
	h.Tags = []string{it.Type, "author_" + it.By, "story_" + strconv.FormatInt(rootID, 10)}
	switch it.Type {
	case "comment", "pollopt":
		text := it.Text
		h.CommentText = &text
		parent := it.Parent
		if parent == 0 {
			parent = it.Poll
		}
		h.ParentID = &parent
		title := root.Title
		h.StoryTitle = &title
		if root.URL != nil {
			u := *root.URL
			h.StoryURL = &u
		}
	default:
		title := it.Title
		h.Title = &title
		if it.URL != nil {
			u := *it.URL
			h.URL = &u
		}
		if it.Text != "" {
			text := it.Text
			h.StoryText = &text
		}
		points := it.Score
		h.Points = &points
		n := 0
		if it.Descendants != nil {
			n = *it.Descendants
		}
		h.NumComments = &n
	}
	return h
}

func searchError(w http.ResponseWriter, msg string) {
	body, _ := json.Marshal(map[string]any{"message": msg, "status": http.StatusBadRequest})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	if !s.count(EndpointSearch) {
		unavailable(w)
		return
	}
	q := r.URL.Query()
	filters, ok := parseNumericFilters(q.Get("numericFilters"))
	if !ok {
		searchError(w, "invalid numericFilters: "+q.Get("numericFilters"))
		return
	}
	tags := parseTags(q.Get("tags"))
	perPage := defaultHitsPerPage
	if v := q.Get("hitsPerPage"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			searchError(w, "hitsPerPage must be a number")
			return
		}
		perPage = min(n, maxHitsPerPage)
	}
	page := 0
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			searchError(w, "page must be a number")
			return
		}
		page = n
	}
	if perPage > 0 && page*perPage >= paginationLimit && page > 0 {
		searchError(w, paginationMessage)
		return
	}
	s.mu.Lock()
	now := s.opts.Now()
	var found []indexed
	for _, e := range s.items {
		it := e.item
		if it.Deleted || it.Dead || it.Type == "" || time.Unix(it.Time, 0).Add(s.opts.IndexLag).After(now) {
			continue
		}
		h := s.hitLocked(it)
		if !tagsMatch(tags, h.Tags) || !filtersHold(filters, it.Time) {
			continue
		}
		body, _ := json.Marshal(h)
		found = append(found, indexed{id: it.ID, createdAt: it.Time, body: body})
	}
	for _, h := range s.recorded {
		if _, shadowed := s.items[h.id]; !shadowed && tagsMatch(tags, h.tags) && filtersHold(filters, h.createdAt) {
			found = append(found, h)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(found, func(a, b indexed) int {
		if a.createdAt != b.createdAt {
			return int(b.createdAt - a.createdAt)
		}
		return int(b.id - a.id)
	})
	nb := len(found)
	reachable := min(nb, paginationLimit)
	nbPages := 0
	if perPage > 0 {
		nbPages = (reachable + perPage - 1) / perPage
	}
	lo, hi := min(page*perPage, reachable), min((page+1)*perPage, reachable)
	pageHits := make([]json.RawMessage, 0, hi-lo)
	for _, h := range found[lo:hi] {
		pageHits = append(pageHits, h.body)
	}
	body, _ := json.Marshal(map[string]any{
		"hits": pageHits, "nbHits": nb, "page": page, "nbPages": nbPages, "hitsPerPage": perPage,
		"exhaustiveNbHits": true, "exhaustiveTypo": true, "query": q.Get("query"),
		"params": r.URL.RawQuery + "&advancedSyntax=true&analyticsTags=backend", "processingTimeMS": 1,
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func tagsMatch(groups [][]string, tags []string) bool {
	for _, g := range groups {
		if !slices.ContainsFunc(g, func(t string) bool { return slices.Contains(tags, t) }) {
			return false
		}
	}
	return true
}

func filtersHold(filters []numericFilter, v int64) bool {
	for _, f := range filters {
		if !f.holds(v) {
			return false
		}
	}
	return true
}
