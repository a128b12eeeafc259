package hackernews

import (
	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// What the rest of the spawn knows of this source, in one place.

// Name is the source's name in crawlers and comments.
const Name = "hackernews"

// Key is the one data source key of every hackernews subscriber of a
// spawn: one walk carries them all. It also keys the crawler's place in
// the walk in its cursor (api.Cursor.Sources): the newest item id it
// stored.
const Key = Name

// IDPrefix starts every comment id of this source ("hn:<item id>").
const IDPrefix = "hn:"

// Keys returns the spawn's one key: any query can be served, since the
// walk reads every item.
func (k *Kind) Keys(api.SubscriberSpec) ([]string, error) { return []string{Key}, nil }

// Scope is ScopeNode: every spawn running hackernews crawlers walks on its
// own, for the crawlers placed on it.
func (k *Kind) Scope() source.Scope { return source.ScopeNode }

// cursorID is the item id a subscriber's cursor says its crawler stored
// last, 0 when it says none.
func cursorID(spec api.SubscriberSpec) int64 {
	if spec.Cursor == nil {
		return 0
	}
	id, ok := parseID(spec.Cursor.Sources[Key])
	if !ok {
		return 0
	}
	return id
}
