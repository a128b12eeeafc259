package hackernews

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Edits and deletions. /v0/updates.json lists the items that changed lately
// (a new reply or vote, an edit, a deletion; HN keeps editing open for two
// hours), newest first. Every UpdatesInterval the source reads it and, for
// each listed item it handed over (the RecentItems newest, forgetting the
// oldest first) and has not read again within UpdateRecheck, reads the item:
//
//   - deleted or dead: a delete retraction of "hn:<id>", so every store
//     removes the comment and keeps it from coming back;
//   - text or title changed: an update retraction with the new text and
//     links, edited_at the moment the change was seen (HN says no edit
//     time).
//
// An item this spawn never handed over (walked elsewhere, or before the
// spawn started) is not followed here; the spawn that walked it follows it.

// recentItems remembers the items handed over: a hash of what they show,
// and when each was last read for an update.
type recentItems struct {
	mu    sync.Mutex
	items map[int64]*recent
	order []int64
	head  int
	size  int
}

type recent struct {
	sum     uint64
	checked time.Time
}

func newRecentItems(size int) *recentItems {
	return &recentItems{items: make(map[int64]*recent, min(size, 1<<16)), size: size}
}

func contentSum(text string, links []string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	for _, l := range links {
		h.Write([]byte{0})
		h.Write([]byte(l))
	}
	return h.Sum64()
}

func (r *recentItems) put(id int64, sum uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.items[id]; ok {
		e.sum = sum
		return
	}
	if len(r.order) < r.size {
		r.order = append(r.order, id)
	} else {
		delete(r.items, r.order[r.head])
		r.order[r.head] = id
		r.head = (r.head + 1) % r.size
	}
	r.items[id] = &recent{sum: sum}
}

// due reports whether id was handed over and not read for an update since
// before; it marks it read now.
func (r *recentItems) due(id int64, now time.Time, recheck time.Duration) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.items[id]
	if !ok || (!e.checked.IsZero() && now.Sub(e.checked) < recheck) {
		return 0, false
	}
	e.checked = now
	return e.sum, true
}

// forget drops id: it was taken back, nothing more can change.
func (r *recentItems) forget(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.items[id]; ok {
		e.sum, e.checked = 0, time.Now().Add(1<<62) // never due again; evicted in turn
	}
}

// remember records an item handed over, to follow its updates.
func (s *Source) remember(id int64, it source.Item) {
	s.recent.put(id, contentSum(it.Text, it.Links))
}

// retracter holds the node's function for the source's retractions.
type retracter struct {
	mu sync.Mutex
	fn func([]api.Retraction)
}

// Retractions takes the function the source tells its retractions.
func (s *Source) Retractions(fn func([]api.Retraction)) {
	s.retract.mu.Lock()
	s.retract.fn = fn
	s.retract.mu.Unlock()
}

func (s *Source) tell(x api.Retraction) {
	s.retract.mu.Lock()
	fn := s.retract.fn
	s.retract.mu.Unlock()
	s.stats.retractions.Add(1)
	if fn != nil {
		fn([]api.Retraction{x})
	}
}

// runUpdates follows updates.json until ctx ends.
func (s *Source) runUpdates(ctx context.Context) {
	t := time.NewTicker(s.opts.UpdatesInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.checkUpdates(ctx); err != nil {
			if !passing(ctx, err) {
				return
			}
			s.setErr(partUpdates, err)
			s.logger.Warn("hackernews updates unreadable", "err", err)
			continue
		}
		s.setErr(partUpdates, nil)
	}
}

// checkUpdates reads updates.json once and the listed items this source
// handed over, telling what changed.
func (s *Source) checkUpdates(ctx context.Context) error {
	body, err := s.api.get(ctx, s.api.apiURL+updatesPath, maxListBytes)
	if err != nil {
		return err
	}
	var doc struct {
		Items []int64 `json:"items"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("%w: updates: %v", ErrMalformed, err)
	}
	now := time.Now()
	for _, id := range doc.Items {
		sum, ok := s.recent.due(id, now, s.opts.UpdateRecheck)
		if !ok {
			continue
		}
		w, err := s.api.item(ctx, id)
		if err != nil {
			return err
		}
		if w == nil {
			continue
		}
		s.changedItem(w, sum)
	}
	return nil
}

// changedItem tells what became of an item handed over whose content had
// the hash sum.
func (s *Source) changedItem(w *wireItem, sum uint64) {
	at := time.Now().UTC()
	if w.gone() {
		reason := "hackernews item deleted"
		if !w.Deleted {
			reason = "hackernews item dead"
		}
		s.recent.forget(w.ID)
		s.tell(api.Retraction{Op: api.RetractDelete, Source: Name, ID: commentID(w.ID), At: at, Reason: reason})
		return
	}
	text, links := content(w.Type, w.Title, w.Text, w.URL)
	if next := contentSum(text, links); next != sum {
		s.recent.put(w.ID, next)
		s.tell(api.Retraction{Op: api.RetractUpdate, Source: Name, ID: commentID(w.ID), Text: text, Links: links,
			EditedAt: at, At: at, Reason: "hackernews item edited"})
	}
}
