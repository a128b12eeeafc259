package file

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

func TestStore_ThreadInPublishedOrderAcrossDays(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	day := time.Date(2025, 3, 1, 23, 0, 0, 0, time.UTC)
	comments := []api.Comment{
		{ID: "r2", CrawlerID: 1, Text: "second reply", PublishedAt: day.Add(2 * time.Hour), ReplyTo: "r1", ThreadID: "root"},
		{ID: "root", CrawlerID: 1, Text: "root", PublishedAt: day},
		{ID: "other", CrawlerID: 1, Text: "unrelated", PublishedAt: day.Add(time.Minute)},
		{ID: "r1", CrawlerID: 1, Text: "first reply", PublishedAt: day.Add(30 * time.Minute), ReplyTo: "root", ThreadID: "root"},
		{ID: "x", CrawlerID: 2, Text: "another crawler", PublishedAt: day, ThreadID: "root"},
	}
	if err := s.Write(context.Background(), comments); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"root", "r1", "r2"} {
		tid, got, err := s.Thread(context.Background(), 1, from)
		if err != nil {
			t.Fatalf("thread of %s: %v", from, err)
		}
		var ids []string
		for _, c := range got {
			ids = append(ids, c.ID)
		}
		if tid != "root" || !slices.Equal(ids, []string{"root", "r1", "r2"}) {
			t.Fatalf("thread of %s = %s %v, want root [root r1 r2]", from, tid, ids)
		}
	}
	if _, _, err := s.Thread(context.Background(), 1, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing comment: %v, want ErrNotFound", err)
	}
}
