package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/natstest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

// TestWrap_AnnouncesEachRemovalOnItsCrawlersSubject stores one post in
// two crawlers, buries it, and reads the stream: the two comments, then a
// delete message for each crawler, on its subject; a post taken back
// before its write is neither published nor announced.
func TestWrap_AnnouncesEachRemovalOnItsCrawlersSubject(t *testing.T) {
	url := testkit.Service(t, "BW_TEST_NATS")
	prefix, stream := isolated(t, url)
	c := testConn(t, url, prefix, stream)
	inner, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := Wrap(inner, c)
	ctx := context.Background()
	pub := time.Now().UTC().Add(-time.Hour)
	post := func(crawler int64, id string) api.Comment {
		return api.Comment{ID: id, CrawlerID: crawler, Source: "bluesky", Text: "t", PublishedAt: pub}
	}
	if _, err := st.(store.FreshWriter).WriteFresh(ctx, []api.Comment{post(3, "at://p/1"), post(4, "at://p/1")}); err != nil {
		t.Fatal(err)
	}
	r := st.(store.Retractor)
	tomb := func(id string) store.Tombstone {
		return store.Tombstone{Source: "bluesky", CommentID: id, Until: time.Now().Add(time.Hour)}
	}
	if _, err := r.Bury(ctx, []store.Tombstone{tomb("at://p/1"), tomb("at://p/2")}); err != nil {
		t.Fatal(err)
	}
	fresh, err := st.(store.FreshWriter).WriteFresh(ctx, []api.Comment{post(3, "at://p/2")})
	if err != nil || fresh[0] {
		t.Fatalf("a post taken back before its write: fresh %v, %v", fresh, err)
	}
	msgs := natstest.ReadStream(t, url, stream)
	if len(msgs) != 4 {
		t.Fatalf("stream holds %d messages, want 2 comments and 2 deletes", len(msgs))
	}
	seen := map[string]bool{}
	for _, m := range msgs[2:] {
		var d struct {
			Op        string `json:"op"`
			ID        string `json:"id"`
			CrawlerID int64  `json:"crawler_id"`
		}
		if err := json.Unmarshal(m.Data(), &d); err != nil {
			t.Fatal(err)
		}
		if d.Op != "delete" || d.ID != "at://p/1" {
			t.Errorf("message %s, want a delete of at://p/1", m.Data())
		}
		if subj := fmt.Sprintf("%s.%d", prefix, d.CrawlerID); m.Subject() != subj {
			t.Errorf("delete for crawler %d on %s, want %s", d.CrawlerID, m.Subject(), subj)
		}
		if id := m.Headers().Get(jetstream.MsgIDHeader); id != fmt.Sprintf("delete:%d:at://p/1", d.CrawlerID) {
			t.Errorf("Nats-Msg-Id %q", id)
		}
		seen[m.Subject()] = true
	}
	if len(seen) != 2 {
		t.Errorf("deletes on %v, want one on each crawler's subject", seen)
	}
}
