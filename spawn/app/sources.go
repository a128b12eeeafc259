package app

import (
	"fmt"
	"reflect"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/bluesky"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/hackernews"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/mastodon"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/reddit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/rss"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/stream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/twitter"
)

// Sources are the source kinds a spawn knows, one field each: the kind's
// own settings (its flags), which declare the kind and build it
// (source.Driver). Adding a source kind is adding its line here; nothing
// else outside its package names it.
type Sources struct {
	RSS        rss.Settings
	Twitter    twitter.Settings
	Stream     stream.Settings
	Bluesky    bluesky.Settings
	Mastodon   mastodon.Settings
	HackerNews hackernews.Settings
	Reddit     reddit.Settings
}

// drivers lists the fields of s as their drivers, in declaration order.
func (s *Sources) drivers() []source.Driver {
	v := reflect.ValueOf(s).Elem()
	out := make([]source.Driver, 0, v.NumField())
	for i := 0; i < v.NumField(); i++ {
		d, ok := v.Field(i).Addr().Interface().(source.Driver)
		if !ok {
			// Every field is a driver; TestSources_EveryFieldIsADriver
			// keeps it so.
			panic(fmt.Sprintf("spawn: Sources.%s is not a source.Driver", v.Type().Field(i).Name))
		}
		out = append(out, d)
	}
	return out
}

// setDefaults applies each kind's defaults.
func (s *Sources) setDefaults() {
	for _, d := range s.drivers() {
		if dd, ok := d.(source.Defaulter); ok {
			dd.SetDefaults()
		}
	}
}
