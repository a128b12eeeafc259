package rss

import (
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Name is the kind's name in crawler documents.
const Name = "rss"

// Settings are the spawn's settings of the rss kind; it is its Driver.
type Settings struct {
	Interval    time.Duration `flag:"feed-interval" usage:"how often a feed is fetched until its publishing rate is known"`
	MinInterval time.Duration `flag:"feed-min-interval" usage:"fetch a busy feed at most this often (0: half of --feed-interval)"`
	MaxInterval time.Duration `flag:"feed-max-interval" usage:"fetch a quiet feed at least this often (0: 8 times --feed-interval)"`
	HostDelay   time.Duration `flag:"feed-host-delay" usage:"minimum pause between two requests to one host (0: 1s, or --feed-min-interval if shorter)"`
}

// SetDefaults sets the interval help shows; the bounds derive from it.
func (s *Settings) SetDefaults() { s.Interval = DefaultInterval }

// Info declares the kind: a crawler's query is its feed URLs, filtered by
// its keywords; every spawn offers it; feeds are not replayed, and a
// deletion is remembered as long as other kinds' (feeds never say one).
func (s *Settings) Info() api.SourceInfo {
	return api.SourceInfo{
		Name:              Name,
		Title:             "RSS and Atom feeds",
		Query:             api.QueryURLs,
		QueryHint:         "https://go.dev/blog/feed.atom",
		Cursor:            api.CursorNone,
		TombstoneLifetime: source.Days(8),
		Scope:             api.ScopeQuery,
		Settings:          source.SettingsOf(s),
	}
}

// Build returns the kind; feeds are fetched through the crawl-target guard.
func (s *Settings) Build(deps source.Deps) (source.Kind, error) {
	return New(Options{Client: deps.Client(), Interval: s.Interval, MinInterval: s.MinInterval, MaxInterval: s.MaxInterval,
		HostDelay: s.HostDelay, Logger: deps.Logger}), nil
}
