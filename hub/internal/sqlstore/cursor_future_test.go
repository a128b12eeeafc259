package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestNextCursorPos(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	real, later := now.Add(-time.Hour).UnixMicro(), now.Add(-time.Minute).UnixMicro()
	future := now.Add(10 * 365 * 24 * time.Hour).UnixMicro()
	cases := []struct {
		name           string
		cur, pos, want int64
	}{
		{"forward", real, later, later},
		{"never back", later, real, later},
		{"no position", real, 0, real},
		{"first", 0, real, real},
		{"within the slack", real, now.Add(MaxCursorAhead).UnixMicro(), now.Add(MaxCursorAhead).UnixMicro()},
		{"never into the future", real, future, real},
		{"a saved future gives way", future, real, real},
		{"a saved future stays without a real one", future, future + 1, future},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextCursorPos(tc.cur, tc.pos, now); got != tc.want {
				t.Fatalf("NextCursorPos(%d, %d) = %d, want %d", tc.cur, tc.pos, got, tc.want)
			}
		})
	}
}

func TestStore_CursorIsNeverSavedInTheFuture(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		seq := uint64(0)
		apply := func(pos int64, newest time.Time) Crawler {
			t.Helper()
			seq++
			inc := api.Increment{NodeID: "n", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: 1, Position: pos, Newest: newest}
			if _, err := s.ApplyIncrements(ctx, []api.Increment{inc}); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetCrawler(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		now := time.Now().UTC().Truncate(time.Second)
		real := now.Add(-time.Hour)
		future := now.Add(10 * 365 * 24 * time.Hour)

		if got := apply(real.UnixMicro(), real); got.CursorPos != real.UnixMicro() || !got.CursorAt.Equal(real) {
			t.Fatalf("cursor %d %v after a real increment", got.CursorPos, got.CursorAt)
		}
		got := apply(future.UnixMicro(), future)
		if got.CursorPos != real.UnixMicro() || !got.CursorAt.Equal(real) || got.Usage != 2 {
			t.Fatalf("cursor %s %v, usage %d after an increment from the future: want the cursor kept and the count taken",
				time.UnixMicro(got.CursorPos).UTC(), got.CursorAt, got.Usage)
		}

		// A cursor saved in the future before cursors were bounded gives
		// way to the next real position, though it is lower.
		if err := s.db.Model(&Crawler{}).Where("id = ?", c.ID).Update("cursor_pos", future.UnixMicro()).Error; err != nil {
			t.Fatal(err)
		}
		next := now.Add(-time.Minute)
		if got := apply(next.UnixMicro(), next); got.CursorPos != next.UnixMicro() {
			t.Fatalf("cursor %s after a real increment, want the saved future one replaced by %s",
				time.UnixMicro(got.CursorPos).UTC(), next)
		}
	})
}
