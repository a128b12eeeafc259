package cassandra

// These tests run against a real Cassandra whose address (host:port) is in
// BW_TEST_CASSANDRA; scripts/services.sh up starts one and prints it. Without
// it they skip, unless BW_REQUIRE_SERVICES=1. Each test works in its own
// keyspace and drops it afterwards.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// The Store satisfies store.Store (spelled out here: the store package
// chooses implementations by URI, so importing it here would be a cycle).
var _ interface {
	Write(context.Context, []api.Comment) error
	Recent(context.Context, int64, int) ([]api.Comment, error)
	Close() error
} = (*Store)(nil)

func testAddr(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv("BW_TEST_CASSANDRA")
	if addr == "" {
		if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
			tb.Fatal("BW_TEST_CASSANDRA is not set but BW_REQUIRE_SERVICES=1 (run scripts/services.sh up and eval its env)")
		}
		tb.Skip("BW_TEST_CASSANDRA not set (scripts/services.sh up starts Cassandra)")
	}
	return addr
}

var (
	adminOnce    sync.Once
	adminSession *gocql.Session
	adminErr     error
)

// admin is a plain gocql session for checks and cleanup, independent of
// the store under test.
func admin(tb testing.TB) *gocql.Session {
	tb.Helper()
	addr := testAddr(tb)
	adminOnce.Do(func() {
		c := gocql.NewCluster(addr)
		c.ProtoVersion = 4
		c.Consistency = gocql.One
		c.Timeout = 30 * time.Second
		c.Logger = log.New(io.Discard, "", 0)
		adminSession, adminErr = c.CreateSession()
	})
	if adminErr != nil {
		tb.Fatalf("connect to %s: %v", addr, adminErr)
	}
	return adminSession
}

func newKeyspace(tb testing.TB) string {
	tb.Helper()
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	ks := "bwtest_" + hex.EncodeToString(b[:])
	s := admin(tb)
	tb.Cleanup(func() {
		if err := s.Query(`DROP KEYSPACE IF EXISTS ` + ks).Exec(); err != nil {
			tb.Errorf("drop keyspace %s: %v", ks, err)
		}
	})
	return ks
}

func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// openTest opens a store on a fresh keyspace that is dropped after the test.
func openTest(tb testing.TB) (*Store, string) {
	tb.Helper()
	addr := testAddr(tb)
	ks := newKeyspace(tb)
	uri := "cassandra://" + addr + "/" + ks
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Open(ctx, uri, testLogger(tb))
	if err != nil {
		tb.Fatalf("Open(%s): %v", uri, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, uri
}

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// mkComment makes a comment published at pub.
func mkComment(crawler int64, id string, pub time.Time) api.Comment {
	return api.Comment{
		ID:          id,
		CrawlerID:   crawler,
		Source:      "rss",
		Author:      "author of " + id,
		Text:        "text of " + id + " — ünïcödé ✓",
		URL:         "https://example.test/" + id,
		PublishedAt: pub,
		FetchedAt:   pub.Add(90 * time.Second),
		Matched:     []string{"alpha", "beta"},
	}
}

// normalized is c as the store gives it back: UTC, millisecond times.
func normalized(c api.Comment) api.Comment {
	c.PublishedAt = c.PublishedAt.UTC().Truncate(time.Millisecond)
	c.FetchedAt = c.FetchedAt.UTC().Truncate(time.Millisecond)
	if len(c.Matched) == 0 {
		c.Matched = nil
	}
	return c
}

func ids(cs []api.Comment) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestParseURI(t *testing.T) {
	good := []struct {
		uri  string
		want Config
	}{
		{"cassandra://127.0.0.1/bw", Config{Hosts: []string{"127.0.0.1:9042"}, Keyspace: "bw", Replication: 1, Consistency: gocql.LocalOne}},
		{"cassandra://a:9043,b,[::1]:7,::2/bw_1/", Config{Hosts: []string{"a:9043", "b:9042", "[::1]:7", "[::2]:9042"}, Keyspace: "bw_1", Replication: 1, Consistency: gocql.LocalOne}},
		{"CASSANDRA://h/_x?replication=3&consistency=quorum", Config{Hosts: []string{"h:9042"}, Keyspace: "_x", Replication: 3, Consistency: gocql.Quorum}},
		{"cassandra://h/k?replication=dc1:3,dc2:2&consistency=local_quorum", Config{Hosts: []string{"h:9042"}, Keyspace: "k", Replication: 1,
			DataCenters: map[string]int{"dc1": 3, "dc2": 2}, Consistency: gocql.LocalQuorum}},
		{"cassandra://u:p%40ss@h:1/k", Config{Hosts: []string{"h:1"}, Keyspace: "k", Replication: 1, Consistency: gocql.LocalOne, Username: "u", Password: "p@ss"}},
	}
	for _, g := range good {
		got, err := ParseURI(g.uri)
		if err != nil {
			t.Errorf("ParseURI(%q): %v", g.uri, err)
			continue
		}
		if !reflect.DeepEqual(got, g.want) {
			t.Errorf("ParseURI(%q) = %+v, want %+v", g.uri, got, g.want)
		}
	}
}

// Bad URIs are rejected by Open before any connection, with an error that
// says what is wrong.
func TestOpenRejectsBadURIs(t *testing.T) {
	bad := []struct{ uri, want string }{
		{"", "want cassandra://"},
		{"file://./data", "want cassandra://"},
		{"cassandra:/h/ks", "want cassandra://"},
		{"cassandra://", "no host"},
		{"cassandra:///ks", "no host"},
		{"cassandra://h", "no keyspace"},
		{"cassandra://h/", "no keyspace"},
		{"cassandra://h/Bad", `keyspace "Bad"`},
		{"cassandra://h/1ks", `keyspace "1ks"`},
		{"cassandra://h/ks-x", `keyspace "ks-x"`},
		{"cassandra://h/a/b", `keyspace "a/b"`},
		{"cassandra://h/" + strings.Repeat("k", 49), "longer than 48"},
		{"cassandra://h:0/ks", "port must be"},
		{"cassandra://h:70000/ks", "port must be"},
		{"cassandra://h:x/ks", "port must be"},
		{"cassandra://h,,g/ks", "empty host"},
		{"cassandra://:9042/ks", "empty host name"},
		{"cassandra://h/ks?replication=0", "replication=0"},
		{"cassandra://h/ks?replication=x", "replication=x"},
		{"cassandra://h/ks?replication=dc1", "replication=dc1"},
		{"cassandra://h/ks?consistency=most", "consistency=most"},
		{"cassandra://h/ks?consistency=any", "consistency=any"},
		{"cassandra://h/ks?colour=red", `unknown parameter "colour"`},
		{"cassandra://h/ks?replication=1&replication=2", "given 2 times"},
		{"cassandra://u:secret@h/Bad", "u:xxxxx@h"},
	}
	for _, b := range bad {
		s, err := Open(context.Background(), b.uri, nil)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", b.uri)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "cassandra: bad store URI") || !strings.Contains(msg, b.want) {
			t.Errorf("Open(%q) error %q, want it to start with %q and contain %q", b.uri, msg, "cassandra: bad store URI", b.want)
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("Open(%q) error %q shows the password", b.uri, msg)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	testAddr(t) // only with the services: needs a port known to be closed
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Open(ctx, "cassandra://127.0.0.1:1/ks", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "cassandra: connect to 127.0.0.1:1") {
		t.Fatalf("Open on a closed port: %v", err)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	testAddr(t)
	for _, mode := range []struct {
		name string
		mode writeMode
	}{{"batches", writeBatches}, {"singles", writeSingles}} {
		t.Run(mode.name, func(t *testing.T) {
			s, _ := openTest(t)
			s.mode = mode.mode
			ctx := ctxT(t)
			// Sub-millisecond digits and a non-UTC zone: they come back as
			// UTC milliseconds.
			zone := time.FixedZone("X", -5*3600)
			base := time.Date(2024, 3, 5, 10, 11, 12, 123456789, zone)
			in := []api.Comment{
				mkComment(7, "c1", base),
				mkComment(7, "c2", base.Add(time.Second)),
				mkComment(7, "c3", base.Add(2*time.Second)),
			}
			in[0].Lang, in[0].ReplyTo, in[0].ThreadID = "en", "at://did:plc:a/app.bsky.feed.post/1", "at://did:plc:a/app.bsky.feed.post/0"
			in[1].Matched = nil
			in[1].Author = ""
			in[1].URL = ""
			in[2].Text = strings.Repeat("long text ", 2000)
			in[2].FetchedAt = time.Time{}.Add(time.Hour) // far from PublishedAt
			if err := s.Write(ctx, in); err != nil {
				t.Fatal(err)
			}
			got, err := s.Recent(ctx, 7, 10)
			if err != nil {
				t.Fatal(err)
			}
			want := []api.Comment{normalized(in[2]), normalized(in[1]), normalized(in[0])}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Recent:\n got %+v\nwant %+v", got, want)
			}
			for _, c := range got {
				if c.PublishedAt.Location() != time.UTC || c.FetchedAt.Location() != time.UTC {
					t.Errorf("%s: times not in UTC: %v %v", c.ID, c.PublishedAt, c.FetchedAt)
				}
			}
			if got[2].PublishedAt.Nanosecond() != 123000000 {
				t.Errorf("published_at %v, want millisecond precision .123", got[2].PublishedAt)
			}
			// Other crawlers see nothing.
			if other, err := s.Recent(ctx, 8, 10); err != nil || len(other) != 0 {
				t.Errorf("Recent(other crawler) = %v, %v; want nothing", ids(other), err)
			}
			if none, err := s.Recent(ctx, 7, 0); err != nil || len(none) != 0 {
				t.Errorf("Recent(n=0) = %v, %v; want nothing", ids(none), err)
			}
			if err := s.Write(ctx, nil); err != nil {
				t.Errorf("Write(nil): %v", err)
			}
		})
	}
}

func TestRecentNewestFirstAcrossDays(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	today := time.Now().UTC().Truncate(time.Second)
	dayStart := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	yesterday := dayStart.Add(-time.Hour)         // 23:00 the day before
	lastWeek := dayStart.Add(-6*24*time.Hour + 1) // a few days earlier
	future := dayStart.Add(3*24*time.Hour + 5)    // feeds do date things ahead
	in := []api.Comment{
		mkComment(1, "y1", yesterday),
		mkComment(1, "t1", dayStart.Add(time.Minute)),
		mkComment(1, "y2", yesterday.Add(30*time.Minute)),
		mkComment(1, "w1", lastWeek),
		mkComment(1, "t2", dayStart.Add(2*time.Minute)),
		mkComment(1, "f1", future),
		// Same published time, ordered by id ascending.
		mkComment(1, "t3b", dayStart.Add(3*time.Minute)),
		mkComment(1, "t3a", dayStart.Add(3*time.Minute)),
		mkComment(2, "other", dayStart.Add(4*time.Minute)),
	}
	// Two writes, as two delivery batches would be.
	if err := s.Write(ctx, in[:4]); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, in[4:]); err != nil {
		t.Fatal(err)
	}
	wantAll := []string{"f1", "t3a", "t3b", "t2", "t1", "y2", "y1", "w1"}
	for n := 1; n <= len(wantAll)+2; n++ {
		got, err := s.Recent(ctx, 1, n)
		if err != nil {
			t.Fatal(err)
		}
		want := wantAll[:min(n, len(wantAll))]
		if !reflect.DeepEqual(ids(got), want) {
			t.Errorf("Recent(n=%d) = %v, want %v", n, ids(got), want)
		}
	}
	// A fresh Store (another spawn, or after a restart) sees the same.
	s2, err := Open(ctx, "cassandra://"+testAddr(t)+"/"+s.cfg.Keyspace, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Recent(ctx, 1, 100)
	if err != nil || !reflect.DeepEqual(ids(got), wantAll) {
		t.Errorf("Recent from a second store = %v, %v; want %v", ids(got), err, wantAll)
	}
}

func countRows(t *testing.T, ks string, crawler int64, day time.Time) int {
	t.Helper()
	var n int
	err := admin(t).Query(`SELECT COUNT(*) FROM `+ks+`.comments WHERE crawler_id = ? AND day = ?`, crawler, utcDay(day)).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRedeliveryOverwrites(t *testing.T) {
	testAddr(t)
	for _, mode := range []struct {
		name string
		mode writeMode
	}{{"batches", writeBatches}, {"singles", writeSingles}} {
		t.Run(mode.name, func(t *testing.T) {
			s, _ := openTest(t)
			s.mode = mode.mode
			ctx := ctxT(t)
			pub := time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
			c := mkComment(42, "dup", pub)
			if err := s.Write(ctx, []api.Comment{c, mkComment(42, "other", pub.Add(time.Second))}); err != nil {
				t.Fatal(err)
			}
			// Re-delivered: once more on its own, then twice in one batch
			// (a retry of a batch that had partly succeeded), the second
			// time with a later fetch time and edited text.
			if err := s.Write(ctx, []api.Comment{c}); err != nil {
				t.Fatal(err)
			}
			c2 := c
			c2.Text = "edited"
			c2.FetchedAt = c.FetchedAt.Add(time.Hour)
			if err := s.Write(ctx, []api.Comment{c, c2}); err != nil {
				t.Fatal(err)
			}
			if n := countRows(t, s.cfg.Keyspace, 42, pub); n != 2 {
				t.Fatalf("SELECT COUNT(*) = %d rows, want 2 (a re-delivered comment must overwrite itself)", n)
			}
			got, err := s.Recent(ctx, 42, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[1].ID != "dup" || got[1].Text != "edited" {
				t.Fatalf("Recent = %+v, want other then dup (edited)", got)
			}
		})
	}
}

func TestOpenTwiceSameKeyspace(t *testing.T) {
	s1, uri := openTest(t)
	ctx := ctxT(t)
	s2, err := Open(ctx, uri, testLogger(t))
	if err != nil {
		t.Fatalf("second Open on the same keyspace: %v", err)
	}
	defer s2.Close()
	pub := time.Now().UTC()
	if err := s1.Write(ctx, []api.Comment{mkComment(3, "a", pub)}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Write(ctx, []api.Comment{mkComment(3, "b", pub.Add(time.Millisecond))}); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Store{s1, s2} {
		got, err := s.Recent(ctx, 3, 5)
		if err != nil || !reflect.DeepEqual(ids(got), []string{"b", "a"}) {
			t.Errorf("store %d: Recent = %v, %v; want [b a]", i+1, ids(got), err)
		}
	}
	// Close is idempotent.
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}

// A large delivery into one partition is split into several batches, and
// all of it lands.
func TestWriteLargeBatch(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	var in []api.Comment
	for i := range 1200 {
		c := mkComment(9, fmt.Sprintf("c%04d", i), base.Add(time.Duration(i)*time.Second))
		c.Text = strings.Repeat("x", 1000+i)
		in = append(in, c)
	}
	if err := s.Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s.cfg.Keyspace, 9, base); n != len(in) {
		t.Fatalf("%d rows stored, want %d", n, len(in))
	}
	got, err := s.Recent(ctx, 9, 3)
	if err != nil || !reflect.DeepEqual(ids(got), []string{"c1199", "c1198", "c1197"}) {
		t.Fatalf("Recent = %v, %v", ids(got), err)
	}
}

// A failed write says so, prefixed and wrapped, so the caller retries.
func TestWriteErrorIsWrapped(t *testing.T) {
	s, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Write(ctx, []api.Comment{mkComment(1, "x", time.Now())})
	if err == nil {
		t.Fatal("Write with a cancelled context succeeded")
	}
	if !strings.HasPrefix(err.Error(), "cassandra: ") || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %q (%T): want prefix cassandra: and to wrap context.Canceled", err, err)
	}
	// A closed store fails too, and does not panic.
	s.Close()
	if err := s.Write(context.Background(), []api.Comment{mkComment(1, "y", time.Now().Add(-48*time.Hour))}); err == nil {
		t.Fatal("Write on a closed store succeeded")
	}
}

func TestConcurrentWriters(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	base := time.Now().UTC()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch []api.Comment
			for i := range 50 {
				batch = append(batch, mkComment(int64(w%3), fmt.Sprintf("w%d-%d", w, i), base.Add(-time.Duration(i)*time.Hour)))
			}
			if err := s.Write(ctx, batch); err != nil {
				t.Error(err)
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		return
	}
	total := 0
	for c := range int64(3) {
		got, err := s.Recent(ctx, c, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(got); i++ {
			if got[i].PublishedAt.After(got[i-1].PublishedAt) {
				t.Fatalf("crawler %d: not newest first at %d", c, i)
			}
		}
		total += len(got)
	}
	if total != 400 {
		t.Fatalf("%d comments stored, want 400", total)
	}
}

func TestWriteFreshReportsOnlyNewComments(t *testing.T) {
	testAddr(t)
	s, _ := openTest(t)
	ctx := ctxT(t)
	base := time.Date(2024, 3, 5, 10, 0, 0, 0, time.UTC)
	first := []api.Comment{mkComment(9, "a", base), mkComment(9, "b", base.Add(time.Second)), mkComment(9, "a", base.Add(24*time.Hour))}
	fresh, err := s.WriteFresh(ctx, first)
	if err != nil || !reflect.DeepEqual(fresh, []bool{true, true, true}) {
		t.Fatalf("first write: fresh %v, err %v", fresh, err)
	}
	again := []api.Comment{mkComment(9, "b", base.Add(time.Second)), mkComment(9, "c", base), mkComment(9, "c", base)}
	fresh, err = s.WriteFresh(ctx, again)
	if err != nil || !reflect.DeepEqual(fresh, []bool{false, true, false}) {
		t.Fatalf("second write: fresh %v, err %v, want [false true false]", fresh, err)
	}

	// A failed attempt that may have stored its rows: the retry still
	// counts them as new.
	retry := []api.Comment{mkComment(9, "d", base)}
	s.mu.Lock()
	s.unsettled[rowKey{partKey{9, utcDay(base).Unix()}, base.UnixMilli(), "d"}] = struct{}{}
	s.mu.Unlock()
	if err := s.Write(ctx, retry); err != nil {
		t.Fatal(err)
	}
	fresh, err = s.WriteFresh(ctx, retry)
	if err != nil || !fresh[0] {
		t.Fatalf("retried write: fresh %v, err %v, want new", fresh, err)
	}
	if fresh, _ = s.WriteFresh(ctx, retry); fresh[0] {
		t.Fatal("a settled comment written again counted as new")
	}
}

func TestRecoverCountsWhatEachIntentStored(t *testing.T) {
	testAddr(t)
	s, _ := openTest(t)
	ctx := ctxT(t)
	base := time.Date(2024, 3, 5, 23, 59, 0, 0, time.UTC)
	next := base.Add(2 * time.Minute) // the next UTC day
	intents := []store.Intent{
		{NodeID: "node-a", Seq: 1, CrawlerID: 5, UserID: 9, Days: []time.Time{base, next}},
		{NodeID: "node-a", Seq: 2, CrawlerID: 6, UserID: 9, Instance: 3, LeaseSeq: 4, Days: []time.Time{base}},
		{NodeID: "node-a", Seq: 3, CrawlerID: 5, UserID: 9, Days: []time.Time{base}},
	}
	if err := s.Intend(ctx, intents); err != nil {
		t.Fatal(err)
	}
	tag := func(c api.Comment, node string, seq uint64) api.Comment { c.NodeID, c.IncSeq = node, seq; return c }
	if _, err := s.WriteFresh(ctx, []api.Comment{
		tag(mkComment(5, "x", base), "node-a", 1), tag(mkComment(5, "y", next), "node-a", 1),
		tag(mkComment(6, "z", base), "node-a", 2), tag(mkComment(5, "w", base.Add(time.Second)), "node-b", 1),
	}); err != nil {
		t.Fatal(err)
	}
	// A comment delivered again under another increment keeps its first one.
	if _, err := s.WriteFresh(ctx, []api.Comment{tag(mkComment(5, "x", base), "node-a", 3)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Recover(ctx, "node-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[uint64]int64{}
	for _, inc := range got {
		counts[inc.Seq] = inc.Count
		if inc.Seq == 1 && !inc.Newest.Equal(next) {
			t.Errorf("increment 1 newest = %v, want %v", inc.Newest, next)
		}
		if inc.Seq == 2 && (inc.Instance != 3 || inc.LeaseSeq != 4 || inc.CrawlerID != 6 || inc.UserID != 9) {
			t.Errorf("increment 2 = %+v", inc)
		}
	}
	if want := map[uint64]int64{1: 2, 2: 1, 3: 0}; !reflect.DeepEqual(counts, want) {
		t.Fatalf("recovered counts %v, want %v", counts, want)
	}
	if after, err := s.Recover(ctx, "node-a", 2); err != nil || len(after) != 1 || after[0].Seq != 3 {
		t.Fatalf("Recover after 2 = %+v, %v", after, err)
	}
}
