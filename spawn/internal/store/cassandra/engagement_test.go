package cassandra

import (
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// olderSchema creates ks with the comment tables as they were before
// comments carried their engagement, as a keyspace of an earlier release.
func olderSchema(t *testing.T, ks string) {
	t.Helper()
	a := admin(t)
	for _, stmt := range []string{
		`CREATE KEYSPACE ` + ks + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE ` + ks + `.comments (crawler_id bigint, day date, published_at timestamp, comment_id text,
			source text, author text, text text, url text, fetched_at timestamp, matched frozen<list<text>>,
			node_id text, inc_seq bigint, lang text, reply_to text, thread_id text,
			PRIMARY KEY ((crawler_id, day), published_at, comment_id)) WITH CLUSTERING ORDER BY (published_at DESC, comment_id ASC)`,
		`CREATE TABLE ` + ks + `.comments_by_thread (crawler_id bigint, thread_id text, published_at timestamp, comment_id text,
			source text, author text, text text, url text, fetched_at timestamp, matched frozen<list<text>>, lang text, reply_to text,
			PRIMARY KEY ((crawler_id, thread_id), published_at, comment_id)) WITH CLUSTERING ORDER BY (published_at ASC, comment_id ASC)`,
	} {
		if err := a.Query(stmt).Exec(); err != nil {
			t.Fatalf("older schema: %v", err)
		}
	}
}

// TestEngagementRoundTrip opens a keyspace of an earlier release (the
// store adds the reposts and likes columns), writes comments with counts,
// with zero counts and without counts, and reads each back the same
// through Recent, Export and Thread: unknown stays unknown, zero stays
// zero.
func TestEngagementRoundTrip(t *testing.T) {
	addr := testAddr(t)
	for _, mode := range []struct {
		name string
		mode writeMode
	}{{"batches", writeBatches}, {"singles", writeSingles}} {
		t.Run(mode.name, func(t *testing.T) {
			ks := newKeyspace(t)
			olderSchema(t, ks)
			ctx := ctxT(t)
			s, err := Open(ctx, "cassandra://"+addr+"/"+ks, testLogger(t))
			if err != nil {
				t.Fatalf("open a keyspace of an earlier release: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			s.mode = mode.mode
			pub := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			shared := mkComment(5, "shared", pub)
			shared.Engagement = &api.Engagement{Reposts: 12, Likes: 85}
			fresh := mkComment(5, "fresh", pub.Add(time.Second))
			fresh.Engagement = &api.Engagement{}
			fresh.ReplyTo, fresh.ThreadID = "shared", "shared"
			unknown := mkComment(5, "unknown", pub.Add(2*time.Second))
			unknown.ReplyTo, unknown.ThreadID = "shared", "shared"
			want := map[string]*api.Engagement{"shared": shared.Engagement, "fresh": fresh.Engagement, "unknown": nil}
			if err := s.Write(ctx, []api.Comment{shared, fresh, unknown}); err != nil {
				t.Fatal(err)
			}
			check := func(how string, got []api.Comment) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%s: %d comments, want %d", how, len(got), len(want))
				}
				for _, c := range got {
					w := want[c.ID]
					if (c.Engagement == nil) != (w == nil) || w != nil && *c.Engagement != *w {
						t.Errorf("%s: %s engagement %+v, want %+v", how, c.ID, c.Engagement, w)
					}
				}
			}
			recent, err := s.Recent(ctx, 5, 10)
			if err != nil {
				t.Fatal(err)
			}
			check("recent", recent)
			page, err := s.Export(ctx, 5, store.Range{}, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			check("export", page.Comments)
			_, thread, err := s.Thread(ctx, 5, "unknown")
			if err != nil {
				t.Fatal(err)
			}
			check("thread", thread)
		})
	}
}
