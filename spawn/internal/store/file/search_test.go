package file

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/storetest"
)

func TestStore_Search(t *testing.T) {
	storetest.CheckSearch(t, openStore(t, t.TempDir()))
}

// TestStore_SearchSkipsAWriteInProgress: a day file whose last line has no
// newline yet (a write in progress) is searched without it, and a damaged
// line costs only that comment.
func TestStore_SearchSkipsAWriteInProgress(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Write(context.Background(), []api.Comment{comment(1, "a", base), comment(1, "b", base.Add(1))}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "1", base.Format(dayLayout)+fileExt)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{not json}\n" + `{"id":"half","crawler_id":1,"published_at":"2024-03-10T12:00:00Z"`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ := storetest.SearchAll(t, s, 1, store.Search{Limit: 1})
	if ids := storetest.IDs(got); !slices.Equal(ids, []string{"b", "a"}) {
		t.Fatalf("%v, want [b a]", ids)
	}
}

// TestStore_SearchForgedCursorAnswersWithinItsBudget: a cursor whose offset
// lies far past the end of its day file (forged, or made before the file
// was rewritten shorter) reads the file from its end, as a cursor at the
// end would, and the page answers within its budget.
func TestStore_SearchForgedCursorAnswersWithinItsBudget(t *testing.T) {
	s := openStore(t, t.TempDir())
	if err := s.Write(context.Background(), []api.Comment{comment(1, "a", base), comment(1, "b", base.Add(1))}); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"d": base.Format(dayLayout), "e": int64(1) << 62})
	forged := base64.RawURLEncoding.EncodeToString(raw)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		page store.SearchPage
		err  error
	}
	done := make(chan result, 1)
	go func() {
		p, err := s.Search(ctx, 1, store.Search{Cursor: forged, Limit: 10, Budget: 100 * time.Millisecond})
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("search from the forged cursor: %v", r.err)
		}
		if ids := storetest.IDs(r.page.Comments); !slices.Equal(ids, []string{"b", "a"}) || r.page.Next != "" {
			t.Fatalf("page %v next %q, want [b a] and no next page", ids, r.page.Next)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the search from a cursor past the end of its file did not answer in 10 s (budget 100 ms)")
	}
}

// TestStore_SearchBudgetBindsBetweenLines: a page stops at its budget even
// where a day file holds no comment to look at (a long run of blank
// lines), and answers with a cursor to go on from.
func TestStore_SearchBudgetBindsBetweenLines(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Write(context.Background(), []api.Comment{comment(1, "a", base)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "1", base.Format(dayLayout)+fileExt)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("\n"), 4*tailChunk)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p, err := s.Search(context.Background(), 1, store.Search{Limit: 10, Budget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if p.Next == "" || len(p.Comments) != 0 {
		t.Fatalf("page %v next %q: want no comment and a cursor, the budget spent before the first line", storetest.IDs(p.Comments), p.Next)
	}
	got, _ := storetest.SearchAll(t, s, 1, store.Search{Limit: 10, Cursor: p.Next})
	if ids := storetest.IDs(got); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("the rest of the search: %v, want [a]", ids)
	}
}

func TestStore_SearchWithAQuery(t *testing.T) {
	storetest.CheckQuerySearch(t, openStore(t, t.TempDir()))
}
