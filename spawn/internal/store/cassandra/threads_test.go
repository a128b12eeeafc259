package cassandra

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

func TestStore_ThreadFromAnyComment(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	day := time.Date(2025, 3, 1, 23, 0, 0, 0, time.UTC)
	root := mkComment(1, "root", day)
	r1 := mkComment(1, "r1", day.Add(30*time.Minute))
	r1.ReplyTo, r1.ThreadID = "root", "root"
	r2 := mkComment(1, "r2", day.Add(2*time.Hour)) // the next day
	r2.ReplyTo, r2.ThreadID = "r1", "root"
	other := mkComment(1, "other", day.Add(time.Minute))
	foreign := mkComment(2, "x", day)
	foreign.ThreadID = "root"
	if _, err := s.WriteFresh(ctx, []api.Comment{r2, root, other, r1, foreign}); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"root", "r1", "r2"} {
		tid, got, err := s.Thread(ctx, 1, from)
		if err != nil {
			t.Fatalf("thread of %s: %v", from, err)
		}
		if want := []string{"root", "r1", "r2"}; tid != "root" || !slices.Equal(ids(got), want) {
			t.Fatalf("thread of %s = %s %v, want root %v", from, tid, ids(got), want)
		}
		if got[2].ReplyTo != "r1" || got[2].ThreadID != "root" || got[0].ThreadID != "" {
			t.Fatalf("thread links lost: %+v", got)
		}
	}
	if _, _, err := s.Thread(ctx, 1, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing comment: %v, want ErrNotFound", err)
	}
}
