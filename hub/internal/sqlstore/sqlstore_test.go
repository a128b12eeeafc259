package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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

func sqliteTestDSN(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "blackwidow.db")
}

// postgresTestDSN creates an empty database for one test and drops it when
// the test ends, so tests never see each other's rows and can run again.
func postgresTestDSN(t testing.TB) string {
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

func openTest(t testing.TB, dsn string) *Store {
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
		UserID: userID, Source: api.SourceTwitter, Query: []string{q},
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
			ID: 77, UserID: u.ID, Source: api.SourceRSS, Query: []string{"https://a.example/feed", "https://b.example/rss"},
			Keywords: []string{"go", "rust"}, QueryUUID: "3f1c3a57-5a4e-5b7c-9a55-0d1f7f0e8c11", CommentLimit: 50,
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
		if got.UserID != u.ID || got.Source != in.Source || !slices.Equal(got.Query, in.Query) || !slices.Equal(got.Keywords, in.Keywords) ||
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
			c.Query = []string{"https://c.example/atom"}
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
		if up.Version != 2 || !slices.Equal(up.Query, []string{"https://c.example/atom"}) || up.CommentLimit != 10 || up.Enabled ||
			up.Usage != 0 || up.UserID != u.ID || up.CursorAt == nil || !up.CursorAt.Equal(cursor) {
			t.Fatalf("UpdateCrawler = %+v", up)
		}
		got, _ = s.GetCrawler(ctx, c.ID)
		if got.Version != 2 || !slices.Equal(got.Query, up.Query) || got.Enabled || got.Usage != 0 || got.UserID != u.ID ||
			got.CursorAt == nil || !got.CursorAt.Equal(cursor) || !slices.Equal(got.Keywords, in.Keywords) {
			t.Fatalf("after update GetCrawler = %+v", got)
		}
		if _, err := s.UpdateCrawler(ctx, c.ID, func(*Crawler) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetCrawler(ctx, c.ID); got.Version != 3 {
			t.Fatalf("version after second update = %d, want 3", got.Version)
		}

		if _, err := s.UpdateCrawler(ctx, d.ID, func(c *Crawler) error { c.Keywords = []string{"news"}; return nil }); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetCrawler(ctx, d.ID); !slices.Equal(got.Keywords, []string{"news"}) || got.CursorAt != nil || got.Enabled || got.Version != 2 {
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
			{"empty query", func(c *Crawler) { c.Query = []string{"  "} }, "query is empty"},
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
		if _, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error { c.Query = []string{"changed"}; return errFn }); err != errFn {
			t.Fatalf("UpdateCrawler with failing fn = %v, want the fn's error as is", err)
		}
		if _, err := s.UpdateCrawler(ctx, c.ID, func(c *Crawler) error { c.Query = []string{"changed"}; c.Source = "ftp"; return nil }); !errors.Is(err, ErrInvalid) {
			t.Fatalf("UpdateCrawler to a bad source = %v, want ErrInvalid", err)
		}
		if got, _ := s.GetCrawler(ctx, c.ID); !slices.Equal(got.Query, []string{"q"}) || got.Version != 1 || got.Source != api.SourceTwitter {
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
		bad = []Crawler{newCrawler(u.ID, "fine"), {UserID: u.ID, Source: "ftp", Query: []string{"x"}, QueryUUID: "y"}}
		if _, err := s.CreateCrawlers(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("bad source: err = %v, want ErrInvalid", err)
		}
		if after, _ := s.ListCrawlers(ctx); len(after) != len(in) {
			t.Fatalf("a failed bulk create left %d rows, want %d", len(after), len(in))
		}
	})
}

// TestStore_CrawlerListsAreNewlineJoinedText: a crawler's query and
// keywords are lists outside the store and one text each in SQL, joined by
// newlines as rows written before the lists were, which read back the same.
func TestStore_CrawlerListsAreNewlineJoinedText(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "u", 0)
		c := newCrawler(u.ID, "x")
		c.Source = api.SourceRSS
		c.Query = []string{"https://a.example/feed", "https://b.example/rss"}
		c.Keywords = []string{"golang OR rust"}
		c = mustCrawler(t, s, c)
		var raw struct{ Query, Keywords string }
		if err := s.db.WithContext(ctx).Raw("SELECT query, keywords FROM crawlers WHERE id = ?", c.ID).Scan(&raw).Error; err != nil {
			t.Fatal(err)
		}
		if raw.Query != "https://a.example/feed\nhttps://b.example/rss" || raw.Keywords != "golang OR rust" {
			t.Fatalf("columns hold %q and %q", raw.Query, raw.Keywords)
		}
		if err := s.db.WithContext(ctx).Exec("UPDATE crawlers SET query = ?, keywords = '' WHERE id = ?", "https://c.example/atom\nhttps://d.example/feed", c.ID).Error; err != nil {
			t.Fatal(err)
		}
		got, err := s.GetCrawler(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Query, []string{"https://c.example/atom", "https://d.example/feed"}) || got.Keywords != nil {
			t.Fatalf("read back query %q keywords %q", got.Query, got.Keywords)
		}
		if q, kw := got.CanonicalQuery(), got.CanonicalKeywords(); q != "https://c.example/atom,https://d.example/feed" || kw != "" {
			t.Fatalf("canonical query %q keywords %q", q, kw)
		}
	})
}
