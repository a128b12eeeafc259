package file

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
