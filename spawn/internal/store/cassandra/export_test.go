package cassandra

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

func TestExportPagesAcrossDays(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	base := time.Date(2024, 3, 10, 6, 0, 0, 0, time.UTC)
	// Four days with comments (one of them a gap day in between), newest
	// first within each day as the partition keeps them.
	perDay := map[int]int{0: 5, 1: 1, 3: 9, 4: 4}
	var batch []api.Comment
	var want []string
	for _, d := range []int{0, 1, 3, 4} {
		for i := perDay[d] - 1; i >= 0; i-- {
			id := fmt.Sprintf("d%d-%d", d, i)
			want = append(want, id)
			batch = append(batch, mkComment(1, id, base.AddDate(0, 0, d).Add(time.Duration(i)*time.Minute)))
		}
	}
	batch = append(batch, mkComment(2, "other", base))
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	export := func(r store.Range, limit int) []string {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			p, err := s.Export(ctx, 1, r, cursor, limit)
			if err != nil {
				t.Fatalf("Export(cursor %q): %v", cursor, err)
			}
			if len(p.Comments) > limit {
				t.Fatalf("a page of %d holds %d", limit, len(p.Comments))
			}
			got = append(got, ids(p.Comments)...)
			if p.Next == "" {
				return got
			}
			if pages > 100 {
				t.Fatal("export does not end")
			}
			cursor = p.Next
		}
	}
	for _, limit := range []int{1, 2, 5, 19, 50} {
		if got := export(store.Range{}, limit); !slices.Equal(got, want) {
			t.Fatalf("limit %d: exported %v, want %v", limit, got, want)
		}
	}
	// Day 3 alone, and half of day 0.
	day3 := store.Range{Since: base.AddDate(0, 0, 3).Truncate(24 * time.Hour), Until: base.AddDate(0, 0, 4).Truncate(24 * time.Hour)}
	if got := export(day3, 4); len(got) != 9 {
		t.Fatalf("day 3 exported %v, want its 9 comments", got)
	}
	if got := export(store.Range{Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute)}, 10); !slices.Equal(got, []string{"d0-3", "d0-2"}) {
		t.Fatalf("two minutes of day 0 exported %v", got)
	}
	if _, err := s.Export(ctx, 1, store.Range{}, "garbage!", 10); !errors.Is(err, store.ErrCursor) {
		t.Fatalf("a bad cursor: %v, want ErrCursor", err)
	}
	if p, err := s.Export(ctx, 77, store.Range{}, "", 10); err != nil || len(p.Comments) != 0 || p.Next != "" {
		t.Fatalf("a crawler with no comments: %+v, %v", p, err)
	}
}
