package mastodon

import (
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// What an instance takes back. Its streams send `status.update` with the
// edited status and `delete` with the deleted status's id on the instance.
// An edit becomes an update retraction (the comment's text and links, and
// edited_at, replaced wherever it is stored); a delete becomes a delete
// retraction of the status's URI — the comment id — found through the
// instance's cache of recent statuses (local id → uri, Options
// .StatusCacheSize of them, the oldest forgotten first). A delete of a
// status older than the cache, or one this spawn never read, cannot be
// mapped to a comment here: it is counted (bw_spawn_source_skipped_total,
// reason unmapped_delete) and left, and the comment stays stored until a
// spawn that read the status sees its delete, or the crawler's retention
// drops it.

// retracter holds the node's function for the instance's retractions.
type retracter struct {
	mu sync.Mutex
	fn func([]api.Retraction)
}

func (r *retracter) set(fn func([]api.Retraction)) {
	r.mu.Lock()
	r.fn = fn
	r.mu.Unlock()
}

func (r *retracter) tell(x api.Retraction) {
	r.mu.Lock()
	fn := r.fn
	r.mu.Unlock()
	if fn != nil {
		fn([]api.Retraction{x})
	}
}

var _ source.Retracter = (*instance)(nil)

// Retractions takes the function the instance tells its retractions.
func (i *instance) Retractions(fn func([]api.Retraction)) { i.retract.set(fn) }

// deleted tells the delete of a status this instance's connection read.
func (s *session) deleted(f frame) {
	if f.deleted == "" {
		s.stats.ignored.Add(1)
		return
	}
	s.handling.Lock()
	defer s.handling.Unlock()
	l, ok := s.recent.get(f.deleted)
	if s.dropHeld(f.deleted) {
		// Deleted while it waited for its parent: it is never handed
		// over, nor taken again from another stream.
		s.recent.put(f.deleted, link{uri: l.uri, deleted: true})
		return
	}
	switch {
	case !ok || l.uri == "":
		s.stats.unmapped.Add(1)
		return
	case l.deleted:
		s.stats.duplicates.Add(1) // the same delete on another stream
		return
	}
	l.deleted = true
	s.recent.put(f.deleted, l)
	s.stats.retractions.Add(1)
	s.retract.tell(api.Retraction{Op: api.RetractDelete, Source: api.SourceMastodon, ID: l.uri, At: time.Now().UTC(),
		Reason: "mastodon delete event"})
}

// edited tells an edit: the status's new text and links, and when.
func (s *session) edited(it source.Item, editedAt string) {
	at, err := time.Parse(time.RFC3339Nano, editedAt)
	if err != nil {
		return
	}
	s.stats.retractions.Add(1)
	s.retract.tell(api.Retraction{Op: api.RetractUpdate, Source: api.SourceMastodon, ID: it.ID, Text: it.Text, Links: it.Links,
		EditedAt: at.UTC(), At: time.Now().UTC(), Reason: "mastodon status.update"})
}
