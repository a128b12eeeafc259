package cassandra

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/storetest"
)

// TestSearch_ReadsOnlyWhatTheIndexFinds: a search whose query the index
// can narrow reads the rows the index finds, and the scan every row; both
// answer the same, and days whose rows carry no search terms (written by
// an earlier release) are read whole.
func TestSearch_ReadsOnlyWhatTheIndexFinds(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	base := time.Date(2025, 4, 2, 0, 0, 0, 0, time.UTC)
	var cs []api.Comment
	for i := range 200 {
		c := mkComment(3, "c"+strconv.Itoa(i), base.Add(time.Duration(i)*10*time.Minute))
		if i == 150 {
			c.Text = "a needle and a thimble"
		}
		cs = append(cs, c)
	}
	if err := s.Write(ctx, cs); err != nil {
		t.Fatal(err)
	}
	parsed, err := query.Parse("thimble")
	if err != nil {
		t.Fatal(err)
	}
	match := func(c *api.Comment) bool {
		_, ok := parsed.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang})
		return ok
	}
	for _, tc := range []struct {
		name     string
		q        store.Search
		textFrom time.Time
		scanned  int
	}{
		{"index", store.Search{Match: match, Query: parsed, Limit: 20}, time.Time{}, 1},
		{"scan", store.Search{Match: match, Limit: 20}, time.Time{}, 200},
		{"days without terms", store.Search{Match: match, Query: parsed, Limit: 20}, base.AddDate(0, 0, 30), 200},
		{"the first of them", store.Search{Match: match, Query: parsed, Limit: 20}, base.AddDate(0, 0, 1), 1 + 144}, // the second day through the index, the first read whole
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.textFrom = tc.textFrom
			p, err := s.Search(ctx, 3, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(p.Comments); !slices.Equal(got, []string{"c150"}) || p.Next != "" || p.Scanned != tc.scanned {
				t.Fatalf("page %v, next %q, %d read; want [c150], no next page, %d read", got, p.Next, p.Scanned, tc.scanned)
			}
		})
	}
}

// olderRelease writes, as the release before the comment row's own
// indexes did, a keyspace with its index tables and three comments of one
// author (stored by two crawlers, one of them a reply) into ks.
func olderRelease(t *testing.T, ks string, pub time.Time) {
	t.Helper()
	a := admin(t)
	day := utcDay(pub)
	for _, stmt := range []string{
		`CREATE KEYSPACE ` + ks + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE ` + ks + `.comments (crawler_id bigint, day date, published_at timestamp, comment_id text,
			source text, author text, text text, url text, fetched_at timestamp, matched frozen<list<text>>,
			node_id text, inc_seq bigint, thread_id text, lang text, reply_to text, reposts bigint, likes bigint,
			author_id text, links frozen<list<text>>, repost_of text, edited_at timestamp,
			PRIMARY KEY ((crawler_id, day), published_at, comment_id)) WITH CLUSTERING ORDER BY (published_at DESC, comment_id ASC)`,
		`CREATE TABLE ` + ks + `.crawler_days (crawler_id bigint, day date, PRIMARY KEY (crawler_id, day)) WITH CLUSTERING ORDER BY (day DESC)`,
		`CREATE TABLE ` + ks + `.comments_by_item (source text, comment_id text, crawler_id bigint, day date, published_at timestamp,
			thread_id text, author_id text, author text, PRIMARY KEY ((source, comment_id), crawler_id))`,
		`CREATE TABLE ` + ks + `.comments_by_author (source text, author text, crawler_id bigint, published_at timestamp, comment_id text,
			day date, thread_id text, author_id text, author_name text, PRIMARY KEY ((source, author), crawler_id, published_at, comment_id))`,
		`CREATE TABLE ` + ks + `.comments_by_thread (crawler_id bigint, thread_id text, published_at timestamp, comment_id text,
			source text, author text, text text, url text, fetched_at timestamp, matched frozen<list<text>>, lang text, reply_to text,
			PRIMARY KEY ((crawler_id, thread_id), published_at, comment_id)) WITH CLUSTERING ORDER BY (published_at ASC, comment_id ASC)`,
		`CREATE TABLE ` + ks + `.thread_of_comment (crawler_id bigint, comment_id text, thread_id text, PRIMARY KEY ((crawler_id, comment_id)))`,
	} {
		if err := a.Query(stmt).Exec(); err != nil {
			t.Fatalf("older schema: %v", err)
		}
	}
	type row struct {
		crawler    int64
		id, thread string
		at         time.Time
	}
	for _, r := range []row{{1, "at://x/1", "", pub}, {2, "at://x/1", "", pub}, {1, "at://x/2", "at://x/1", pub.Add(time.Minute)}} {
		for _, stmt := range []struct {
			cql  string
			args []any
		}{
			{`INSERT INTO ` + ks + `.comments (crawler_id, day, published_at, comment_id, source, author, author_id, text, thread_id, fetched_at)
				VALUES (?, ?, ?, ?, 'bluesky', 'Xavier.test', 'did:plc:x', 'golang of old', ?, ?)`, []any{r.crawler, day, r.at, r.id, r.thread, pub}},
			{`INSERT INTO ` + ks + `.crawler_days (crawler_id, day) VALUES (?, ?)`, []any{r.crawler, day}},
			{`INSERT INTO ` + ks + `.comments_by_item (source, comment_id, crawler_id, day, published_at, thread_id, author_id, author)
				VALUES ('bluesky', ?, ?, ?, ?, ?, 'did:plc:x', 'Xavier.test')`, []any{r.id, r.crawler, day, r.at, r.thread}},
			{`INSERT INTO ` + ks + `.comments_by_author (source, author, crawler_id, published_at, comment_id, day, thread_id, author_id, author_name)
				VALUES ('bluesky', 'did:plc:x', ?, ?, ?, ?, ?, 'did:plc:x', 'Xavier.test')`, []any{r.crawler, r.at, r.id, day, r.thread}},
			{`INSERT INTO ` + ks + `.comments_by_author (source, author, crawler_id, published_at, comment_id, day, thread_id, author_id, author_name)
				VALUES ('bluesky', 'xavier.test', ?, ?, ?, ?, ?, 'did:plc:x', 'Xavier.test')`, []any{r.crawler, r.at, r.id, day, r.thread}},
		} {
			if err := a.Query(stmt.cql, stmt.args...).Exec(); err != nil {
				t.Fatalf("older rows: %v", err)
			}
		}
	}
}

// TestOlderKeyspace_KeepsWorking opens a keyspace the release before the
// comment row's own indexes wrote: its comments are searched (their days
// read whole), their threads read, a delete by id finds every crawler's
// copy, and a forget by handle finds the author's comments through the
// older author index, deleting its rows too.
func TestOlderKeyspace_KeepsWorking(t *testing.T) {
	addr := testAddr(t)
	ks := newKeyspace(t)
	pub := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Millisecond)
	olderRelease(t, ks, pub)
	ctx := ctxT(t)
	s, err := Open(ctx, "cassandra://"+addr+"/"+ks, testLogger(t))
	if err != nil {
		t.Fatalf("open a keyspace of an earlier release: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if want := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1); !s.textFrom.Equal(want) {
		t.Errorf("search terms from %s, want %s (the day after the upgrade)", s.textFrom, want)
	}
	testkit.WaitFor(t, time.Minute, "the indexes to be built over the older rows", func() bool {
		ok, err := s.indexesReady(ctx)
		return err == nil && ok
	})
	parsed, _ := query.Parse("golang")
	got, _ := storetest.SearchAll(t, s, 1, store.Search{Query: parsed, Match: func(c *api.Comment) bool { return true }, Limit: 10})
	if !slices.Equal(ids(got), []string{"at://x/2", "at://x/1"}) {
		t.Errorf("search of the older rows: %v", ids(got))
	}
	tid, thread, err := s.Thread(ctx, 1, "at://x/2")
	if err != nil || tid != "at://x/1" || !slices.Equal(ids(thread), []string{"at://x/1", "at://x/2"}) {
		t.Errorf("thread of an older reply: %s %v %v", tid, ids(thread), err)
	}
	gone, err := s.Bury(ctx, []store.Tombstone{{Source: "bluesky", CommentID: "at://x/1", Until: time.Now().Add(time.Hour)}})
	if err != nil || len(gone) != 2 {
		t.Fatalf("delete by id removed %v, %v; want both crawlers' copies", gone, err)
	}
	gone, err = s.Bury(ctx, []store.Tombstone{{Source: "bluesky", Author: "XAVIER.test", Before: time.Now(), Until: time.Now().Add(time.Hour), Exact: true}})
	if err != nil || len(gone) != 1 || gone[0].CommentID != "at://x/2" {
		t.Fatalf("forget by handle removed %v, %v; want at://x/2", gone, err)
	}
	for _, table := range []string{"comments", "comments_by_item", "comments_by_author"} {
		var n int
		if err := admin(t).Query(`SELECT COUNT(*) FROM ` + ks + `.` + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s holds %d rows (%v) after the removals", table, n, err)
		}
	}
}

// TestEditAndAmend_KeepTheRowsRetention: an edited or amended comment
// still expires with its retention; the cells the edit wrote keep the
// row's TTL rather than outlive it.
func TestEditAndAmend_KeepTheRowsRetention(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	edited := mkComment(4, "edited", time.Now().Add(-time.Hour))
	edited.Source = "bluesky"
	edited.Retention = time.Hour + 3*time.Second
	amended := mkComment(4, "amended", time.Now().Add(-time.Hour))
	amended.Retention = edited.Retention
	if err := s.Write(ctx, []api.Comment{edited, amended}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Edit(ctx, []store.Edit{{Source: "bluesky", CommentID: "edited", Text: "new words", EditedAt: time.Now()}}); err != nil || n != 1 {
		t.Fatalf("edit: %d, %v", n, err)
	}
	if err := s.Amend(ctx, []store.Amendment{{CrawlerID: 4, CommentID: "amended", PublishedAt: amended.PublishedAt, Author: "new.name"}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Recent(ctx, 4, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("after the edit: %v, %v", ids(got), err)
	}
	testkit.WaitFor(t, 30*time.Second, "the edited and amended comments to expire", func() bool {
		got, err := s.Recent(ctx, 4, 10)
		return err == nil && len(got) == 0
	})
}
