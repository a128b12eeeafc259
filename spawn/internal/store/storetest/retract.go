package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Opener opens a store. Two calls return two stores on the same backing (a
// directory, a keyspace), as two spawns sharing it see it; each call of
// the suite's tests starts from an empty backing (fresh returns new
// backing).
type Opener func(t *testing.T, fresh bool) store.Store

// Source is the source of the suite's comments, and OtherSource another
// one: the stores keep sources apart without knowing any of them.
const (
	Source      = "alpha"
	OtherSource = "beta"
)

// Day is when the suite's comments were published.
var Day = time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)

// Comment is a comment of the suite: a post by author (a DID) known by
// handle, in crawler, n minutes after Day.
func Comment(crawler int64, id, did, handle string, n int) api.Comment {
	return api.Comment{
		ID: id, CrawlerID: crawler, Source: Source, Author: handle, AuthorID: did,
		Text: "text of " + id, PublishedAt: Day.Add(time.Duration(n) * time.Minute), FetchedAt: Day.Add(time.Hour),
	}
}

// CheckRetractor runs the checks every store that takes comments back
// (store.Retractor) passes: deletes before and after the write, twice,
// through another spawn sharing the store, of a post two crawlers stored;
// account takedowns and their lift; edits; forgets; and a race of writes
// against removals.
func CheckRetractor(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"DeleteAfterTheWriteRemovesItAndKeepsItOut", deleteAfter},
		{"DeleteBeforeTheWriteKeepsItOut", deleteBefore},
		{"DeleteTwiceIsHarmless", deleteTwice},
		{"DeleteByAnotherSpawnOnTheSameStore", deleteByOther},
		{"DeleteOfAPostTwoCrawlersStored", deleteTwoCrawlers},
		{"AccountTakedownRemovesAllAndStoresNoneUntilLifted", accountTakedown},
		{"EditReplacesTextAndSetsEditedAt", edit},
		{"ForgetRemovesTheAuthorsCommentsByIDOrHandle", forget},
		{"WritesRacingRemovalsLeaveNothingRemoved", race},
		{"RetentionPastOnArrivalIsNotStored", retentionPast},
		{"AppliedMarkOnlyRises", appliedMark},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func ctx() context.Context { return context.Background() }

// write stores comments through WriteFresh and returns the fresh flags.
func write(t *testing.T, s store.Store, cs ...api.Comment) []bool {
	t.Helper()
	fw, ok := s.(store.FreshWriter)
	if !ok {
		if err := s.Write(ctx(), cs); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	fresh, err := fw.WriteFresh(ctx(), cs)
	if err != nil {
		t.Fatal(err)
	}
	return fresh
}

func retractor(t *testing.T, s store.Store) store.Retractor {
	t.Helper()
	r, ok := s.(store.Retractor)
	if !ok {
		t.Fatalf("%T is no store.Retractor", s)
	}
	return r
}

// bury buries, then sweeps what Bury left, and returns what both
// removed.
func bury(t *testing.T, s store.Store, ts ...store.Tombstone) []store.Removed {
	t.Helper()
	got, err := retractor(t, s).Bury(ctx(), ts)
	if err != nil {
		t.Fatal(err)
	}
	swept, err := retractor(t, s).Sweep(ctx())
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, swept...)
	slices.SortFunc(got, func(a, b store.Removed) int {
		if a.CrawlerID != b.CrawlerID {
			return int(a.CrawlerID - b.CrawlerID)
		}
		if a.CommentID < b.CommentID {
			return -1
		}
		if a.CommentID > b.CommentID {
			return 1
		}
		return 0
	})
	return got
}

// stored lists a crawler's stored comment ids, sorted.
func stored(t *testing.T, s store.Store, crawler int64) []string {
	t.Helper()
	cs, err := s.Recent(ctx(), crawler, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	slices.Sort(out)
	return out
}

// exported lists a crawler's exported comment ids, sorted.
func exported(t *testing.T, s store.Store, crawler int64) []string {
	t.Helper()
	ex, ok := s.(store.Exporter)
	if !ok {
		return stored(t, s, crawler)
	}
	var out []string
	cur := ""
	for {
		p, err := ex.Export(ctx(), crawler, store.Range{}, cur, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Comments {
			out = append(out, c.ID)
		}
		if p.Next == "" {
			break
		}
		cur = p.Next
	}
	slices.Sort(out)
	return out
}

func commentTomb(id string) store.Tombstone {
	return store.Tombstone{Source: Source, CommentID: id, Until: time.Now().Add(time.Hour)}
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: %q, want %q", what, got, want)
	}
}

func deleteAfter(t *testing.T, open Opener) {
	s := open(t, true)
	a, b := Comment(1, "at://a/1", "did:plc:a", "a.test", 1), Comment(1, "at://b/2", "did:plc:b", "b.test", 2)
	write(t, s, a, b)
	got := bury(t, s, commentTomb(a.ID))
	if want := []store.Removed{{CrawlerID: 1, CommentID: a.ID}}; !slices.Equal(got, want) {
		t.Errorf("removed %v, want %v", got, want)
	}
	same(t, "recent", stored(t, s, 1), []string{b.ID})
	same(t, "export", exported(t, s, 1), []string{b.ID})
	if tr, ok := s.(store.ThreadReader); ok {
		if _, _, err := tr.Thread(ctx(), 1, a.ID); err == nil {
			t.Error("the removed comment still has a thread")
		}
	}
	// A replay of the post stores nothing and counts nothing.
	if fresh := write(t, s, a); fresh != nil && fresh[0] {
		t.Error("the replayed post counted as new")
	}
	same(t, "after the replay", stored(t, s, 1), []string{b.ID})
}

func deleteBefore(t *testing.T, open Opener) {
	s := open(t, true)
	a := Comment(1, "at://a/1", "did:plc:a", "a.test", 1)
	if got := bury(t, s, commentTomb(a.ID)); len(got) != 0 {
		t.Errorf("removed %v from an empty store", got)
	}
	if fresh := write(t, s, a); fresh != nil && fresh[0] {
		t.Error("a post deleted before its write counted as new")
	}
	same(t, "recent", stored(t, s, 1), nil)
	same(t, "export", exported(t, s, 1), nil)
}

func deleteTwice(t *testing.T, open Opener) {
	s := open(t, true)
	a := Comment(1, "at://a/1", "did:plc:a", "a.test", 1)
	write(t, s, a)
	if got := bury(t, s, commentTomb(a.ID)); len(got) != 1 {
		t.Errorf("first delete removed %v", got)
	}
	if got := bury(t, s, commentTomb(a.ID), commentTomb(a.ID)); len(got) != 0 {
		t.Errorf("second delete removed %v", got)
	}
}

func deleteByOther(t *testing.T, open Opener) {
	s := open(t, true)
	other := open(t, false)
	a, b := Comment(1, "at://a/1", "did:plc:a", "a.test", 1), Comment(1, "at://b/2", "did:plc:b", "b.test", 2)
	write(t, s, a, b)
	if got := bury(t, other, commentTomb(a.ID)); len(got) != 1 {
		t.Errorf("the other spawn removed %v, want the one comment", got)
	}
	same(t, "seen by the writer", stored(t, s, 1), []string{b.ID})
	// The writer, which stored it, is told nothing: its store is.
	if fresh := write(t, s, a); fresh != nil && fresh[0] {
		t.Error("the writer stored the post again")
	}
	same(t, "after the writer's replay", stored(t, other, 1), []string{b.ID})
}

func deleteTwoCrawlers(t *testing.T, open Opener) {
	s := open(t, true)
	a1, a2 := Comment(1, "at://a/1", "did:plc:a", "a.test", 1), Comment(2, "at://a/1", "did:plc:a", "a.test", 1)
	keep := Comment(2, "at://b/2", "did:plc:b", "b.test", 2)
	write(t, s, a1, a2, keep)
	got := bury(t, s, commentTomb(a1.ID))
	if want := []store.Removed{{CrawlerID: 1, CommentID: a1.ID}, {CrawlerID: 2, CommentID: a1.ID}}; !slices.Equal(got, want) {
		t.Errorf("removed %v, want %v", got, want)
	}
	same(t, "crawler 1", stored(t, s, 1), nil)
	same(t, "crawler 2", stored(t, s, 2), []string{keep.ID})
}

func accountTakedown(t *testing.T, open Opener) {
	s := open(t, true)
	did := "did:plc:gone"
	cs := []api.Comment{
		Comment(1, "at://gone/1", did, "gone.test", 1),
		Comment(1, "at://gone/2", did, "gone.test", 2),
		Comment(2, "at://gone/1", did, "gone.test", 1),
		Comment(2, "at://stay/3", "did:plc:stay", "stay.test", 3),
	}
	write(t, s, cs...)
	ts := store.Tombstone{Source: Source, Author: did, Account: true, Until: time.Now().Add(time.Hour)}
	if got := bury(t, s, ts); len(got) != 3 {
		t.Errorf("removed %v, want the author's 3", got)
	}
	same(t, "crawler 1", stored(t, s, 1), nil)
	same(t, "crawler 2", stored(t, s, 2), []string{"at://stay/3"})
	later := Comment(1, "at://gone/4", did, "gone.test", 4)
	if fresh := write(t, s, later); fresh != nil && fresh[0] {
		t.Error("a post of the inactive account counted as new")
	}
	same(t, "while inactive", stored(t, s, 1), nil)
	if err := retractor(t, s).Lift(ctx(), Source, []string{did}); err != nil {
		t.Fatal(err)
	}
	write(t, s, later)
	same(t, "after the lift", stored(t, s, 1), []string{later.ID})
}

func edit(t *testing.T, open Opener) {
	s := open(t, true)
	a, b := Comment(1, "at://a/1", "did:plc:a", "a.test", 1), Comment(2, "at://a/1", "did:plc:a", "a.test", 1)
	write(t, s, a, b)
	at := Day.Add(2 * time.Hour)
	e := store.Edit{Source: Source, CommentID: a.ID, Text: "edited words", Links: []string{"https://example.com/x"}, EditedAt: at}
	n, err := retractor(t, s).Edit(ctx(), []store.Edit{e, {Source: Source, CommentID: "at://nobody/9", Text: "x", EditedAt: at}})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("edited %d, want 2 (one post, two crawlers)", n)
	}
	older := e
	older.Text, older.EditedAt = "older words", at.Add(-time.Minute)
	if _, err := retractor(t, s).Edit(ctx(), []store.Edit{older}); err != nil {
		t.Fatal(err)
	}
	for _, crawler := range []int64{1, 2} {
		cs, err := s.Recent(ctx(), crawler, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Text != "edited words" || !cs[0].EditedAt.Equal(at) || !slices.Equal(cs[0].Links, e.Links) {
			t.Errorf("crawler %d holds %+v, want the edit of %s", crawler, cs, at)
		}
		if len(cs) == 1 && (cs[0].Author != "a.test" || cs[0].AuthorID != "did:plc:a" || !cs[0].PublishedAt.Equal(a.PublishedAt)) {
			t.Errorf("the edit lost fields: %+v", cs[0])
		}
	}
}

func forget(t *testing.T, open Opener) {
	s := open(t, true)
	cs := []api.Comment{
		Comment(1, "at://x/1", "did:plc:x", "Xavier.test", 1),
		Comment(3, "at://x/2", "did:plc:x", "Xavier.test", 2),
		Comment(3, "at://y/3", "did:plc:y", "yves.test", 3),
	}
	write(t, s, cs...)
	asked := time.Now()
	// By handle, in another case.
	got := bury(t, s, store.Tombstone{Source: Source, Author: "xavier.TEST", Before: asked, Until: time.Now().Add(time.Hour)})
	if len(got) != 2 {
		t.Errorf("removed %v, want the author's 2", got)
	}
	same(t, "crawler 3", stored(t, s, 3), []string{"at://y/3"})
	if fresh := write(t, s, cs[0]); fresh != nil && fresh[0] {
		t.Error("a forgotten post counted as new")
	}
	// What the author publishes after the request is stored.
	newer := Comment(1, "at://x/9", "did:plc:x", "Xavier.test", 1)
	newer.PublishedAt = asked.Add(time.Second)
	write(t, s, newer)
	same(t, "after the forget", stored(t, s, 1), []string{newer.ID})
	// By id.
	if got := bury(t, s, store.Tombstone{Source: Source, Author: "did:plc:y", Before: time.Now(), Until: time.Now().Add(time.Hour)}); len(got) != 1 {
		t.Errorf("forget by id removed %v", got)
	}
	// Another source's author of the same id keeps their comments.
	other := Comment(4, "x:1", "did:plc:x", "Xavier.test", 1)
	other.Source = OtherSource
	write(t, s, other)
	bury(t, s, store.Tombstone{Source: Source, Author: "did:plc:x", Before: time.Now(), Until: time.Now().Add(time.Hour)})
	same(t, "another source", stored(t, s, 4), []string{"x:1"})
}

// race writes batches of comments while other goroutines bury some of
// them, through two stores on the same backing: whatever the order, no
// buried comment is left stored.
func race(t *testing.T, open Opener) {
	s := open(t, true)
	other := open(t, false)
	const n = 60
	var wg sync.WaitGroup
	var buried []string
	for i := range n {
		if i%2 == 0 {
			buried = append(buried, fmt.Sprintf("at://r/%d", i))
		}
	}
	for w := range 3 {
		wg.Go(func() {
			for i := range n {
				c := Comment(int64(1+w%2), fmt.Sprintf("at://r/%d", i), "did:plc:r", "r.test", i%50)
				if _, err := s.(store.FreshWriter).WriteFresh(ctx(), []api.Comment{c}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for _, id := range buried {
		wg.Go(func() {
			if _, err := retractor(t, other).Bury(ctx(), []store.Tombstone{commentTomb(id)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, crawler := range []int64{1, 2} {
		got := stored(t, s, crawler)
		for _, id := range buried {
			if slices.Contains(got, id) {
				t.Errorf("crawler %d holds %s, buried while it was written", crawler, id)
			}
		}
		if len(got) != n-len(buried) {
			t.Errorf("crawler %d holds %d comments, want %d", crawler, len(got), n-len(buried))
		}
	}
}

func retentionPast(t *testing.T, open Opener) {
	s := open(t, true)
	old := Comment(1, "at://old/1", "did:plc:a", "a.test", 0)
	old.Retention = time.Hour // published 3 hours ago
	kept := Comment(1, "at://kept/2", "did:plc:a", "a.test", 0)
	kept.Retention = 30 * 24 * time.Hour
	fresh := write(t, s, old, kept)
	if fresh != nil && (fresh[0] || !fresh[1]) {
		t.Errorf("fresh %v, want [false true]: a comment past its retention is not stored", fresh)
	}
	same(t, "stored", stored(t, s, 1), []string{kept.ID})
}

func appliedMark(t *testing.T, open Opener) {
	s := open(t, true)
	r := retractor(t, s)
	if v, err := r.Applied(ctx()); err != nil || v != 0 {
		t.Fatalf("a new store's mark: %d, %v", v, err)
	}
	if err := r.SetApplied(ctx(), 7); err != nil {
		t.Fatal(err)
	}
	if err := r.SetApplied(ctx(), 5); err != nil {
		t.Fatal(err)
	}
	other := retractor(t, open(t, false))
	if v, err := other.Applied(ctx()); err != nil || v != 7 {
		t.Errorf("mark %d, %v; want 7", v, err)
	}
	if other.ID() == "" || other.ID() != r.ID() {
		t.Errorf("ids %q and %q: two spawns on one store must name it alike", r.ID(), other.ID())
	}
}
