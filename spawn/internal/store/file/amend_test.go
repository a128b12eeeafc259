package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

var amendDay = time.Date(2026, 7, 4, 14, 38, 0, 0, time.UTC)

// amendFixture stores three comments of crawler 7 on one day and one on
// the next, all by DIDs.
func amendFixture(t *testing.T, s *Store) []api.Comment {
	t.Helper()
	cs := []api.Comment{
		{ID: "at://did:plc:a/app.bsky.feed.post/1", CrawlerID: 7, Source: "bluesky", Author: "did:plc:a", AuthorID: "did:plc:a", Text: "one", PublishedAt: amendDay, NodeID: "n1", IncSeq: 3},
		{ID: "at://did:plc:b/app.bsky.feed.post/2", CrawlerID: 7, Source: "bluesky", Author: "did:plc:b", AuthorID: "did:plc:b", Text: "two", PublishedAt: amendDay.Add(time.Minute)},
		{ID: "at://did:plc:a/app.bsky.feed.post/3", CrawlerID: 7, Source: "bluesky", Author: "did:plc:a", AuthorID: "did:plc:a", Text: "three", PublishedAt: amendDay.Add(2 * time.Minute)},
		{ID: "at://did:plc:a/app.bsky.feed.post/4", CrawlerID: 7, Source: "bluesky", Author: "did:plc:a", AuthorID: "did:plc:a", Text: "four", PublishedAt: amendDay.Add(24 * time.Hour)},
	}
	if err := s.Write(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func authors(t *testing.T, s *Store) map[string]string {
	t.Helper()
	got, err := s.Recent(context.Background(), 7, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range got {
		out[c.ID] = c.Author
	}
	return out
}

func TestAmend_ChangesOnlyTheNamedCommentsAndKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	cs := amendFixture(t, s)
	err := s.Amend(context.Background(), []store.Amendment{
		{CrawlerID: 7, CommentID: cs[0].ID, PublishedAt: cs[0].PublishedAt, Author: "alice.test"},
		{CrawlerID: 7, CommentID: cs[3].ID, PublishedAt: cs[3].PublishedAt, Author: "alice.test"},
		{CrawlerID: 7, CommentID: "at://did:plc:z/app.bsky.feed.post/gone", PublishedAt: amendDay, Author: "zed.test"},
		{CrawlerID: 8, CommentID: "at://x", PublishedAt: amendDay, Author: "nobody.test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{cs[0].ID: "alice.test", cs[1].ID: "did:plc:b", cs[2].ID: "did:plc:a", cs[3].ID: "alice.test"}
	got := authors(t, s)
	for id, a := range want {
		if got[id] != a {
			t.Errorf("%s by %q, want %q", id, got[id], a)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d comments, want 4: an amendment made or lost one", len(got))
	}
	all, _ := s.Recent(context.Background(), 7, 100)
	for _, c := range all {
		if c.ID == cs[0].ID && (c.NodeID != "n1" || c.IncSeq != 3 || c.Text != "one" || c.AuthorID != "did:plc:a") {
			t.Errorf("amended comment lost fields: %+v", c)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "8")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an amendment of a crawler with nothing stored made its directory: %v", err)
	}
	// The store still knows every id: writing them again adds nothing,
	// and a new comment still lands.
	fresh, err := s.WriteFresh(context.Background(), append(cs, api.Comment{ID: "new", CrawlerID: 7, PublishedAt: amendDay}))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fresh {
		if f != (i == len(cs)) {
			t.Errorf("comment %d fresh %v after the amendment", i, f)
		}
	}
	// Another store on the same directory (another spawn) sees the
	// replaced file as such, not as one that grew.
	other := openStore(t, dir)
	if fresh, err := other.WriteFresh(context.Background(), cs[:1]); err != nil || fresh[0] {
		t.Errorf("another store wrote an amended comment again: fresh %v, %v", fresh, err)
	}
}

func TestAmend_CrashBeforeRenameLeavesTheOldFileWhole(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	cs := amendFixture(t, s)
	path := filepath.Join(dir, "7", amendDay.Format(dayLayout)+fileExt)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	beforeRename = func(tmp, _ string) error {
		if _, err := os.Stat(tmp); err != nil {
			t.Errorf("the new content was not written before the rename: %v", err)
		}
		// A reader listing day files as operators do never sees it.
		if m, _ := filepath.Glob(filepath.Join(dir, "7", "*.jsonl")); len(m) != 2 {
			t.Errorf("*.jsonl matches %v during the rewrite, want the two day files", m)
		}
		return crash
	}
	t.Cleanup(func() { beforeRename = nil })
	err = s.Amend(context.Background(), []store.Amendment{{CrawlerID: 7, CommentID: cs[1].ID, PublishedAt: cs[1].PublishedAt, Author: "bob.test"}})
	if !errors.Is(err, crash) {
		t.Fatalf("Amend: %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Errorf("the day file changed although the rename never happened:\n%s\nwant\n%s", after, before)
	}
	beforeRename = nil
	s.Close()
	reopened := openStore(t, dir) // as after a restart
	entries, _ := os.ReadDir(filepath.Join(dir, "7"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Errorf("Open left the crash's temporary file %s", e.Name())
		}
	}
	got := authors(t, reopened)
	if len(got) != 4 || got[cs[1].ID] != "did:plc:b" {
		t.Errorf("after the crash: %v", got)
	}
	if err := reopened.Amend(context.Background(), []store.Amendment{{CrawlerID: 7, CommentID: cs[1].ID, PublishedAt: cs[1].PublishedAt, Author: "bob.test"}}); err != nil {
		t.Fatal(err)
	}
	if got := authors(t, reopened); len(got) != 4 || got[cs[1].ID] != "bob.test" {
		t.Errorf("amended again: %v", got)
	}
}

func TestAmend_AnotherStoreIndexesTheReplacedFileAgain(t *testing.T) {
	dir := t.TempDir()
	s, other := openStore(t, dir), openStore(t, dir)
	long := "did:plc:" + strings.Repeat("q", 200)
	first := api.Comment{ID: "first", CrawlerID: 7, Author: long, AuthorID: long, PublishedAt: amendDay}
	if err := other.Write(context.Background(), []api.Comment{first}); err != nil {
		t.Fatal(err) // other has indexed the file up to its end
	}
	// The amendment shrinks the file; a new comment then grows it past
	// the size other indexed, so other's old offset falls inside it.
	if err := s.Amend(context.Background(), []store.Amendment{{CrawlerID: 7, CommentID: "first", PublishedAt: amendDay, Author: "q.test"}}); err != nil {
		t.Fatal(err)
	}
	late := api.Comment{ID: "late", CrawlerID: 7, Author: long, AuthorID: long, Text: strings.Repeat("x", 300), PublishedAt: amendDay}
	if err := s.Write(context.Background(), []api.Comment{late}); err != nil {
		t.Fatal(err)
	}
	fresh, err := other.WriteFresh(context.Background(), []api.Comment{late})
	if err != nil {
		t.Fatal(err)
	}
	if fresh[0] {
		t.Error("another store wrote a stored comment a second time: it read the replaced file from its old offset")
	}
}
