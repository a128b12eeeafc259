package cluster

import (
	"maps"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// TestSpec_CarriesWhereTheCrawlerStands: the subscriber a spawn is sent
// carries the crawler's cursor: its newest source id per data source with
// its time and position; a crawler of a source whose gaps are filled from
// history or replayed, that has counted nothing yet, reads from its
// creation; others start where they are.
func TestSpec_CarriesWhereTheCrawlerStands(t *testing.T) {
	f := newFixture(t)
	created := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	at := created.Add(time.Hour)
	ids := sqlstore.SourceIDs{"twitter": "1862000000000000000"}
	cases := []struct {
		name string
		row  sqlstore.Crawler
		want *api.Cursor
	}{
		{"twitter with a cursor", sqlstore.Crawler{Source: api.SourceTwitter, CreatedAt: created, CursorAt: &at, CursorIDs: ids},
			&api.Cursor{PublishedAt: at, Sources: ids}},
		{"twitter without", sqlstore.Crawler{Source: api.SourceTwitter, CreatedAt: created}, &api.Cursor{PublishedAt: created}},
		{"mastodon without", sqlstore.Crawler{Source: api.SourceMastodon, CreatedAt: created}, &api.Cursor{PublishedAt: created}},
		{"bluesky without", sqlstore.Crawler{Source: api.SourceBluesky, CreatedAt: created}, &api.Cursor{Position: created.UnixMicro()}},
		{"rss without", sqlstore.Crawler{Source: api.SourceRSS, CreatedAt: created}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.h.mu.Lock()
			spec := f.h.specLocked(&crawler{row: tc.row})
			f.h.mu.Unlock()
			got := spec.Cursor
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("cursor %+v, want none", got)
			case tc.want == nil:
			case got == nil || !got.PublishedAt.Equal(tc.want.PublishedAt) || got.Position != tc.want.Position || !maps.Equal(got.Sources, tc.want.Sources):
				t.Fatalf("cursor %+v, want %+v", got, tc.want)
			}
		})
	}
}
