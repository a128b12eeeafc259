package cassandra

import (
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

func TestAmend_ChangesStoredCommentsAndNeverMakesOne(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	pub := time.Date(2026, 7, 4, 14, 38, 6, 240e6, time.UTC)
	root := mkComment(1, "at://did:plc:a/app.bsky.feed.post/root", pub)
	root.Author, root.AuthorID = "did:plc:a", "did:plc:a"
	reply := mkComment(1, "at://did:plc:b/app.bsky.feed.post/reply", pub.Add(time.Second))
	reply.Author, reply.AuthorID, reply.ReplyTo, reply.ThreadID = "did:plc:b", "did:plc:b", root.ID, root.ID
	if err := s.Write(ctx, []api.Comment{root, reply}); err != nil {
		t.Fatal(err)
	}
	err := s.Amend(ctx, []store.Amendment{
		{CrawlerID: 1, CommentID: root.ID, PublishedAt: root.PublishedAt, Author: "alice.test"},
		{CrawlerID: 1, CommentID: reply.ID, PublishedAt: reply.PublishedAt, ThreadID: root.ID, Author: "bob.test"},
		{CrawlerID: 1, CommentID: "at://did:plc:z/app.bsky.feed.post/gone", PublishedAt: pub, Author: "zed.test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	recent, err := s.Recent(ctx, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{root.ID: "alice.test", reply.ID: "bob.test"}
	if len(recent) != 2 {
		t.Fatalf("%d comments after the amendment, want 2 (an amendment made a row?)", len(recent))
	}
	for _, c := range recent {
		if c.Author != want[c.ID] || c.AuthorID == "" || c.Text != root.Text && c.Text != reply.Text {
			t.Errorf("recent %s by %q (%q), want %q", c.ID, c.Author, c.AuthorID, want[c.ID])
		}
	}
	_, thread, err := s.Thread(ctx, 1, reply.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(thread) != 2 {
		t.Fatalf("thread %v", thread)
	}
	for _, c := range thread {
		if c.Author != want[c.ID] {
			t.Errorf("thread %s by %q, want %q", c.ID, c.Author, want[c.ID])
		}
	}
	if n := countRows(t, s.cfg.Keyspace, 1, utcDay(pub)); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}
