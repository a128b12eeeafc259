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

// TombstoneLifetime is how long a deletion is remembered: a gap is filled
// at most MaxSearchPages pages of 1000 search hits back, about four days
// of Hacker News at the rate measured (docs/sources/hackernews.md), and a
// quiet week holds fewer items a day, so a week.
var TombstoneLifetime = source.Days(7)

// Settings are the spawn's settings of the hackernews kind; it is its
// Driver. Hacker News needs no credentials: every spawn offers it.
type Settings struct {
	APIURL    string `flag:"hackernews-api-url" usage:"base URL of the Hacker News Firebase API the hackernews source walks (/v0/maxitem.json, /v0/item/ID.json, /v0/updates.json)"`
	SearchURL string `flag:"hackernews-search-url" usage:"base URL of the Algolia HN search API the hackernews source fills long gaps from (/api/v1/search_by_date)"`
}

// SetDefaults sets the services' public addresses.
func (s *Settings) SetDefaults() {
	s.APIURL = DefaultAPIURL
	s.SearchURL = DefaultSearchURL
}

// Info declares the kind. Each spawn walks Hacker News once for the
// crawlers placed on it (ScopeNode): the API states no limit and the walk
// costs about half a request a second, so spreading crawlers by query
// spreads the matching. A crawler carries the newest item id it stored
// (CursorHistory): a move fills the ids after it.
func (s *Settings) Info() api.SourceInfo {
	return api.SourceInfo{
		Name:              Name,
		Title:             "Hacker News",
		Query:             api.QueryLanguage,
		QueryHint:         `golang OR "go 1.24" -hiring`,
		IDPrefix:          IDPrefix,
		Cursor:            api.CursorHistory,
		TombstoneLifetime: TombstoneLifetime,
		Scope:             api.ScopeNode,
		Settings:          source.SettingsOf(s),
	}
}

// Build returns the kind. The base URLs are the operator's; requests go
// through the crawl-target guard all the same, so a mirror on a private
// address needs --allow-targets.
func (s *Settings) Build(deps source.Deps) (source.Kind, error) {
	return New(Options{APIURL: s.APIURL, SearchURL: s.SearchURL, Client: deps.Client(), Logger: deps.Logger})
}

// Keys returns the spawn's one key: any query can be served, since the
// walk reads every item.
func (k *Kind) Keys(source.Sub) ([]string, error) { return []string{Key}, nil }

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
