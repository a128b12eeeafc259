package hackernews

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Gaps. A crawler moved to this spawn (a spawn stopped, a drain, a
// rebalance) arrives with a cursor: the newest item id it stored. The ids
// between that one and the newest id the live walk knew of when it
// arrived (maxitem; the first id the walk reads when it arrived before the
// walk started) are its gap, since the live walk hands it only what it
// reads from then on; the gap is filled for its query alone (the items
// carry its query uuid, and the spawn drops an item the walk handed it
// too):
//
//   - up to MaxWalkGap ids are walked like the live walk, item by item, in
//     order;
//   - a longer gap is read from the search API (search_by_date,
//     tags=(story,comment), numericFilters=created_at_i>…,created_at_i<…,
//     1000 hits a page, newest first, each next page bounded above by the
//     oldest hit so far since the index hands out at most 1000 hits of one
//     query), at most MaxSearchPages pages; what lies beyond is lost,
//     logged with its bounds. The search index has no jobs, polls,
//     pollopts, deleted or dead items.
//
// A cursor that names no id (the crawler stored nothing yet: the hub hands
// a new crawler its creation time) but a published time is walked from the
// first id the live walk read at or after that time, when the walk has
// read that far back (it remembers its latest MaxWalkGap items' ids and
// times); otherwise it is filled from the search API from that time. The
// spawn drops what the crawler already stored (by its cursor and by
// comment id).

// idTime is an item the live walk read: its id and time.
type idTime struct {
	id int64
	at int64 // unix seconds
}

// noteLocked remembers the times of items the live walk handed over, the
// latest MaxWalkGap.
func (s *Source) noteLocked(walked []*wireItem) {
	for _, w := range walked {
		if w.Time > 0 {
			s.timeline = append(s.timeline, idTime{id: w.ID, at: w.Time})
		}
	}
	if over := len(s.timeline) - int(s.opts.MaxWalkGap); over > 0 {
		s.timeline = append(s.timeline[:0], s.timeline[over:]...)
	}
}

// idSinceLocked is the first id the live walk read at or after since,
// when its timeline reaches back before since.
func (s *Source) idSinceLocked(since time.Time) (int64, bool) {
	if len(s.timeline) == 0 || s.timeline[0].at >= since.Unix() {
		return 0, false
	}
	i, _ := slices.BinarySearchFunc(s.timeline, since.Unix(), func(e idTime, t int64) int { return cmpInt(e.at, t) })
	if i == len(s.timeline) {
		return s.frontier + 1, true
	}
	return s.timeline[i].id, true
}

// gap is a run of ids to fill: after < id < before, published within
// [since, until], for query ("" for everyone). at is when it opened, for
// its length.
type gap struct {
	after, before int64
	since, until  time.Time
	query         string
	at            time.Time
}

// fillsLocked queues a gap for each subscriber arriving with a cursor, once
// per crawler, and forgets the crawlers gone.
func (s *Source) fillsLocked(specs []api.SubscriberSpec) {
	here := make(map[int64]bool, len(specs))
	for _, spec := range specs {
		here[spec.CrawlerID] = true
		if spec.Cursor == nil || s.cursors[spec.CrawlerID] {
			continue
		}
		s.cursors[spec.CrawlerID] = true
		after := cursorID(spec)
		if after == 0 && spec.Cursor.PublishedAt.IsZero() {
			continue
		}
		at := spec.Cursor.PublishedAt
		if at.IsZero() {
			at = time.Now()
		}
		g := gap{after: after, since: spec.Cursor.PublishedAt.Add(-searchMargin), query: spec.QueryUUID, at: at}
		if s.frontier > 0 {
			// The walk runs: up to what it knows of now.
			g.before, g.until = s.frontier+1, time.Now().Add(searchMargin)
			if id, ok := s.idSinceLocked(g.since); g.after == 0 && ok {
				g.after = id - 1
			}
		}
		s.pending = append(s.pending, g)
		source.Signal(s.changed)
	}
	for id := range s.cursors {
		if !here[id] {
			delete(s.cursors, id)
		}
	}
}

// runFills fills the queued gaps once the live walk knows where it
// started, until ctx ends.
func (s *Source) runFills(ctx context.Context, emit source.Emit) {
	select {
	case <-ctx.Done():
		return
	case <-s.started:
	}
	bo := backoff.Policy{Min: s.opts.BackoffMin, Max: s.opts.BackoffMax}
	for ctx.Err() == nil {
		s.mu.Lock()
		pending := s.pending
		s.pending = nil
		start, startAt := s.startID, s.startAt
		s.mu.Unlock()
		var failed []gap
		for _, g := range pending {
			if g.before == 0 {
				// Arrived before the walk started: up to its start.
				g.before, g.until = start, startAt.Add(searchMargin)
			}
			if err := s.fill(ctx, g, emit); err != nil {
				if !passing(ctx, err) {
					return
				}
				failed = append(failed, g)
				s.setErr(partFill, err)
				s.logger.Warn("hackernews gap not filled yet", "after_id", g.after, "err", err)
			}
		}
		if len(failed) > 0 {
			s.mu.Lock()
			s.pending = append(failed, s.pending...)
			s.mu.Unlock()
			sleep(ctx, bo.Next())
			continue
		}
		bo.Reset()
		s.setErr(partFill, nil)
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		}
	}
}

// fill fills one gap: walked when short, searched when long or when it
// names no id.
func (s *Source) fill(ctx context.Context, g gap, emit source.Emit) error {
	if g.after > 0 && g.before-g.after-1 <= 0 {
		return nil // nothing was missed
	}
	started := time.Now()
	var n int
	var err error
	if g.after > 0 && g.before-g.after-1 <= s.opts.MaxWalkGap {
		n, err = s.walkGap(ctx, g, emit)
	} else {
		n, err = s.searchGapCount(ctx, g, emit)
	}
	if err != nil {
		return err
	}
	s.stats.gap(n, time.Since(g.at))
	s.logger.Info("hackernews gap filled", "after_id", g.after, "before_id", g.before, "new", n,
		"took", time.Since(started).Round(time.Millisecond))
	return nil
}

// walkGap walks the ids of g in order and hands their items over for its
// query.
func (s *Source) walkGap(ctx context.Context, g gap, emit source.Emit) (int, error) {
	w := newWalk(g.after+1, g.before-1, g.query)
	n := 0
	for !w.finished() {
		items, wake, err := s.step(ctx, w)
		if len(items) > 0 {
			if err := s.hand(ctx, items, g.query, emit); err != nil {
				return n, err
			}
			n += len(items)
		}
		if err != nil {
			return n, err
		}
		if len(items) == 0 && !wake.IsZero() {
			sleep(ctx, time.Until(wake))
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
	return n, nil
}

// searchGap fills g from the search API.
func (s *Source) searchGap(ctx context.Context, g gap, emit source.Emit) error {
	n, err := s.searchGapCount(ctx, g, emit)
	if err == nil {
		s.stats.gap(n, time.Since(g.at))
	}
	return err
}

// searchGapCount reads g from the search API and hands over, oldest first,
// the items it holds within g's ids; it returns how many.
func (s *Source) searchGapCount(ctx context.Context, g gap, emit source.Emit) (int, error) {
	upper := g.until.Unix() + 1
	lower := g.since.Unix()
	var found []hit
	complete := false
	for range s.opts.MaxSearchPages {
		v := url.Values{}
		v.Set("tags", "(story,comment)")
		v.Set("numericFilters", fmt.Sprintf("created_at_i>%d,created_at_i<%d", lower-1, upper))
		v.Set("hitsPerPage", strconv.Itoa(searchPageSize))
		body, err := s.api.get(ctx, s.api.searchURL+searchPath+"?"+v.Encode(), maxSearchBytes)
		if err != nil {
			return 0, err
		}
		page, err := decodeSearch(body)
		if err != nil {
			return 0, err
		}
		oldest := upper
		for _, h := range page.Hits {
			oldest = min(oldest, h.CreatedAtI)
			if h.id > g.after && (g.before == 0 || h.id < g.before) {
				found = append(found, h)
			}
		}
		if len(page.Hits) < searchPageSize || oldest <= lower {
			complete = true
			break
		}
		// The next page: hits no newer than the oldest so far (hits of
		// that second come again and are dropped as repeats).
		upper = oldest + 1
		if upper <= lower {
			complete = true
			break
		}
	}
	if !complete {
		s.logger.Warn("hackernews gap larger than the search pages read: its oldest part is lost",
			"after_id", g.after, "before_id", g.before, "pages", s.opts.MaxSearchPages, "oldest_read", time.Unix(upper, 0).UTC())
	}
	slices.SortFunc(found, func(a, b hit) int { return cmpInt(a.id, b.id) })
	found = slices.CompactFunc(found, func(a, b hit) bool { return a.id == b.id })
	now := time.Now().UTC()
	items := make([]source.Item, 0, len(found))
	for _, h := range found {
		it, ok := h.item(now)
		if !ok {
			s.stats.skip(reasonMalformed)
			continue
		}
		it.QueryUUID = g.query
		s.remember(h.id, it)
		items = append(items, it)
	}
	if err := s.emitItems(ctx, items, emit); err != nil {
		return 0, err
	}
	return len(items), nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// searchPage is a page of search_by_date.
type searchPage struct {
	Hits    []hit `json:"hits"`
	NbHits  int   `json:"nbHits"`
	NbPages int   `json:"nbPages"`
}

// hit is a search hit, with the fields the index sends for stories and
// comments.
type hit struct {
	ObjectID    string   `json:"objectID"`
	CreatedAtI  int64    `json:"created_at_i"`
	Author      string   `json:"author"`
	Title       *string  `json:"title"`
	URL         *string  `json:"url"`
	StoryText   *string  `json:"story_text"`
	CommentText *string  `json:"comment_text"`
	ParentID    *int64   `json:"parent_id"`
	StoryID     *int64   `json:"story_id"`
	Tags        []string `json:"_tags"`

	id int64
}

func decodeSearch(body []byte) (searchPage, error) {
	var p searchPage
	if err := json.Unmarshal(body, &p); err != nil {
		return p, fmt.Errorf("%w: search page: %v", ErrMalformed, err)
	}
	for i := range p.Hits {
		id, ok := parseID(p.Hits[i].ObjectID)
		if !ok {
			return p, fmt.Errorf("%w: search hit with objectID %q", ErrMalformed, clip(p.Hits[i].ObjectID))
		}
		p.Hits[i].id = id
	}
	return p, nil
}

// item is the item a hit becomes, as the walk would have made it of the
// same item.
func (h hit) item(now time.Time) (source.Item, bool) {
	if h.CreatedAtI <= 0 {
		return source.Item{}, false
	}
	w := &wireItem{ID: h.id, By: h.Author, Time: h.CreatedAtI, Type: typeStory}
	if slices.Contains(h.Tags, typeComment) || h.CommentText != nil {
		w.Type = typeComment
		w.Text = deref(h.CommentText)
		if h.ParentID != nil {
			w.Parent = *h.ParentID
		}
		if w.Parent <= 0 {
			return source.Item{}, false
		}
	} else {
		w.Title, w.URL, w.Text = deref(h.Title), deref(h.URL), deref(h.StoryText)
	}
	root := int64(0)
	if h.StoryID != nil && *h.StoryID > 0 && *h.StoryID != h.id {
		root = *h.StoryID
	}
	return toItem(w, root, now), true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
