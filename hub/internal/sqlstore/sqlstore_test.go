package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Every store test runs against SQLite (a temp file) and PostgreSQL (a fresh
// database on the server named by BW_TEST_POSTGRES, dropped afterwards). The
// PostgreSQL variant is skipped when BW_TEST_POSTGRES is unset, unless
// BW_REQUIRE_SERVICES=1 makes that a failure.

// eachDB runs fn once per database, as subtests "sqlite" and "postgres".
func eachDB(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteTestDSN(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresTestDSN(t)) })
}

func sqliteTestDSN(t *testing.T) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "blackwidow.db")
}

// postgresTestDSN creates an empty database for one test and drops it when
// the test ends, so tests never see each other's rows and can run again.
func postgresTestDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("BW_TEST_POSTGRES")
	if testing.Short() && os.Getenv("BW_REQUIRE_SERVICES") != "1" {
		t.Skip("-short: no PostgreSQL")
	}
	if base == "" {
		if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
			t.Fatal("BW_TEST_POSTGRES is unset but BW_REQUIRE_SERVICES=1")
		}
		t.Skip("BW_TEST_POSTGRES is unset")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("BW_TEST_POSTGRES: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "bw_test_" + hex.EncodeToString(b[:])
	admin := func() *gorm.DB {
		db, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: gormlogger.Discard})
		if err != nil {
			t.Fatalf("connect to BW_TEST_POSTGRES: %v", err)
		}
		return db
	}
	closeDB := func(db *gorm.DB) {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}
	db := admin()
	defer closeDB(db)
	if err := db.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		db := admin()
		defer closeDB(db)
		if err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").Error; err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

func openTest(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustUser(t *testing.T, s *Store, name string, limit int64) User {
	t.Helper()
	u, err := s.CreateUser(context.Background(), name, limit)
	if err != nil {
		t.Fatalf("CreateUser(%q): %v", name, err)
	}
	return u
}

func newCrawler(userID int64, q string) Crawler {
	return Crawler{
		UserID: userID, Source: api.SourceTwitter, Query: q, Keywords: "",
		QueryUUID: "00000000-0000-5000-8000-" + fmt.Sprintf("%012d", len(q)), Enabled: true,
	}
}

func mustCrawler(t *testing.T, s *Store, c Crawler) Crawler {
	t.Helper()
	out, err := s.CreateCrawler(context.Background(), c)
	if err != nil {
		t.Fatalf("CreateCrawler: %v", err)
	}
	return out
}

func TestStore_UserRoundTrip(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		a := mustUser(t, s, "  acme  ", 100)
		b := mustUser(t, s, "Zoë & Co", 0)
		if a.ID <= 0 || b.ID <= a.ID {
			t.Fatalf("ids %d, %d: want positive and increasing", a.ID, b.ID)
		}
		if a.Name != "acme" || a.CommentLimit != 100 || a.Usage != 0 {
			t.Fatalf("created %+v", a)
		}
		got, err := s.GetUser(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "Zoë & Co" || !got.CreatedAt.Equal(b.CreatedAt) || got.CreatedAt.IsZero() {
			t.Fatalf("GetUser = %+v, want %+v", got, b)
		}
		list, err := s.ListUsers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
			t.Fatalf("ListUsers = %+v", list)
		}
		up, err := s.SetUserLimit(ctx, a.ID, 5)
		if err != nil {
			t.Fatal(err)
		}
		if up.CommentLimit != 5 || up.Name != "acme" {
			t.Fatalf("SetUserLimit = %+v", up)
		}
		if got, _ := s.GetUser(ctx, a.ID); got.CommentLimit != 5 {
			t.Fatalf("limit after SetUserLimit = %d, want 5", got.CommentLimit)
		}
	})
}

func TestStore_UserErrors(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		cases := []struct {
			name  string
			user  string
			limit int64
		}{
			{"empty name", "", 0},
			{"blank name", " \t ", 0},
			{"name too long", strings.Repeat("é", MaxUserName+1), 0},
			{"invalid utf8", "ab\xff", 0},
			{"negative limit", "ok", -1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := s.CreateUser(ctx, tc.user, tc.limit); !errors.Is(err, ErrInvalid) {
					t.Fatalf("CreateUser(%q, %d) = %v, want ErrInvalid", tc.user, tc.limit, err)
				}
			})
		}
		if _, err := s.CreateUser(ctx, strings.Repeat("é", MaxUserName), 0); err != nil {
			t.Fatalf("name of exactly %d characters: %v", MaxUserName, err)
		}
		if _, err := s.GetUser(ctx, 999); !errors.Is(err, ErrNotFound) {
			t.Fatalf("GetUser(999) = %v, want ErrNotFound", err)
		}
		if _, err := s.SetUserLimit(ctx, 999, 1); !errors.Is(err, ErrNotFound) {
			t.Fatalf("SetUserLimit(999) = %v, want ErrNotFound", err)
		}
		u := mustUser(t, s, "u", 0)
		if _, err := s.SetUserLimit(ctx, u.ID, -5); !errors.Is(err, ErrInvalid) {
			t.Fatalf("SetUserLimit(-5) = %v, want ErrInvalid", err)
		}
		if users, err := s.ListUsers(ctx); err != nil || len(users) != 2 {
			t.Fatalf("ListUsers = %d users, %v; want 2 (failed creates leave nothing)", len(users), err)
		}
	})
}

func TestStore_CrawlerRoundTrip(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		in := Crawler{
			ID: 77, UserID: u.ID, Source: api.SourceRSS, Query: "https://a.example/feed\nhttps://b.example/rss",
			Keywords: "go\nrust", QueryUUID: "3f1c3a57-5a4e-5b7c-9a55-0d1f7f0e8c11", CommentLimit: 50,
			Usage: 999, LimitReached: true, Version: 42, Enabled: true,
		}
		c := mustCrawler(t, s, in)
		if c.ID <= 0 || c.Version != 1 || c.Usage != 0 || c.LimitReached || !c.Enabled {
			t.Fatalf("created %+v: want a fresh id, version 1, usage 0, enabled", c)
		}
		got, err := s.GetCrawler(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.UserID != u.ID || got.Source != in.Source || got.Query != in.Query || got.Keywords != in.Keywords ||
			got.QueryUUID != in.QueryUUID || got.CommentLimit != 50 || got.Version != 1 || !got.Enabled ||
			got.CursorAt != nil || !got.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("GetCrawler = %+v\nwant %+v", got, c)
		}

		off := newCrawler(u.ID, "golang")
		off.Enabled = false
		d := mustCrawler(t, s, off)
		if d.Enabled {
			t.Fatal("CreateCrawler returned enabled for a disabled crawler")
		}
		if got, _ := s.GetCrawler(ctx, d.ID); got.Enabled {
			t.Fatal("disabled crawler stored as enabled")
		}

		list, err := s.ListCrawlers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].ID != c.ID || list[1].ID != d.ID {
			t.Fatalf("ListCrawlers = %+v", list)
		}

		cursor := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
		up, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error {
			c.Query = "https://c.example/atom"
			c.CommentLimit = 10
			c.Enabled = false
			c.Usage = 12345 // ignored: usage moves only through increments
			c.UserID = 999  // ignored
			c.CursorAt = &cursor
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if up.Version != 2 || up.Query != "https://c.example/atom" || up.CommentLimit != 10 || up.Enabled ||
			up.Usage != 0 || up.UserID != u.ID || up.CursorAt == nil || !up.CursorAt.Equal(cursor) {
			t.Fatalf("UpdateCrawler = %+v", up)
		}
		got, _ = s.GetCrawler(ctx, c.ID)
		if got.Version != 2 || got.Query != up.Query || got.Enabled || got.Usage != 0 || got.UserID != u.ID ||
			got.CursorAt == nil || !got.CursorAt.Equal(cursor) || got.Keywords != in.Keywords {
			t.Fatalf("after update GetCrawler = %+v", got)
		}
		if _, err := s.UpdateCrawler(ctx, c.ID, func(*Crawler) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetCrawler(ctx, c.ID); got.Version != 3 {
			t.Fatalf("version after second update = %d, want 3", got.Version)
		}

		if _, err := s.UpdateCrawler(ctx, d.ID, func(c *Crawler) error { c.Keywords = "news"; return nil }); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetCrawler(ctx, d.ID); got.Keywords != "news" || got.CursorAt != nil || got.Enabled || got.Version != 2 {
			t.Fatalf("crawler without a cursor after update: %+v", got)
		}

		if err := s.DeleteCrawler(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetCrawler(ctx, c.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("GetCrawler after delete = %v, want ErrNotFound", err)
		}
		if err := s.DeleteCrawler(ctx, c.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second DeleteCrawler = %v, want ErrNotFound", err)
		}
		if list, _ := s.ListCrawlers(ctx); len(list) != 1 || list[0].ID != d.ID {
			t.Fatalf("ListCrawlers after delete = %+v", list)
		}
	})
}

func TestStore_CrawlerErrors(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		cases := []struct {
			name   string
			edit   func(*Crawler)
			substr string
		}{
			{"unknown user", func(c *Crawler) { c.UserID = 4242 }, "user 4242 does not exist"},
			{"zero user", func(c *Crawler) { c.UserID = 0 }, "user id"},
			{"unknown source", func(c *Crawler) { c.Source = "ftp" }, "unknown source"},
			{"empty query", func(c *Crawler) { c.Query = "  " }, "query is empty"},
			{"no query uuid", func(c *Crawler) { c.QueryUUID = "" }, "uuid"},
			{"negative limit", func(c *Crawler) { c.CommentLimit = -1 }, "limit"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := newCrawler(u.ID, "q")
				tc.edit(&c)
				_, err := s.CreateCrawler(ctx, c)
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.substr) {
					t.Fatalf("CreateCrawler = %v, want ErrInvalid mentioning %q", err, tc.substr)
				}
			})
		}
		if list, _ := s.ListCrawlers(ctx); len(list) != 0 {
			t.Fatalf("failed creates left %d crawlers", len(list))
		}

		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		if _, err := s.GetCrawler(ctx, 999); !errors.Is(err, ErrNotFound) {
			t.Fatalf("GetCrawler(999) = %v, want ErrNotFound", err)
		}
		if _, err := s.UpdateCrawler(ctx, 999, func(*Crawler) error { return nil }); !errors.Is(err, ErrNotFound) {
			t.Fatalf("UpdateCrawler(999) = %v, want ErrNotFound", err)
		}
		if err := s.SetLimitReached(ctx, 999, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("SetLimitReached(999) = %v, want ErrNotFound", err)
		}
		errFn := errors.New("caller says no")
		if _, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error { c.Query = "changed"; return errFn }); err != errFn {
			t.Fatalf("UpdateCrawler with failing fn = %v, want the fn's error as is", err)
		}
		if _, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error { c.Query = "changed"; c.Source = "ftp"; return nil }); !errors.Is(err, ErrInvalid) {
			t.Fatalf("UpdateCrawler to a bad source = %v, want ErrInvalid", err)
		}
		if got, _ := s.GetCrawler(ctx, c.ID); got.Query != "q" || got.Version != 1 || got.Source != api.SourceTwitter {
			t.Fatalf("failed updates changed the row: %+v", got)
		}
	})
}

func TestStore_SetLimitReachedKeepsVersion(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		for _, reached := range []bool{true, true, false} {
			if err := s.SetLimitReached(ctx, c.ID, reached); err != nil {
				t.Fatal(err)
			}
			got, _ := s.GetCrawler(ctx, c.ID)
			if got.LimitReached != reached || got.Version != 1 || !got.UpdatedAt.Equal(c.UpdatedAt) {
				t.Fatalf("after SetLimitReached(%v): %+v", reached, got)
			}
		}
	})
}

// usageOf reads a crawler's and a user's usage.
func usageOf(t *testing.T, s *Store, crawlerID, userID int64) (int64, int64) {
	t.Helper()
	var cu int64
	if crawlerID != 0 {
		c, err := s.GetCrawler(context.Background(), crawlerID)
		if err != nil {
			t.Fatal(err)
		}
		cu = c.Usage
	}
	u, err := s.GetUser(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	return cu, u.Usage
}

func seqsOf(incs []api.Increment) []uint64 {
	out := make([]uint64, 0, len(incs))
	for _, inc := range incs {
		out = append(out, inc.Seq)
	}
	return out
}

func TestStore_ApplyIncrementsExactlyOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		inc := func(seq uint64, n int64) api.Increment {
			return api.Increment{NodeID: "node-a", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: n}
		}
		apply := func(batch ...api.Increment) []uint64 {
			t.Helper()
			applied, err := s.ApplyIncrements(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			return seqsOf(applied)
		}
		want := func(crawler, user int64) {
			t.Helper()
			if cu, uu := usageOf(t, s, c.ID, u.ID); cu != crawler || uu != user {
				t.Fatalf("usage crawler %d, user %d; want %d, %d", cu, uu, crawler, user)
			}
		}

		if got := apply(inc(1, 5), inc(2, 7)); !slices.Equal(got, []uint64{1, 2}) {
			t.Fatalf("first batch applied %v", got)
		}
		want(12, 12)
		if got := apply(inc(1, 5), inc(2, 7)); len(got) != 0 {
			t.Fatalf("same batch again applied %v", got)
		}
		want(12, 12)
		// Overlapping, shuffled, with a duplicate inside the batch.
		if got := apply(inc(4, 1), inc(2, 7), inc(3, 10), inc(4, 1)); !slices.Equal(got, []uint64{4, 3}) {
			t.Fatalf("overlapping batch applied %v, want [4 3] (input order)", got)
		}
		want(23, 23)
		// The same sequence number from another node is another increment.
		other := inc(1, 100)
		other.NodeID = "node-b"
		if got := apply(other); !slices.Equal(got, []uint64{1}) {
			t.Fatalf("other node applied %v", got)
		}
		want(123, 123)
		if got := apply(inc(0, 1)); !slices.Equal(got, []uint64{0}) {
			t.Fatalf("sequence number 0 applied %v", got)
		}
		want(124, 124)
		if got := apply(); len(got) != 0 {
			t.Fatalf("empty batch applied %v", got)
		}

		ids, err := s.AppliedIDs(ctx, "node-a", []uint64{9, 3, 1, 3, 5, 2, 4})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, []uint64{3, 1, 2, 4}) {
			t.Fatalf("AppliedIDs = %v, want [3 1 2 4]", ids)
		}
		if ids, _ := s.AppliedIDs(ctx, "node-c", []uint64{1}); len(ids) != 0 {
			t.Fatalf("AppliedIDs of an unknown node = %v", ids)
		}

		// A negative count is recorded (so it is acked) but adds nothing.
		if got := apply(inc(5, -50)); !slices.Equal(got, []uint64{5}) {
			t.Fatalf("negative increment applied %v", got)
		}
		want(124, 124)
		if _, err := s.ApplyIncrements(ctx, []api.Increment{{Seq: 1, CrawlerID: c.ID, Count: 1}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("increment without node id = %v, want ErrInvalid", err)
		}
	})
}

// TestStore_RecoveredIncrementCompletedByItsNode: a recovery counts an
// increment from the store before all of its comments landed; when the node
// (only cut off) reports it later with the full count, the difference is
// added once. A normal duplicate never adds, and a recovery never adds to
// what the node reported.
func TestStore_RecoveredIncrementCompletedByItsNode(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		inc := func(seq uint64, n int64) api.Increment {
			return api.Increment{NodeID: "node-a", Seq: seq, CrawlerID: c.ID, UserID: u.ID, Count: n}
		}
		type step struct {
			name      string
			recovered bool
			inc       api.Increment
			applied   []int64 // counts applied now
			usage     int64
		}
		for _, st := range []step{
			{"recovery counts 3 of seq 1", true, inc(1, 3), []int64{3}, 3},
			{"the node reports seq 1 with 5: 2 more", false, inc(1, 5), []int64{2}, 5},
			{"the same report again adds nothing", false, inc(1, 5), nil, 5},
			{"a lower report adds nothing", false, inc(1, 4), nil, 5},
			{"a recovery of seq 1 again adds nothing", true, inc(1, 9), nil, 5},
			{"the node reports seq 2 with 4", false, inc(2, 4), []int64{4}, 9},
			{"a normal duplicate with more adds nothing", false, inc(2, 6), nil, 9},
			{"a recovery of a reported increment adds nothing", true, inc(2, 8), nil, 9},
		} {
			apply := s.ApplyIncrements
			if st.recovered {
				apply = s.ApplyRecovered
			}
			applied, err := apply(ctx, []api.Increment{st.inc})
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			var counts []int64
			for _, a := range applied {
				counts = append(counts, a.Count)
			}
			if !slices.Equal(counts, st.applied) {
				t.Fatalf("%s: applied counts %v, want %v", st.name, counts, st.applied)
			}
			if cu, uu := usageOf(t, s, c.ID, u.ID); cu != st.usage || uu != st.usage {
				t.Fatalf("%s: usage crawler %d, user %d; want %d", st.name, cu, uu, st.usage)
			}
		}
	})
}

func TestStore_ApplyIncrementsCursorAndDeletedCrawler(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		other := mustUser(t, s, "other", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		gone := mustCrawler(t, s, newCrawler(u.ID, "gone"))
		base := time.Date(2024, 3, 10, 8, 0, 0, 123456000, time.UTC)
		tokyo := time.FixedZone("JST", 9*3600)
		steps := []struct {
			newest time.Time
			want   time.Time
		}{
			{time.Time{}, time.Time{}},             // zero: no cursor yet
			{base, base},                           // first
			{base.Add(-time.Hour).In(tokyo), base}, // older, other zone: kept
			{base.Add(500 * time.Microsecond).In(tokyo), base.Add(500 * time.Microsecond)}, // newer in another zone
			{time.Time{}, base.Add(500 * time.Microsecond)},                                // zero: kept
			{base.Add(2 * time.Second), base.Add(2 * time.Second)},                         // newer
		}
		for i, st := range steps {
			inc := api.Increment{NodeID: "n", Seq: uint64(i + 1), CrawlerID: c.ID, UserID: u.ID, Count: 1, Newest: st.newest}
			if _, err := s.ApplyIncrements(ctx, []api.Increment{inc}); err != nil {
				t.Fatal(err)
			}
			got, _ := s.GetCrawler(ctx, c.ID)
			switch {
			case st.want.IsZero() && got.CursorAt != nil:
				t.Fatalf("step %d: cursor %v, want none", i, got.CursorAt)
			case !st.want.IsZero() && (got.CursorAt == nil || !got.CursorAt.Equal(st.want)):
				t.Fatalf("step %d: cursor %v, want %v", i, got.CursorAt, st.want)
			}
		}
		if got, _ := s.GetCrawler(ctx, c.ID); got.Version != 1 {
			t.Fatalf("usage changed the crawler's version to %d", got.Version)
		}

		// Usage for a deleted crawler still counts to the user it names.
		if err := s.DeleteCrawler(ctx, gone.ID); err != nil {
			t.Fatal(err)
		}
		batch := []api.Increment{
			{NodeID: "n", Seq: 100, CrawlerID: gone.ID, UserID: other.ID, Count: 4},
			{NodeID: "n", Seq: 101, CrawlerID: c.ID, UserID: other.ID, Count: 3}, // SQL's owner wins over the spawn's
		}
		applied, err := s.ApplyIncrements(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqsOf(applied), []uint64{100, 101}) {
			t.Fatalf("applied %v", seqsOf(applied))
		}
		if cu, uu := usageOf(t, s, c.ID, u.ID); cu != 9 || uu != 9 {
			t.Fatalf("crawler %d / user %d usage, want 9 / 9", cu, uu)
		}
		if _, ou := usageOf(t, s, 0, other.ID); ou != 4 {
			t.Fatalf("usage of the deleted crawler's user = %d, want 4", ou)
		}
		if ids, _ := s.AppliedIDs(ctx, "n", []uint64{100}); !slices.Equal(ids, []uint64{100}) {
			t.Fatalf("increment of a deleted crawler not recorded: %v", ids)
		}
	})
}

// TestStore_ApplyIncrementsConcurrent has 8 goroutines apply random,
// overlapping, shuffled batches of one pool of increments at once. Usage must
// equal the sum of the distinct increments, and each increment must be
// reported applied by exactly one call.
func TestStore_ApplyIncrementsConcurrent(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		users := []User{mustUser(t, s, "a", 0), mustUser(t, s, "b", 0)}
		var crawlers []Crawler
		for i := range 4 {
			crawlers = append(crawlers, mustCrawler(t, s, newCrawler(users[i%2].ID, strings.Repeat("q", i+1))))
		}
		rng := mrand.New(mrand.NewPCG(1, 2))
		var pool []api.Increment
		for _, node := range []string{"n1", "n2", "n3"} {
			for seq := uint64(1); seq <= 60; seq++ {
				c := crawlers[rng.IntN(len(crawlers))]
				pool = append(pool, api.Increment{NodeID: node, Seq: seq, CrawlerID: c.ID, UserID: c.UserID, Count: int64(rng.IntN(20) + 1)})
			}
		}
		const workers, batches = 8, 12
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			reports = map[string]int{}
			errs    = make(chan error, workers)
		)
		for w := range workers {
			r := mrand.New(mrand.NewPCG(uint64(w), 99))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range batches {
					batch := make([]api.Increment, 1+r.IntN(40))
					for i := range batch {
						batch[i] = pool[r.IntN(len(pool))]
					}
					applied, err := s.ApplyIncrements(ctx, batch)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for _, inc := range applied {
						reports[fmt.Sprintf("%s/%d", inc.NodeID, inc.Seq)]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Finally everything once more, shuffled: what was missed is applied now.
		all := slices.Clone(pool)
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		applied, err := s.ApplyIncrements(ctx, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, inc := range applied {
			reports[fmt.Sprintf("%s/%d", inc.NodeID, inc.Seq)]++
		}
		if len(reports) != len(pool) {
			t.Fatalf("%d distinct increments reported applied, want %d", len(reports), len(pool))
		}
		for id, n := range reports {
			if n != 1 {
				t.Fatalf("increment %s reported applied %d times", id, n)
			}
		}
		wantCrawler, wantUser := map[int64]int64{}, map[int64]int64{}
		for _, inc := range pool {
			wantCrawler[inc.CrawlerID] += inc.Count
			wantUser[inc.UserID] += inc.Count
		}
		for _, c := range crawlers {
			got, _ := s.GetCrawler(ctx, c.ID)
			if got.Usage != wantCrawler[c.ID] {
				t.Errorf("crawler %d usage %d, want %d", c.ID, got.Usage, wantCrawler[c.ID])
			}
		}
		for _, u := range users {
			got, _ := s.GetUser(ctx, u.ID)
			if got.Usage != wantUser[u.ID] {
				t.Errorf("user %d usage %d, want %d", u.ID, got.Usage, wantUser[u.ID])
			}
		}
	})
}

func TestStore_PruneApplied(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		batch := []api.Increment{{NodeID: "n", Seq: 1, CrawlerID: c.ID, Count: 1}, {NodeID: "n", Seq: 2, CrawlerID: c.ID, Count: 1}}
		if _, err := s.ApplyIncrements(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if n, err := s.PruneApplied(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("PruneApplied(an hour ago) = %d, %v; want 0", n, err)
		}
		if n, err := s.PruneApplied(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
			t.Fatalf("PruneApplied(now) = %d, %v; want 2", n, err)
		}
		if ids, _ := s.AppliedIDs(ctx, "n", []uint64{1, 2}); len(ids) != 0 {
			t.Fatalf("AppliedIDs after prune = %v", ids)
		}
	})
}

func TestStore_MigrationsIdempotent(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s1, err := Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		u := mustUser(t, s1, "kept", 7)
		if err := s1.Close(); err != nil {
			t.Fatal(err)
		}
		s := openTest(t, dsn) // second Open: no migration runs again
		got, err := s.GetUser(ctx, u.ID)
		if err != nil || got.Name != "kept" || got.CommentLimit != 7 {
			t.Fatalf("user after reopen = %+v, %v", got, err)
		}
		var versions []int64
		if err := s.db.Model(&schemaMigration{}).Order("version").Pluck("version", &versions).Error; err != nil {
			t.Fatal(err)
		}
		if len(versions) != len(migrations) || versions[len(versions)-1] != latestVersion(migrations) {
			t.Fatalf("schema_migrations = %v, want one row per migration", versions)
		}

		// A later migration runs once, however often the store opens.
		runs := 0
		extra := append(slices.Clone(migrations), migration{version: latestVersion(migrations) + 1, name: "test", up: func(tx *gorm.DB) error {
			runs++
			return tx.Exec("CREATE TABLE test_extra (id INTEGER PRIMARY KEY)").Error
		}})
		for range 2 {
			if err := s.migrate(ctx, extra); err != nil {
				t.Fatal(err)
			}
		}
		if runs != 1 {
			t.Fatalf("extra migration ran %d times, want 1", runs)
		}
		// A hub that does not know the newest migration refuses the database.
		if err := s.migrate(ctx, migrations); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("migrate with an older list = %v, want a refusal", err)
		}
	})
}

// TestStore_ConcurrentOpen starts several stores on one empty database at
// once, as hubs restarted together would: the migrations serialise.
func TestStore_ConcurrentOpen(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		const n = 4
		stores := make([]*Store, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stores[i], errs[i] = Open(context.Background(), dsn, nil)
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Errorf("Open #%d: %v", i, errs[i])
				continue
			}
			defer stores[i].Close()
		}
		if t.Failed() {
			return
		}
		var count int64
		if err := stores[0].db.Model(&schemaMigration{}).Count(&count).Error; err != nil || count != int64(len(migrations)) {
			t.Fatalf("schema_migrations has %d rows (%v), want %d", count, err, len(migrations))
		}
	})
}

// TestStore_SchemaMatchesModels guards against a model field added without a
// migration.
func TestStore_SchemaMatchesModels(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		for _, model := range []any{&User{}, &Crawler{}, &AppliedIncrement{}, &KnownNode{}} {
			stmt := &gorm.Statement{DB: s.db}
			if err := stmt.Parse(model); err != nil {
				t.Fatal(err)
			}
			for _, f := range stmt.Schema.Fields {
				if f.DBName == "" {
					continue
				}
				if !s.db.Migrator().HasColumn(model, f.DBName) {
					t.Errorf("table %s has no column %s: add a migration", stmt.Schema.Table, f.DBName)
				}
			}
		}
	})
}

func TestOpen_RejectsBadDSN(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")
	cases := []struct{ name, dsn string }{
		{"no scheme", "blackwidow.db"},
		{"unknown scheme", "mysql://root@localhost/bw"},
		{"empty sqlite path", "sqlite://"},
		{"missing directory", "sqlite://" + missing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(context.Background(), tc.dsn, nil)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tc.dsn)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open(%q) = %v, want ErrInvalid", tc.dsn, err)
			}
		})
	}
}

func TestOpen_SQLitePragmas(t *testing.T) {
	s := openTest(t, sqliteTestDSN(t))
	var mode string
	var fk, busy int
	s.db.Raw("PRAGMA journal_mode").Scan(&mode)
	s.db.Raw("PRAGMA foreign_keys").Scan(&fk)
	s.db.Raw("PRAGMA busy_timeout").Scan(&busy)
	if mode != "wal" || fk != 1 || busy != int(sqliteBusyTimeout.Milliseconds()) {
		t.Fatalf("journal_mode %q, foreign_keys %d, busy_timeout %d", mode, fk, busy)
	}
	if s.Dialect() != DialectSQLite {
		t.Fatalf("Dialect = %q", s.Dialect())
	}
}

func TestRedact(t *testing.T) {
	got := Redact("postgres://bw:secret@db:5432/bw?sslmode=disable")
	if strings.Contains(got, "secret") {
		t.Fatalf("Redact kept the password: %s", got)
	}
}

func TestStore_KnownNodes(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		ctx := context.Background()
		if err := s.RememberNode(ctx, "a", "http://127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
		if err := s.RememberNode(ctx, "a", "http://127.0.0.1:2"); err != nil {
			t.Fatal(err)
		}
		if err := s.RememberNode(ctx, "b", "http://127.0.0.1:3"); err != nil {
			t.Fatal(err)
		}
		if err := s.ForgetNode(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		nodes, err := s.KnownNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 1 || nodes[0].ID != "a" || nodes[0].URL != "http://127.0.0.1:2" {
			t.Fatalf("known nodes %+v", nodes)
		}
	})
}

func TestStore_CreateCrawlersAllOrNothing(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "bulk", 0)
		in := make([]Crawler, 1200)
		for i := range in {
			in[i] = newCrawler(u.ID, fmt.Sprintf("term%d", i))
		}
		in[7].Enabled = false
		out, err := s.CreateCrawlers(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.ListCrawlers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in) || len(all) != len(in) {
			t.Fatalf("created %d, listed %d, want %d", len(out), len(all), len(in))
		}
		for i, c := range all {
			if c.ID != out[i].ID || c.Version != 1 || c.Enabled != (i != 7) {
				t.Fatalf("row %d = %+v, want id %d, version 1, enabled %v", i, c, out[i].ID, i != 7)
			}
		}

		bad := []Crawler{newCrawler(u.ID, "fine"), newCrawler(4242, "nobody")}
		if _, err := s.CreateCrawlers(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("unknown user: err = %v, want ErrInvalid", err)
		}
		bad = []Crawler{newCrawler(u.ID, "fine"), {UserID: u.ID, Source: "ftp", Query: "x", QueryUUID: "y"}}
		if _, err := s.CreateCrawlers(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("bad source: err = %v, want ErrInvalid", err)
		}
		if after, _ := s.ListCrawlers(ctx); len(after) != len(in) {
			t.Fatalf("a failed bulk create left %d rows, want %d", len(after), len(in))
		}
	})
}

func TestStore_MaxAppliedSeq(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "m", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "max"))
		if got, err := s.MaxAppliedSeq(ctx, "n1"); err != nil || got != 0 {
			t.Fatalf("no increments: %d, %v", got, err)
		}
		incs := []api.Increment{{NodeID: "n1", Seq: 7, CrawlerID: c.ID, UserID: u.ID, Count: 1}, {NodeID: "n1", Seq: 3, CrawlerID: c.ID, UserID: u.ID, Count: 1}, {NodeID: "n2", Seq: 9, CrawlerID: c.ID, UserID: u.ID, Count: 1}}
		if _, err := s.ApplyIncrements(ctx, incs); err != nil {
			t.Fatal(err)
		}
		if got, err := s.MaxAppliedSeq(ctx, "n1"); err != nil || got != 7 {
			t.Fatalf("MaxAppliedSeq(n1) = %d, %v; want 7", got, err)
		}
	})
}
