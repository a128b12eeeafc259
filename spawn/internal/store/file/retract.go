package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var _ store.Retractor = (*Store)(nil)

// ID names the store: every spawn on the directory reads the same one.
func (s *Store) ID() string { return s.id }

// lineHead is what a removal reads of a line to decide about it.
type lineHead struct {
	ID          string    `json:"id"`
	Source      string    `json:"source"`
	Author      string    `json:"author"`
	AuthorID    string    `json:"author_id"`
	PublishedAt time.Time `json:"published_at"`
}

// Bury appends the tombstones to the tombstone file, then removes the
// comments they cover. A comment is found by its id, an author's by the
// author's id or handle, in the index of each crawler whose index is in
// memory (the crawlers written lately): those lines go at once. Finding
// the rest means reading the files of the crawlers whose index is not in
// memory, so that is left to Sweep, unless a tombstone is Exact (a
// forget), which reads every crawler of its source now. Meanwhile no read (Recent, Export, Thread) shows a covered comment.
// Each day file holding one is rewritten once (rewriteDay), under the
// crawler's locks.
func (s *Store) Bury(ctx context.Context, tombstones []store.Tombstone) ([]store.Removed, error) {
	if len(tombstones) == 0 {
		return nil, nil
	}
	var lines []tombLine
	var exact, byID []store.Tombstone
	lazy := false
	for _, ts := range tombstones {
		if ts.Source == "" || (ts.CommentID == "" && ts.Author == "") {
			continue
		}
		lines = append(lines, linesOf(ts)...)
		if ts.Exact {
			exact = append(exact, ts)
		} else {
			byID = append(byID, ts) // by comment id or author, in the indexes in memory
		}
	}
	if err := s.tombs.append(lines); err != nil {
		return nil, err
	}
	var removed []store.Removed
	if len(exact) > 0 {
		got, err := s.buryEverywhere(ctx, exact)
		removed = append(removed, got...)
		if err != nil {
			return removed, err
		}
	}
	if len(byID) > 0 {
		cached, all, err := s.cachedCrawlers()
		if err != nil {
			return removed, err
		}
		for _, id := range cached {
			if err := ctx.Err(); err != nil {
				return removed, err
			}
			got, err := s.buryCrawler(id, byID, true)
			removed = append(removed, got...)
			if err != nil {
				return removed, err
			}
		}
		lazy = lazy || len(cached) < all
	}
	if lazy {
		s.dirty.Store(true)
	}
	return removed, nil
}

// cachedCrawlers lists the crawlers whose index is in memory, and how many
// crawlers the store holds.
func (s *Store) cachedCrawlers() ([]int64, int, error) {
	ids, err := s.crawlerIDs()
	if err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var cached []int64
	for _, id := range ids {
		if _, ok := s.crawlers[id]; ok {
			cached = append(cached, id)
		}
	}
	return cached, len(ids), nil
}

// buryEverywhere reads every crawler of the tombstones' sources and
// removes what they cover.
func (s *Store) buryEverywhere(ctx context.Context, tombstones []store.Tombstone) ([]store.Removed, error) {
	sources := map[string]bool{}
	for _, ts := range tombstones {
		sources[ts.Source] = true
	}
	ids, err := s.crawlerIDs()
	if err != nil {
		return nil, err
	}
	var removed []store.Removed
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if src := crawlerSource(s.crawlerDir(id)); src != "" && !sources[src] {
			continue
		}
		got, err := s.buryCrawler(id, tombstones, false)
		removed = append(removed, got...)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// Sweep reads every crawler, when some Bury left comments for it, and
// removes the comments a live tombstone covers.
func (s *Store) Sweep(ctx context.Context) ([]store.Removed, error) {
	if !s.dirty.Swap(false) {
		return nil, nil
	}
	ids, err := s.crawlerIDs()
	if err != nil {
		s.dirty.Store(true)
		return nil, err
	}
	var removed []store.Removed
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			s.dirty.Store(true)
			return removed, err
		}
		got, err := s.sweepCrawler(id)
		removed = append(removed, got...)
		if err != nil {
			s.dirty.Store(true)
			return removed, err
		}
	}
	return removed, nil
}

// buryCrawler removes one crawler's comments that the tombstones cover;
// byIndex reads only the day files its index names for the tombstones'
// comment ids and authors.
func (s *Store) buryCrawler(id int64, tombstones []store.Tombstone, byIndex bool) ([]store.Removed, error) {
	return s.rewriteCrawler(id, byIndex, tombstones, func(cm *api.Comment) bool {
		for _, ts := range tombstones {
			if ts.Covers(cm) {
				return true
			}
		}
		return false
	})
}

// sweepCrawler removes one crawler's comments a live tombstone covers.
func (s *Store) sweepCrawler(id int64) ([]store.Removed, error) {
	if !s.tombs.any() {
		return nil, nil
	}
	return s.rewriteCrawler(id, false, nil, s.tombs.coversNow)
}

// rewriteCrawler drops the lines of one crawler that gone says are gone:
// from the day files its index names for the tombstones' comment ids
// (byIndex), else from every day file.
func (s *Store) rewriteCrawler(id int64, byIndex bool, tombstones []store.Tombstone, gone func(*api.Comment) bool) ([]store.Removed, error) {
	c, err := s.crawler(id)
	if err != nil {
		return nil, err
	}
	dir := s.crawlerDir(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.refresh(dir); err != nil {
		return nil, err
	}
	var names []string
	if byIndex {
		days := map[string]bool{}
		for _, ts := range tombstones {
			if ts.CommentID != "" {
				if day, ok := c.ids[ts.CommentID]; ok {
					days[day] = true
				}
				continue
			}
			for _, a := range authorTargets(ts.Author) {
				for _, cid := range c.authors[a] {
					if day, ok := c.ids[cid]; ok {
						days[day] = true
					}
				}
			}
		}
		for day := range days {
			names = append(names, day)
		}
		slices.Sort(names)
	} else if names, err = dayFiles(dir); err != nil {
		return nil, err
	}
	var removed []store.Removed
	for _, name := range names {
		var dropped []string
		size, changed, err := rewriteDay(filepath.Join(dir, name), func(line []byte) ([]byte, bool) {
			var h lineHead
			if json.Unmarshal(line, &h) != nil {
				return nil, false
			}
			cm := api.Comment{ID: h.ID, Source: h.Source, Author: h.Author, AuthorID: h.AuthorID, PublishedAt: h.PublishedAt}
			if gone(&cm) {
				dropped = append(dropped, h.ID)
				return nil, true
			}
			return nil, false
		})
		if err != nil {
			return removed, err
		}
		if !changed {
			continue
		}
		c.indexed[name] = size
		for _, cid := range dropped {
			delete(c.ids, cid)
			removed = append(removed, store.Removed{CrawlerID: id, CommentID: cid})
		}
	}
	if len(removed) > 0 {
		if err := c.rewrote(dir); err != nil {
			return removed, err
		}
		return removed, syncDir(dir)
	}
	return removed, nil
}

// Lift appends lift lines for the account tombstones of the authors.
func (s *Store) Lift(ctx context.Context, source string, authors []string) error {
	var lines []tombLine
	for _, a := range authors {
		for _, target := range authorTargets(a) {
			lines = append(lines, tombLine{Key: tombKey(keyAccount, source, target), Lift: true})
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.tombs.append(lines)
}

// Edit rewrites the day files holding the edited comments, in every
// crawler of their sources.
func (s *Store) Edit(ctx context.Context, edits []store.Edit) (int, error) {
	if len(edits) == 0 {
		return 0, nil
	}
	bySource := map[string]map[string]store.Edit{}
	for _, e := range edits {
		if e.Source == "" || e.CommentID == "" {
			continue
		}
		m := bySource[e.Source]
		if m == nil {
			m = map[string]store.Edit{}
			bySource[e.Source] = m
		}
		if old, ok := m[e.CommentID]; !ok || e.EditedAt.After(old.EditedAt) {
			m[e.CommentID] = e
		}
	}
	ids, err := s.crawlerIDs()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		src := crawlerSource(s.crawlerDir(id))
		for source, byID := range bySource {
			if src != "" && src != source {
				continue
			}
			n, err := s.editCrawler(id, source, byID)
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// editCrawler applies edits of one source to one crawler.
func (s *Store) editCrawler(id int64, source string, byID map[string]store.Edit) (int, error) {
	c, err := s.crawler(id)
	if err != nil {
		return 0, err
	}
	dir := s.crawlerDir(id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	unlock, err := lockDir(dir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := c.refresh(dir); err != nil {
		return 0, err
	}
	days := map[string]bool{}
	for cid := range byID {
		if day, ok := c.ids[cid]; ok {
			days[day] = true
		}
	}
	n := 0
	for day := range days {
		size, changed, err := rewriteDay(filepath.Join(dir, day), func(line []byte) ([]byte, bool) {
			var head struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(line, &head) != nil {
				return nil, false
			}
			e, ok := byID[head.ID]
			if !ok {
				return nil, false
			}
			var cm api.Comment
			if json.Unmarshal(line, &cm) != nil || cm.Source != source || !e.EditedAt.After(cm.EditedAt) {
				return nil, false
			}
			cm.Text, cm.Links, cm.EditedAt = e.Text, e.Links, e.EditedAt.UTC()
			out, err := json.Marshal(cm)
			if err != nil {
				return nil, false
			}
			n++
			return out, true
		})
		if err != nil {
			return n, err
		}
		if changed {
			c.indexed[day] = size
			if err := c.rewrote(dir); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Applied reads the hub log's highest retraction the store has applied.
func (s *Store) Applied(ctx context.Context) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, tombDir, appliedFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, ctx.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("file: unable to read the applied mark: %w", err)
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("file: the applied mark %q is not a number", bytes.TrimSpace(b))
	}
	return v, nil
}

// SetApplied raises the applied mark to seq (never lowers it).
func (s *Store) SetApplied(ctx context.Context, seq uint64) error {
	dir := filepath.Join(s.dir, tombDir)
	if _, err := mkdir(dir); err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := s.Applied(ctx)
	if err != nil || cur >= seq {
		return err
	}
	path := filepath.Join(dir, appliedFile)
	tmp := filepath.Join(dir, tmpPrefix+appliedFile+tmpSuffix)
	if err := writeSynced(tmp, []byte(strconv.FormatUint(seq, 10)+"\n")); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("file: unable to write the applied mark: %w", err)
	}
	return nil
}
