package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// changedIDs reads the changes after since and returns them as ids, with
// the new change number.
func changedIDs(t *testing.T, s *Store, since int64) (crawlers, users, deleted []int64, seq int64) {
	t.Helper()
	ch, err := s.ChangesSince(context.Background(), since)
	if err != nil {
		t.Fatalf("ChangesSince(%d): %v", since, err)
	}
	crawlers, users, deleted = []int64{}, []int64{}, []int64{}
	for _, c := range ch.Crawlers {
		crawlers = append(crawlers, c.ID)
	}
	for _, u := range ch.Users {
		users = append(users, u.ID)
	}
	for _, d := range ch.Deleted {
		deleted = append(deleted, d.CrawlerID)
	}
	return crawlers, users, deleted, ch.Seq
}

func TestStore_ChangesSinceReturnsExactlyTheChangedRows(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		seq, err := s.LastChange(ctx)
		if err != nil || seq != 0 {
			t.Fatalf("LastChange of an empty database = %d, %v; want 0", seq, err)
		}
		u := mustUser(t, s, "u", 0)
		v := mustUser(t, s, "v", 0)
		a := mustCrawler(t, s, newCrawler(u.ID, "a"))
		b := mustCrawler(t, s, newCrawler(u.ID, "bb"))
		batch, err := s.CreateCrawlers(ctx, []Crawler{newCrawler(v.ID, "ccc"), newCrawler(v.ID, "dddd")})
		if err != nil {
			t.Fatal(err)
		}
		c, d := batch[0], batch[1]

		type step struct {
			name                string
			change              func() error
			crawlers, users, rm []int64
		}
		steps := []step{
			{name: "nothing", change: func() error { return nil }, crawlers: []int64{}, users: []int64{}, rm: []int64{}},
			{name: "create user", change: func() error { _, err := s.CreateUser(ctx, "w", 5); return err }, crawlers: []int64{}, users: []int64{v.ID + 1}, rm: []int64{}},
			{name: "create crawler", change: func() error { _, err := s.CreateCrawler(ctx, newCrawler(v.ID, "eeeee")); return err }, crawlers: []int64{d.ID + 1}, users: []int64{}, rm: []int64{}},
			{name: "update crawler", change: func() error {
				_, err := s.UpdateCrawler(ctx, b.ID, func(c *Crawler) error { c.Enabled = false; return nil })
				return err
			}, crawlers: []int64{b.ID}, users: []int64{}, rm: []int64{}},
			{name: "limit reached", change: func() error { return s.SetLimitReached(ctx, c.ID, true) }, crawlers: []int64{c.ID}, users: []int64{}, rm: []int64{}},
			{name: "user limit", change: func() error { _, err := s.SetUserLimit(ctx, u.ID, 10); return err }, crawlers: []int64{}, users: []int64{u.ID}, rm: []int64{}},
			{name: "delete crawler", change: func() error { return s.DeleteCrawler(ctx, a.ID) }, crawlers: []int64{}, users: []int64{}, rm: []int64{a.ID}},
			{name: "usage is not a change", change: func() error {
				_, err := s.ApplyIncrements(ctx, []api.Increment{
					{NodeID: "n", Seq: 1, CrawlerID: d.ID, UserID: v.ID, Count: 3, Newest: time.Now(), Position: 7},
					{NodeID: "n", Seq: 2, CrawlerID: b.ID, UserID: u.ID, Count: 2},
				})
				return err
			}, crawlers: []int64{}, users: []int64{}, rm: []int64{}},
			{name: "failed update is not a change", change: func() error {
				_, err := s.UpdateCrawler(ctx, d.ID, func(c *Crawler) error { return errors.New("no") })
				if err == nil {
					return errors.New("update did not fail")
				}
				return nil
			}, crawlers: []int64{}, users: []int64{}, rm: []int64{}},
			{name: "two changes", change: func() error {
				if err := s.DeleteCrawler(ctx, d.ID); err != nil {
					return err
				}
				_, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error { c.CommentLimit = 9; return nil })
				return err
			}, crawlers: []int64{c.ID}, users: []int64{}, rm: []int64{d.ID}},
		}
		_, _, _, seq = changedIDs(t, s, 0)
		for _, st := range steps {
			if err := st.change(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			crawlers, users, rm, next := changedIDs(t, s, seq)
			if !slices.Equal(crawlers, st.crawlers) || !slices.Equal(users, st.users) || !slices.Equal(rm, st.rm) {
				t.Fatalf("%s: changed crawlers %v users %v deleted %v; want %v %v %v", st.name, crawlers, users, rm, st.crawlers, st.users, st.rm)
			}
			if next < seq {
				t.Fatalf("%s: change number went back from %d to %d", st.name, seq, next)
			}
			seq = next
		}
		// A reader starting from scratch sees every live row once.
		crawlers, users, rm, _ := changedIDs(t, s, 0)
		if !slices.Equal(crawlers, []int64{b.ID, c.ID, d.ID + 1}) || len(users) != 3 || len(rm) != 2 {
			t.Fatalf("all changes: crawlers %v users %v deleted %v", crawlers, users, rm)
		}
		// Usage arrives in the rows read, but did not make them changed.
		got, _ := s.GetCrawler(ctx, b.ID)
		if got.Usage != 2 {
			t.Fatalf("usage of crawler %d = %d, want 2", b.ID, got.Usage)
		}
	})
}

func TestStore_ChangesSincePrunedDeletions(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		a := mustCrawler(t, s, newCrawler(u.ID, "a"))
		b := mustCrawler(t, s, newCrawler(u.ID, "bb"))
		before, _ := s.LastChange(ctx)
		if err := s.DeleteCrawler(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		afterA, _ := s.LastChange(ctx)
		// The deletion of a is older than deletions are kept: deleting b
		// forgets it.
		old := now().Add(-deletionsKept - time.Hour)
		if err := s.db.Model(&crawlerDeletion{}).Where("crawler_id = ?", a.ID).Update("deleted_at", old).Error; err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteCrawler(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ChangesSince(ctx, before); !errors.Is(err, ErrChangesPruned) {
			t.Fatalf("ChangesSince before a forgotten deletion: %v, want ErrChangesPruned", err)
		}
		_, _, rm, _ := changedIDs(t, s, afterA)
		if !slices.Equal(rm, []int64{b.ID}) {
			t.Fatalf("deleted after the forgotten one: %v, want [%d]", rm, b.ID)
		}
		if err := s.DeleteCrawler(ctx, a.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleting a deleted crawler: %v, want ErrNotFound", err)
		}
	})
}

// TestStore_ChangesSinceMissesNothingUnderConcurrentWriters has writers
// change crawlers while a reader follows ChangesSince; the reader's copy
// must end equal to SQL.
func TestStore_ChangesSinceMissesNothingUnderConcurrentWriters(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		const writers, updates = 4, 15
		ids := make([]int64, writers)
		for i := range ids {
			ids[i] = mustCrawler(t, s, newCrawler(u.ID, fmt.Sprint("q", i))).ID
		}
		seen := map[int64]int64{} // crawler id → version
		var seq int64
		read := func() {
			ch, err := s.ChangesSince(ctx, seq)
			if err != nil {
				t.Error(err)
				return
			}
			for _, c := range ch.Crawlers {
				seen[c.ID] = max(seen[c.ID], c.Version)
			}
			seq = ch.Seq
		}
		var wg sync.WaitGroup
		done := make(chan struct{})
		for _, id := range ids {
			wg.Go(func() {
				for range updates {
					if _, err := s.UpdateCrawler(ctx, id, func(c *Crawler) error { c.Enabled = !c.Enabled; return nil }); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		go func() { wg.Wait(); close(done) }()
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
			}
			read()
		}
		read()
		for _, id := range ids {
			if seen[id] != 1+updates {
				t.Fatalf("crawler %d: reader saw version %d, want %d", id, seen[id], 1+updates)
			}
		}
	})
}
