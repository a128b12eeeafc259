package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// waitTimeout bounds any condition a test waits for.
const waitTimeout = 20 * time.Second

// isolated returns a subject prefix and stream name no other test uses, so
// tests share one server without seeing each other's messages, and deletes
// the stream at the end.
func isolated(t testing.TB, url string) (prefix, stream string) {
	t.Helper()
	id := strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	prefix, stream = "bwtest_"+id, "BWTEST_"+id
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			return
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
	})
	return prefix, stream
}

// testConn connects a publisher with an isolated prefix and stream.
func testConn(t testing.TB, url, prefix, stream string) *Conn {
	t.Helper()
	c, err := connect(context.Background(), Options{URL: url, Name: "queue test", Stream: stream}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// comments makes n comments of a crawler with ids tag-0…tag-(n-1).
func comments(crawlerID int64, tag string, n int) []api.Comment {
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	out := make([]api.Comment, n)
	for i := range out {
		out[i] = api.Comment{
			ID: fmt.Sprintf("%s-%d", tag, i), CrawlerID: crawlerID, Source: api.SourceRSS,
			Text: strings.Repeat("comment text ", 20), URL: fmt.Sprintf("https://example.com/%s/%d", tag, i),
			PublishedAt: at.Add(time.Duration(i) * time.Second), FetchedAt: at.Add(time.Hour),
		}
	}
	return out
}
