package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/storetest"
)

func TestStore_Retractor(t *testing.T) {
	var dir string
	storetest.CheckRetractor(t, func(t *testing.T, fresh bool) store.Store {
		if fresh {
			dir = t.TempDir()
		}
		return openStore(t, dir)
	})
}

func TestBury_CrashBeforeRenameLosesNoOtherLine(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	var cs []api.Comment
	for i := range 5 {
		cs = append(cs, storetest.Comment(7, fmt.Sprintf("at://a/%d", i), "did:plc:a", "a.test", i))
	}
	if err := s.Write(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(dir, "7", storetest.Day.Format(dayLayout)+fileExt)
	before, err := os.ReadFile(day)
	if err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	beforeRename = func(string, string) error { return crash }
	t.Cleanup(func() { beforeRename = nil })
	if _, err := s.Bury(context.Background(), []store.Tombstone{{Source: storetest.Source, CommentID: cs[2].ID, Until: time.Now().Add(time.Hour)}}); !errors.Is(err, crash) {
		t.Fatalf("Bury: %v", err)
	}
	if after, _ := os.ReadFile(day); string(after) != string(before) {
		t.Errorf("the day file changed although the rename never happened")
	}
	beforeRename = nil
	s.Close()
	// After the restart the tombstone, written first, holds: the removal
	// is applied again (the spawn retries what it did not acknowledge),
	// and every other line is there.
	reopened := openStore(t, dir)
	got, err := reopened.Bury(context.Background(), []store.Tombstone{{Source: storetest.Source, CommentID: cs[2].ID, Until: time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	// The reopened store has no index in memory yet: the sweep finds it.
	swept, err := reopened.Sweep(context.Background())
	if err != nil || len(got)+len(swept) != 1 {
		t.Fatalf("Bury and Sweep again removed %v and %v, %v", got, swept, err)
	}
	recent, err := reopened.Recent(context.Background(), 7, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range recent {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	if want := []string{cs[0].ID, cs[1].ID, cs[3].ID, cs[4].ID}; !slices.Equal(ids, want) {
		t.Errorf("after the crash and retry: %v, want %v", ids, want)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "7"))
	for _, e := range entries {
		if filepath.Ext(e.Name()) == tmpSuffix {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
}

func TestExpire_DropsWholeDaysPastTheirRetentionOnly(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	c := func(crawler int64, id string, published time.Time, retention time.Duration) api.Comment {
		cm := comment(crawler, id, published)
		cm.Retention = retention
		return cm
	}
	recent := time.Now().UTC().Add(-time.Hour)
	day := func(t time.Time) string { return t.Format(dayLayout) + fileExt }
	short := c(1, "short", recent, 2*time.Hour) // day kept until its end + 2h
	mixed1 := c(2, "mixed-short", recent, 2*time.Hour)
	mixed2 := c(2, "mixed-long", recent, 30*24*time.Hour) // the longer wins for the day
	forever := c(3, "forever", recent, 0)
	if err := s.Write(context.Background(), []api.Comment{short, mixed1, mixed2, forever}); err != nil {
		t.Fatal(err)
	}
	endOfDay := recent.Truncate(24 * time.Hour).Add(24 * time.Hour)
	for _, tc := range []struct {
		at      time.Time
		dropped int
		gone    []string
	}{
		{at: endOfDay.Add(time.Hour), dropped: 0},
		{at: endOfDay.Add(2*time.Hour + time.Second), dropped: 1, gone: []string{filepath.Join("1", day(recent))}},
		{at: endOfDay.Add(31 * 24 * time.Hour), dropped: 2, gone: []string{filepath.Join("2", day(recent))}},
	} {
		n, err := s.Expire(context.Background(), tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if n != tc.dropped {
			t.Errorf("Expire(%s) dropped %d comments, want %d", tc.at, n, tc.dropped)
		}
		for _, g := range tc.gone {
			if _, err := os.Stat(filepath.Join(dir, g)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is still there at %s", g, tc.at)
			}
		}
	}
	if got, _ := s.Recent(context.Background(), 3, 10); len(got) != 1 {
		t.Errorf("the comment kept for good: %v", got)
	}
	// The index forgot the dropped comments: written again (a replay
	// within a new retention), they are stored.
	again := c(1, "short", time.Now().UTC(), 2*time.Hour)
	if fresh, err := s.WriteFresh(context.Background(), []api.Comment{again}); err != nil || !fresh[0] {
		t.Errorf("rewriting a dropped comment: %v, %v", fresh, err)
	}
}

func TestExport_CursorSurvivesARewriteOfItsDay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove []int // comments removed after the first page
		want   []int // comments the rest of the export returns
	}{
		{name: "a line before the cursor", remove: []int{1}, want: []int{4, 5, 6, 7, 8, 9}},
		{name: "the last line read", remove: []int{3}, want: []int{4, 5, 6, 7, 8, 9}},
		{name: "lines around the cursor", remove: []int{2, 3, 4}, want: []int{5, 6, 7, 8, 9}},
		{name: "lines after the cursor", remove: []int{5, 9}, want: []int{4, 6, 7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, t.TempDir())
			var cs []api.Comment
			for i := range 10 {
				cs = append(cs, storetest.Comment(1, fmt.Sprintf("at://e/%d", i), fmt.Sprintf("did:plc:%d", i), "e.test", i))
				// One comment a write, so the file is in write order.
				if err := s.Write(context.Background(), cs[i:]); err != nil {
					t.Fatal(err)
				}
			}
			first, err := s.Export(context.Background(), 1, store.Range{}, "", 4)
			if err != nil || len(first.Comments) != 4 || first.Next == "" {
				t.Fatalf("first page: %d comments, next %q, %v", len(first.Comments), first.Next, err)
			}
			var ts []store.Tombstone
			for _, i := range tc.remove {
				ts = append(ts, store.Tombstone{Source: storetest.Source, CommentID: cs[i].ID, Until: time.Now().Add(time.Hour)})
			}
			if _, err := s.Bury(context.Background(), ts); err != nil {
				t.Fatal(err)
			}
			// Rewritten again by an edit that makes a line longer, so old
			// offsets fall mid-line.
			if _, err := s.Edit(context.Background(), []store.Edit{{Source: storetest.Source, CommentID: cs[0].ID,
				Text: "a much longer text than the one it replaces, to move every offset after it", EditedAt: time.Now()}}); err != nil {
				t.Fatal(err)
			}
			var got []string
			cur := first.Next
			for cur != "" {
				p, err := s.Export(context.Background(), 1, store.Range{}, cur, 4)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range p.Comments {
					got = append(got, c.ID)
				}
				cur = p.Next
			}
			var want []string
			for _, i := range tc.want {
				want = append(want, cs[i].ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("rest of the export: %q, want %q", got, want)
			}
		})
	}
}
