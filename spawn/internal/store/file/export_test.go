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
)

// exportAll pages through an export with the given page size and returns
// every comment and the number of pages.
func exportAll(t *testing.T, s *Store, crawler int64, r store.Range, limit int) ([]api.Comment, int) {
	t.Helper()
	var all []api.Comment
	cursor, pages := "", 0
	for {
		p, err := s.Export(context.Background(), crawler, r, cursor, limit)
		if err != nil {
			t.Fatalf("Export(cursor %q): %v", cursor, err)
		}
		if len(p.Comments) > limit {
			t.Fatalf("a page of %d holds %d comments", limit, len(p.Comments))
		}
		all = append(all, p.Comments...)
		pages++
		if p.Next == "" {
			return all, pages
		}
		if pages > 1000 {
			t.Fatal("export does not end")
		}
		cursor = p.Next
	}
}

func TestStore_ExportPagesAcrossDays(t *testing.T) {
	s := openStore(t, t.TempDir())
	// Three days, seven comments each, the newest day written first;
	// another crawler's comments stay out.
	var want []string
	for d := 2; d >= 0; d-- {
		var batch []api.Comment
		for i := range 7 {
			id := fmt.Sprintf("d%d-%d", d, i)
			batch = append(batch, comment(1, id, base.AddDate(0, 0, d).Add(time.Duration(i)*time.Minute)))
		}
		if err := s.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), []api.Comment{comment(2, fmt.Sprintf("other-%d", d), base.AddDate(0, 0, d))}); err != nil {
			t.Fatal(err)
		}
	}
	for d := range 3 {
		for i := range 7 {
			want = append(want, fmt.Sprintf("d%d-%d", d, i))
		}
	}
	for _, limit := range []int{1, 3, 7, 8, 100} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			got, pages := exportAll(t, s, 1, store.Range{}, limit)
			if !slices.Equal(ids(got), want) {
				t.Fatalf("exported %v, want %v", ids(got), want)
			}
			if least := (21 + limit - 1) / limit; pages < least {
				t.Fatalf("%d pages for 21 comments of %d a page", pages, limit)
			}
		})
	}
}

func TestStore_ExportRange(t *testing.T) {
	s := openStore(t, t.TempDir())
	var batch []api.Comment
	for h := range 72 { // one comment an hour for three days
		batch = append(batch, comment(1, fmt.Sprintf("h%02d", h), base.Add(-12*time.Hour).Add(time.Duration(h)*time.Hour)))
	}
	if err := s.Write(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		r     store.Range
		count int
	}{
		{"all", store.Range{}, 72},
		{"since", store.Range{Since: base}, 60},
		{"until", store.Range{Until: base}, 12},
		{"a day from midnight", store.Range{Since: base.Add(12 * time.Hour), Until: base.Add(36 * time.Hour)}, 24},
		{"one hour", store.Range{Since: base, Until: base.Add(time.Hour)}, 1},
		{"before everything", store.Range{Until: base.AddDate(-1, 0, 0)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := exportAll(t, s, 1, tt.r, 5)
			if len(got) != tt.count {
				t.Fatalf("exported %d comments, want %d", len(got), tt.count)
			}
			for _, c := range got {
				if !tt.r.Contains(c.PublishedAt) {
					t.Fatalf("comment %s published %s is outside the range", c.ID, c.PublishedAt)
				}
			}
		})
	}
}

func TestStore_ExportSkipsAPartialLineAndResumesAfterIt(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Write(context.Background(), []api.Comment{comment(1, "a", base), comment(1, "b", base.Add(time.Minute))}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Export(context.Background(), 1, store.Range{}, "", 2)
	if err != nil || len(p.Comments) != 2 || p.Next == "" {
		t.Fatalf("first page: %v, %v", p, err)
	}
	// A writer in another process is halfway through a line.
	path := filepath.Join(dir, "1", base.Format(dayLayout)+fileExt)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"half`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rest, err := s.Export(context.Background(), 1, store.Range{}, p.Next, 2)
	if err != nil || len(rest.Comments) != 0 || rest.Next != "" {
		t.Fatalf("after the last whole line: %+v, %v; want an empty last page", rest, err)
	}
}

func TestStore_ExportRefusesACursorItDidNotMake(t *testing.T) {
	s := openStore(t, t.TempDir())
	for _, cursor := range []string{"nope", "eyJkIjoieCJ9", "eyJkIjoiMjAyNC0wMS0wMSIsIm8iOi0xfQ"} {
		if _, err := s.Export(context.Background(), 1, store.Range{}, cursor, 10); !errors.Is(err, store.ErrCursor) {
			t.Errorf("Export(cursor %q) = %v, want ErrCursor", cursor, err)
		}
	}
	p, err := s.Export(context.Background(), 99, store.Range{}, "", 10)
	if err != nil || len(p.Comments) != 0 || p.Next != "" {
		t.Fatalf("a crawler with no comments: %+v, %v", p, err)
	}
}
