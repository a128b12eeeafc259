package sqlstore

import (
	"context"
	"maps"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// TestStore_ApplyIncrementsMergesSourceIDsForward: each data source's id
// in the crawler's cursor moves forward only, compared as a number, key by
// key; a batch with none leaves them, and a replayed increment changes
// nothing.
func TestStore_ApplyIncrementsMergesSourceIDsForward(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		const x, m = "twitter", "mastodon:https://mastodon.example"
		steps := []struct {
			sources map[string]string
			want    map[string]string
		}{
			{nil, nil},
			{map[string]string{x: "1700"}, map[string]string{x: "1700"}},
			{map[string]string{x: "999", m: "110"}, map[string]string{x: "1700", m: "110"}},    // shorter is older
			{map[string]string{x: "10000"}, map[string]string{x: "10000", m: "110"}},           // longer is newer
			{nil, map[string]string{x: "10000", m: "110"}},                                     // none: kept
			{map[string]string{m: "109", x: "10001"}, map[string]string{x: "10001", m: "110"}}, // each key alone
		}
		for i, st := range steps {
			inc := api.Increment{NodeID: "n", Seq: uint64(i + 1), CrawlerID: c.ID, UserID: u.ID, Count: 1, Sources: st.sources}
			for range 2 { // the second time is a replay: applied once
				if _, err := s.ApplyIncrements(ctx, []api.Increment{inc}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.GetCrawler(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.CursorIDs, st.want) {
				t.Fatalf("step %d: cursor ids %v, want %v", i, got.CursorIDs, st.want)
			}
		}
		if cu, _ := usageOf(t, s, c.ID, u.ID); cu != int64(len(steps)) {
			t.Fatalf("usage %d, want %d", cu, len(steps))
		}
		// An update of the crawler's configuration keeps its cursor.
		got, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error { c.CommentLimit = 5; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if got, _ = s.GetCrawler(ctx, got.ID); got.CursorIDs[x] != "10001" {
			t.Fatalf("cursor ids after an update %v", got.CursorIDs)
		}
	})
}
