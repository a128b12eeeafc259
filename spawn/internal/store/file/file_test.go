package file

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

func TestParseURI(t *testing.T) {
	tests := []struct {
		uri, want, wantErr string
	}{
		{uri: "file://./data", want: "data"},
		{uri: "file://data", want: "data"},
		{uri: "file://relative/sub/", want: "relative/sub"},
		{uri: "file:///abs/path", want: "/abs/path"},
		{uri: "file:///with%20space", want: "/with space"},
		{uri: "file://", wantErr: "names no directory"},
		{uri: "cassandra://x/ks", wantErr: "must start with file://"},
		{uri: "file:///a?x=1", wantErr: "query"},
		{uri: "file:///bad%zz", wantErr: "invalid URL escape"},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			got, err := ParseURI(tt.uri)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseURI(%q) = %q, %v; want an error mentioning %q", tt.uri, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseURI(%q) = %q, %v; want %q", tt.uri, got, err, tt.want)
			}
		})
	}
}

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var base = time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)

func comment(crawler int64, id string, published time.Time) api.Comment {
	return api.Comment{
		ID: id, CrawlerID: crawler, Source: api.SourceRSS, Author: "alice",
		Text: "text of " + id + "\nwith a newline", URL: "https://example.com/" + id,
		PublishedAt: published, FetchedAt: base.Add(time.Hour), Matched: []string{"golang"},
	}
}

// lines reads a day file as the operator contract describes it: one JSON
// object a line.
func lines(t *testing.T, path string) []api.Comment {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []api.Comment
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c api.Comment
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: bad line %q: %v", path, sc.Text(), err)
		}
		out = append(out, c)
	}
	return out
}

func ids(cs []api.Comment) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestStore_RoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	in := []api.Comment{
		comment(7, "a", base),
		comment(7, "c", base.Add(2*time.Minute)),
		comment(7, "b", base.Add(time.Minute)),
		comment(8, "other", base),
	}
	in[1].Engagement = &api.Engagement{Reposts: 4, Likes: 30}
	in[2].Engagement = &api.Engagement{} // zero counts, not unknown
	if err := s.Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := s.Recent(ctx, 7, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c", "b", "a"}; !slices.Equal(ids(got), want) {
		t.Fatalf("Recent = %v, want %v", ids(got), want)
	}
	want := in[1]
	g := got[0]
	if g.ID != want.ID || g.CrawlerID != 7 || g.Source != want.Source || g.Author != want.Author || g.Text != want.Text ||
		g.URL != want.URL || !g.PublishedAt.Equal(want.PublishedAt) || !g.FetchedAt.Equal(want.FetchedAt) || !slices.Equal(g.Matched, want.Matched) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", g, want)
	}
	for i, w := range []*api.Engagement{in[1].Engagement, in[2].Engagement, nil} {
		if e := got[i].Engagement; (e == nil) != (w == nil) || w != nil && *e != *w {
			t.Fatalf("%s: engagement %+v, want %+v", got[i].ID, e, w)
		}
	}
	if got, _ := s.Recent(ctx, 7, 2); !slices.Equal(ids(got), []string{"c", "b"}) {
		t.Fatalf("Recent(n=2) = %v", ids(got))
	}
	if got, err := s.Recent(ctx, 99, 5); err != nil || len(got) != 0 {
		t.Fatalf("Recent(unknown crawler) = %v, %v; want none", got, err)
	}
	if f := lines(t, filepath.Join(s.Dir(), "7", "2024-03-10.jsonl")); !slices.Equal(ids(f), []string{"a", "c", "b"}) {
		t.Fatalf("file lines %v, want the write order", ids(f))
	}
}

func TestStore_SplitsByUTCDay(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	ny := time.FixedZone("EST", -5*3600)
	in := []api.Comment{
		comment(1, "late-local", time.Date(2024, 3, 10, 20, 0, 0, 0, ny)), // 01:00 UTC on the 11th
		comment(1, "day10", time.Date(2024, 3, 10, 23, 59, 59, 0, time.UTC)),
		comment(1, "day9", time.Date(2024, 3, 9, 0, 0, 0, 0, time.UTC)),
		comment(1, "day11", time.Date(2024, 3, 11, 0, 0, 0, 0, time.UTC)),
	}
	if err := s.Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"2024-03-09.jsonl": {"day9"},
		"2024-03-10.jsonl": {"day10"},
		"2024-03-11.jsonl": {"late-local", "day11"},
	}
	entries, _ := filepath.Glob(filepath.Join(s.Dir(), "1", "*.jsonl"))
	if len(entries) != len(want) {
		t.Fatalf("%d day files, want %d", len(entries), len(want))
	}
	for name, w := range want {
		if got := ids(lines(t, filepath.Join(s.Dir(), "1", name))); !slices.Equal(got, w) {
			t.Errorf("%s holds %v, want %v", name, got, w)
		}
	}
	// Recent crosses day files, newest first.
	got, err := s.Recent(ctx, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"late-local", "day11", "day10"}; !slices.Equal(ids(got), want) {
		t.Fatalf("Recent = %v, want %v", ids(got), want)
	}
}

func TestStore_NoSecondLineForAStoredComment(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	batch := []api.Comment{comment(3, "x", base), comment(3, "y", base), comment(3, "x", base)}
	s := openStore(t, dir)
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, batch); err != nil { // a retried batch
		t.Fatal(err)
	}
	s.Close()

	// A new store on the same directory (a restarted spawn) knows them too.
	s2 := openStore(t, dir)
	if err := s2.Write(ctx, append(batch, comment(3, "z", base))); err != nil {
		t.Fatal(err)
	}
	// So does a second store sharing the directory (another spawn).
	s3 := openStore(t, dir)
	if err := s3.Write(ctx, []api.Comment{comment(3, "z", base), comment(3, "y", base)}); err != nil {
		t.Fatal(err)
	}
	if got := ids(lines(t, filepath.Join(dir, "3", "2024-03-10.jsonl"))); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("file holds %v, want x y z once each", got)
	}
}

func TestStore_PartialLastLineNeverSeen(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		reopen bool
	}{
		{name: "cut by Open", reopen: true},
		{name: "cut by the next Write", reopen: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			if err := s.Write(ctx, []api.Comment{comment(5, "a", base), comment(5, "b", base.Add(time.Second))}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "5", "2024-03-10.jsonl")
			// A crash in the middle of a line.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			half, _ := json.Marshal(comment(5, "half", base.Add(time.Hour)))
			f.Write(half[:len(half)/2])
			f.Close()

			got, err := s.Recent(ctx, 5, 10)
			if err != nil || !slices.Equal(ids(got), []string{"b", "a"}) {
				t.Fatalf("Recent with a partial line = %v, %v; want b a", ids(got), err)
			}
			if tt.reopen {
				s.Close()
				s = openStore(t, dir)
				data, _ := os.ReadFile(path)
				if !strings.HasSuffix(string(data), "}\n") || strings.Count(string(data), "\n") != 2 {
					t.Fatalf("Open left %q", data)
				}
			}
			if err := s.Write(ctx, []api.Comment{comment(5, "c", base.Add(2*time.Second)), comment(5, "half", base.Add(time.Hour))}); err != nil {
				t.Fatal(err)
			}
			if got := ids(lines(t, path)); !slices.Equal(got, []string{"a", "b", "c", "half"}) {
				t.Fatalf("file holds %v, want a b c half", got)
			}
		})
	}
}

func TestStore_ConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Two stores on one directory, as two spawns sharing it, each with
	// several writers sending overlapping batches.
	stores := []*Store{openStore(t, dir), openStore(t, dir)}
	const crawlers, perCrawler = 3, 60
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%2]
			for i := 0; i < perCrawler; i += 5 {
				var batch []api.Comment
				for c := range int64(crawlers) {
					for j := i; j < i+5; j++ {
						batch = append(batch, comment(c, fmt.Sprint("id-", j), base.Add(time.Duration(j)*6*time.Hour)))
					}
				}
				if err := s.Write(ctx, batch); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Recent(ctx, int64(w%crawlers), 10); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for c := range int64(crawlers) {
		files, _ := filepath.Glob(filepath.Join(dir, fmt.Sprint(c), "*.jsonl"))
		seen := map[string]bool{}
		for _, f := range files {
			for _, cm := range lines(t, f) {
				if seen[cm.ID] {
					t.Fatalf("crawler %d: %s stored twice", c, cm.ID)
				}
				seen[cm.ID] = true
			}
		}
		if len(seen) != perCrawler {
			t.Fatalf("crawler %d: %d comments stored, want %d", c, len(seen), perCrawler)
		}
		got, err := stores[0].Recent(ctx, c, perCrawler)
		if err != nil || len(got) != perCrawler || got[0].ID != fmt.Sprint("id-", perCrawler-1) {
			t.Fatalf("crawler %d: Recent gave %d comments (first %v), %v", c, len(got), ids(got[:1]), err)
		}
	}
}

func TestStore_ManyCrawlersBeyondTheIndexCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	write := func() {
		var batch []api.Comment
		for c := range int64(maxCachedCrawlers + 10) {
			batch = append(batch, comment(c, "same", base))
		}
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	write()
	write() // evicted indexes are rebuilt from the files: still one line each
	for _, c := range []int64{0, maxCachedCrawlers + 9} {
		if got := lines(t, filepath.Join(dir, fmt.Sprint(c), "2024-03-10.jsonl")); len(got) != 1 {
			t.Fatalf("crawler %d: %d lines, want 1", c, len(got))
		}
	}
}

func TestStore_ClosedAndCancelled(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Write(ctx, []api.Comment{comment(1, "a", base)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a cancelled context = %v", err)
	}
	s.Close()
	if err := s.Write(context.Background(), []api.Comment{comment(1, "a", base)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Recent(context.Background(), 1, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recent after Close = %v, want ErrClosed", err)
	}
}

func TestStore_OpenFailsOnAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "file: unable to create") {
		t.Fatalf("Open(a file) = %v", err)
	}
}

func TestStore_WriteFreshReportsOnlyNewComments(t *testing.T) {
	dir := t.TempDir()
	a, b := openStore(t, dir), openStore(t, dir)
	ctx := context.Background()
	now := time.Now()
	first := []api.Comment{comment(1, "x", now), comment(1, "y", now), comment(2, "x", now)}
	fresh, err := a.WriteFresh(ctx, first)
	if err != nil || !slices.Equal(fresh, []bool{true, true, true}) {
		t.Fatalf("first write: fresh %v, err %v", fresh, err)
	}
	// Another store on the same directory (another spawn) writes a batch
	// that repeats one comment, and one repeated within the batch.
	again := []api.Comment{comment(1, "y", now), comment(1, "z", now), comment(1, "z", now)}
	fresh, err = b.WriteFresh(ctx, again)
	if err != nil || !slices.Equal(fresh, []bool{false, true, false}) {
		t.Fatalf("second write: fresh %v, err %v, want [false true false]", fresh, err)
	}
}

func TestStore_RecoverCountsWhatEachIntentStored(t *testing.T) {
	dir := t.TempDir()
	a, b := openStore(t, dir), openStore(t, dir)
	ctx := context.Background()
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	intents := []store.Intent{
		{NodeID: "node-a", Seq: 1, CrawlerID: 1, UserID: 9, Days: []time.Time{day}},
		{NodeID: "node-a", Seq: 2, CrawlerID: 2, UserID: 9, Instance: 3, LeaseSeq: 4, Days: []time.Time{day}},
		{NodeID: "node-a", Seq: 3, CrawlerID: 1, UserID: 9, Days: []time.Time{day}}, // its comments never landed
	}
	if err := a.Intend(ctx, intents); err != nil {
		t.Fatal(err)
	}
	if err := a.Intend(ctx, intents[:1]); err != nil { // a retried batch records it again
		t.Fatal(err)
	}
	tag := func(c api.Comment, seq uint64) api.Comment { c.NodeID, c.IncSeq = "node-a", seq; return c }
	if _, err := a.WriteFresh(ctx, []api.Comment{
		tag(comment(1, "x", now.Add(-time.Minute)), 1), tag(comment(1, "y", now), 1), tag(comment(2, "z", now), 2),
	}); err != nil {
		t.Fatal(err)
	}
	// Another node's comment in the same crawler does not count for node-a.
	other := comment(1, "w", now)
	other.NodeID, other.IncSeq = "node-b", 1
	if _, err := a.WriteFresh(ctx, []api.Comment{other}); err != nil {
		t.Fatal(err)
	}

	got, err := b.Recover(ctx, "node-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.Increment{
		{NodeID: "node-a", Seq: 1, CrawlerID: 1, UserID: 9, Count: 2},
		{NodeID: "node-a", Seq: 2, CrawlerID: 2, UserID: 9, Instance: 3, LeaseSeq: 4, Count: 1},
		{NodeID: "node-a", Seq: 3, CrawlerID: 1, UserID: 9, Count: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("Recover = %+v", got)
	}
	for i := range want {
		g := got[i]
		g.Newest = time.Time{}
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("increment %d = %+v, want %+v", i, g, want[i])
		}
	}
	if !got[0].Newest.Equal(now.Truncate(time.Microsecond)) && !got[0].Newest.Equal(now) {
		t.Errorf("newest = %v, want %v", got[0].Newest, now)
	}
	if after, err := b.Recover(ctx, "node-a", 2); err != nil || len(after) != 1 || after[0].Seq != 3 {
		t.Fatalf("Recover after 2 = %+v, %v", after, err)
	}
	if none, err := b.Recover(ctx, "never-seen", 0); err != nil || len(none) != 0 {
		t.Fatalf("unknown node: %+v, %v", none, err)
	}
	if _, err := b.Recover(ctx, "../escape", 0); err == nil {
		t.Fatal("a node id with a path in it was accepted")
	}
}
