package rss

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// Workload of BenchmarkPoll.
const (
	benchHosts     = 8  // listeners of the feed server, each its own host:port
	benchFeeds     = 64 // feeds, spread over the hosts
	benchItems     = 20 // items per feed
	benchPollers   = 4  // concurrent pollers per CPU
	benchFeedNames = "bench"
)

// BenchmarkPoll measures how many feed polls per second one spawn's rss
// source makes against a local feed server: 64 feeds of 20 items spread
// over 8 hosts, polled concurrently through the source's own fetch path
// (host limiter, guarded client, size cap, parse, de-duplication). "full"
// is a publisher without conditional GET, answering each poll with the
// whole document; "304" a publisher that answers "not modified" to the
// source's If-None-Match. Per-host politeness still allows one request at
// a time per host; the minimum delay between requests to a host is set to
// none here, as it would otherwise measure the delay:
//
//	go test -run '^$' -bench Poll ./spawn/internal/source/rss/
func BenchmarkPoll(b *testing.B) {
	for _, c := range []struct {
		name string
		full bool
	}{{"full", true}, {"304", false}} {
		b.Run(c.name, func(b *testing.B) {
			feeds := benchFeedsOn(b, c.full)
			pool := make(chan *feed, len(feeds))
			for _, f := range feeds {
				pool <- f
			}
			emit := func(context.Context, []source.Item) error { return nil }
			b.SetParallelism(benchPollers)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					f := <-pool // each poll owns its feed
					_, err := f.poll(ctx, emit)
					pool <- f
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "polls/s")
		})
	}
}

// benchFeedsOn starts a feed server on benchHosts listeners and returns its
// feeds' pollers, each polled once already so that validators and seen
// items are in place.
func benchFeedsOn(b *testing.B, full bool) []*feed {
	b.Helper()
	srv := feedserver.New(feedserver.Options{IgnoreConditional: full})
	var bases []string
	for range benchHosts {
		bases = append(bases, fakehttp.Serve(b, srv.Handler(), nil))
	}
	opts := testOptions()
	opts.HostDelay = -1
	opts.FetchTimeout = waitDeadline
	k := New(opts)
	feeds := make([]*feed, benchFeeds)
	for i := range feeds {
		name := fmt.Sprintf("%s%d", benchFeedNames, i)
		for j := range benchItems {
			srv.Publish(name, feedserver.GenerateItem(i*benchItems+j))
		}
		keys, err := k.Keys(spawntest.Sub(b, api.SubscriberSpec{Query: []string{bases[i%len(bases)] + "/feeds/" + name + ".xml"}}))
		if err != nil {
			b.Fatal(err)
		}
		ds, err := k.New(keys[0])
		if err != nil {
			b.Fatal(err)
		}
		feeds[i] = ds.(*feed)
		if _, err := feeds[i].poll(context.Background(), func(context.Context, []source.Item) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	return feeds
}

// BenchmarkDecodeDocument measures reading a recorded feed as UTF-8: a
// UTF-8 feed that says so (returned as it is, the common case on every
// poll), a legacy one decoded from its declaration, and UTF-8 bytes under a
// declaration that lies (the declaration rewritten):
//
//	go test -run '^$' -bench DecodeDocument ./spawn/internal/source/rss/
func BenchmarkDecodeDocument(b *testing.B) {
	for _, c := range []struct{ name, file, contentType string }{
		{"utf-8", "miniflux-large_rss.xml", "application/rss+xml; charset=utf-8"},
		{"iso-8859-1", "miniflux-encoding_ISO-8859-1.xml", "application/rss+xml"},
		{"header-only", "miniflux-no_encoding_ISO-8859-1.xml", "text/xml; charset=ISO-8859-1"},
		{"lying-prolog", "miniflux-urdu_UTF8.xml", "application/rss+xml"},
	} {
		body, err := os.ReadFile(filepath.Join(corpusDir, c.file))
		if err != nil {
			b.Fatal(err)
		}
		if c.name == "lying-prolog" {
			body = bytes.Replace(body, []byte(`encoding="UTF-8"`), []byte(`encoding="ISO-8859-1"`), 1)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				decodeDocument(body, c.contentType)
			}
		})
	}
}
