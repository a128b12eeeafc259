package node

import (
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

func TestBehindCursor(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		item   source.Item
		cursor api.Cursor
		behind bool
	}{
		{"older publication", source.Item{PublishedAt: at.Add(-time.Second)}, api.Cursor{PublishedAt: at}, true},
		{"same publication", source.Item{PublishedAt: at}, api.Cursor{PublishedAt: at}, true},
		{"newer publication", source.Item{PublishedAt: at.Add(time.Second)}, api.Cursor{PublishedAt: at}, false},
		// A post created earlier but logged later is new: positions decide.
		{"logged later, created earlier", source.Item{PublishedAt: at.Add(-time.Hour), Position: 20}, api.Cursor{PublishedAt: at, Position: 10}, false},
		{"logged earlier, created later", source.Item{PublishedAt: at.Add(time.Hour), Position: 5}, api.Cursor{PublishedAt: at, Position: 10}, true},
		{"same position", source.Item{Position: 10}, api.Cursor{Position: 10}, true},
		{"cursor position in the future", source.Item{PublishedAt: at.Add(time.Second), FetchedAt: at, Position: at.UnixMicro()}, api.Cursor{PublishedAt: at, Position: at.Add(10 * 365 * 24 * time.Hour).UnixMicro()}, false},
		{"cursor without a position", source.Item{PublishedAt: at.Add(time.Second), Position: 5}, api.Cursor{PublishedAt: at}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := behindCursor(tc.item, &tc.cursor); got != tc.behind {
				t.Fatalf("behindCursor = %v, want %v", got, tc.behind)
			}
		})
	}
}
