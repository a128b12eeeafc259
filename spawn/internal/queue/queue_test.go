package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/natstest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		name, url, want, err string
	}{
		{name: "nats", url: "nats://127.0.0.1:4222", want: "nats://127.0.0.1:4222"},
		{name: "tls", url: "tls://nats.example.com:4222", want: "tls://nats.example.com:4222"},
		{name: "cluster", url: "nats://a:4222, nats://b:4222", want: "nats://a:4222,nats://b:4222"},
		{name: "token hidden", url: "nats://s3cret@a:4222", want: "nats://***@a:4222"},
		{name: "password hidden", url: "nats://bw:s3cret@a:4222", want: "nats://***@a:4222"},
		{name: "empty", url: "", err: "empty URL"},
		{name: "http", url: "http://a:4222", err: `scheme "http"`},
		{name: "websocket", url: "ws://a:8080", err: "only nats:// and tls://"},
		{name: "no scheme", url: "a:4222", err: "names no server"},
		{name: "no host", url: "nats://", err: "names no server"},
		{name: "path", url: "nats://a:4222/comments", err: "only a server"},
		{name: "query", url: "nats://a:4222?stream=X", err: "only a server"},
		{name: "bad second", url: "nats://a:4222,http://bw:s3cret@b", err: `"http://***@b"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseURL(tc.url)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseURL(%q) = %q, %v; want an error with %q", tc.url, got, err, tc.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error shows the credentials: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseURL(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
			}
		})
	}
}

func TestConnect_UnreachableServerFails(t *testing.T) {
	addr := testkit.FreeAddr(t)
	start := time.Now()
	_, err := Connect(context.Background(), Options{URL: "nats://tok3n@" + addr})
	if err == nil || !strings.Contains(err.Error(), "unable to connect to nats://***@"+addr) {
		t.Fatalf("Connect to a closed port: %v", err)
	}
	if strings.Contains(err.Error(), "tok3n") {
		t.Fatalf("error shows the token: %v", err)
	}
	if took := time.Since(start); took > connectTimeout+time.Second {
		t.Fatalf("Connect took %s to fail", took)
	}
}

// recordingStore is an inner store that records its writes and can fail.
type recordingStore struct {
	mu     sync.Mutex
	fail   error
	writes [][]api.Comment
	before func() // called inside Write, before it returns
}

var _ store.Store = (*recordingStore)(nil)

func (r *recordingStore) Write(_ context.Context, cs []api.Comment) error {
	if r.before != nil {
		r.before()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.writes = append(r.writes, slices.Clone(cs))
	return nil
}

func (r *recordingStore) Recent(context.Context, int64, int) ([]api.Comment, error) { return nil, nil }
func (r *recordingStore) Close() error                                              { return nil }

func TestWrap_PublishesEveryCommentAfterTheStoreWrite(t *testing.T) {
	url := testkit.Service(t, "BW_TEST_NATS")
	prefix, stream := isolated(t, url)
	c := testConn(t, url, prefix, stream)
	if !c.JetStream() {
		t.Fatal("the test server has JetStream, the publisher did not detect it")
	}
	var inStore uint64
	inner := &recordingStore{}
	inner.before = func() { inStore = natstest.StreamMsgs(t, url, stream) }
	st := Wrap(inner, c)

	before := testutil.ToFloat64(published)
	batch := append(comments(7, "a", 300), comments(8, "b", 300)...)
	if err := st.Write(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if inStore != 0 {
		t.Fatalf("%d messages published before the store write", inStore)
	}
	if len(inner.writes) != 1 || len(inner.writes[0]) != len(batch) {
		t.Fatalf("inner store got %d writes", len(inner.writes))
	}
	if got := testutil.ToFloat64(published) - before; got != float64(len(batch)) {
		t.Fatalf("bw_spawn_queue_published_total rose by %v, want %d", got, len(batch))
	}
	msgs := natstest.ReadStream(t, url, stream)
	if len(msgs) != len(batch) {
		t.Fatalf("stream holds %d messages, want %d", len(msgs), len(batch))
	}
	for i, m := range msgs {
		var cm api.Comment
		if err := json.Unmarshal(m.Data(), &cm); err != nil {
			t.Fatal(err)
		}
		want := batch[i]
		if cm.ID != want.ID || cm.CrawlerID != want.CrawlerID || !cm.PublishedAt.Equal(want.PublishedAt) || cm.Text != want.Text {
			t.Fatalf("message %d is %+v, want %+v", i, cm, want)
		}
		if subj := fmt.Sprintf("%s.%d", prefix, want.CrawlerID); m.Subject() != subj {
			t.Fatalf("message %d on %s, want %s", i, m.Subject(), subj)
		}
		if id := m.Headers().Get(jetstream.MsgIDHeader); id != fmt.Sprintf("%d:%s", want.CrawlerID, want.ID) {
			t.Fatalf("message %d has Nats-Msg-Id %q", i, id)
		}
	}
}

func TestWrap_StoreFailurePublishesNothing(t *testing.T) {
	url := testkit.Service(t, "BW_TEST_NATS")
	prefix, stream := isolated(t, url)
	c := testConn(t, url, prefix, stream)
	down := errors.New("store is down")
	st := Wrap(&recordingStore{fail: down}, c)
	if err := st.Write(context.Background(), comments(1, "x", 10)); !errors.Is(err, down) {
		t.Fatalf("Write = %v, want the store's error", err)
	}
	// Publish an unrelated marker and read up to it: had the failed batch
	// been published, it would be in the stream before the marker.
	if err := c.Publish(context.Background(), comments(2, "marker", 1)); err != nil {
		t.Fatal(err)
	}
	if n := natstest.StreamMsgs(t, url, stream); n != 1 {
		t.Fatalf("stream holds %d messages, want only the marker", n)
	}
}

// TestWrap_QueueOutageFailsWriteAndRetryPublishesOnce stops a private
// server between batches: the write fails (so the writer retries it), and
// once the server is back the retried batch, and a re-sent batch whose
// first publish had succeeded, end up in the stream exactly once.
func TestWrap_QueueOutageFailsWriteAndRetryPublishesOnce(t *testing.T) {
	srv := natstest.Start(t, true)
	c, err := connect(context.Background(), Options{URL: srv.URL(), Name: "queue outage test"}, SubjectPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inner, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := Wrap(inner, c)
	defer st.Close()
	ctx := context.Background()
	a, b := comments(1, "a", 50), comments(2, "b", 50)
	if err := st.Write(ctx, a); err != nil {
		t.Fatal(err)
	}

	srv.Stop(syscall.SIGTERM)
	testkit.WaitFor(t, waitTimeout, "the publisher sees the server gone", func() bool { return !c.nc.IsConnected() })
	errsBefore := testutil.ToFloat64(publishErrors)
	if err := st.Write(ctx, b); err == nil {
		t.Fatal("Write succeeded with the queue down")
	}
	if testutil.ToFloat64(publishErrors) <= errsBefore {
		t.Fatal("bw_spawn_queue_publish_errors_total did not rise")
	}
	// The store took the batch although the queue did not.
	if got, err := inner.Recent(ctx, 2, 100); err != nil || len(got) != len(b) {
		t.Fatalf("store holds %d of crawler 2's comments (%v), want %d", len(got), err, len(b))
	}

	srv.Restart()
	testkit.WaitFor(t, waitTimeout, "the retried batch goes through", func() bool { return st.Write(ctx, b) == nil })
	if err := st.Write(ctx, a); err != nil { // a batch whose ack was lost
		t.Fatal(err)
	}
	if err := st.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n := natstest.StreamMsgs(t, srv.URL(), DefaultStream); n != uint64(len(a)+len(b)) {
		t.Fatalf("stream holds %d messages, want %d (each comment once)", n, len(a)+len(b))
	}
	for _, cr := range []int64{1, 2} {
		got, err := inner.Recent(ctx, cr, 100)
		if err != nil || len(got) != 50 {
			t.Fatalf("store holds %d of crawler %d's comments (%v), want 50", len(got), cr, err)
		}
	}
}

func TestConn_CoreNATSWithoutJetStream(t *testing.T) {
	srv := natstest.Start(t, false)
	c, err := Connect(context.Background(), Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.JetStream() {
		t.Fatal("JetStream detected on a server without it")
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan *nats.Msg, 100)
	sub, err := nc.ChanSubscribe(SubjectPrefix+".>", got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	batch := comments(5, "core", 40)
	if err := c.Publish(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	for i, want := range batch {
		select {
		case m := <-got:
			var cm api.Comment
			if err := json.Unmarshal(m.Data, &cm); err != nil || cm.ID != want.ID || m.Subject != Subject(5) {
				t.Fatalf("message %d: %s %+v %v, want %s on %s", i, m.Subject, cm, err, want.ID, Subject(5))
			}
		case <-time.After(waitTimeout):
			t.Fatalf("received %d of %d messages", i, len(batch))
		}
	}

	srv.Stop(syscall.SIGTERM)
	testkit.WaitFor(t, waitTimeout, "the publisher sees the server gone", func() bool { return !c.nc.IsConnected() })
	if err := c.Publish(context.Background(), batch); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Publish while disconnected = %v, want ErrNotConnected", err)
	}
}

// TestConn_RecreatesAMissingStream deletes the stream under a connected
// publisher: the next publish fails and the one after sets the stream up
// again and succeeds.
func TestConn_RecreatesAMissingStream(t *testing.T) {
	url := testkit.Service(t, "BW_TEST_NATS")
	prefix, stream := isolated(t, url)
	c := testConn(t, url, prefix, stream)
	ctx := context.Background()
	if err := c.Publish(ctx, comments(1, "first", 3)); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.js.DeleteStream(dctx, stream); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(ctx, comments(1, "lost", 3)); err == nil {
		t.Fatal("Publish succeeded with no stream")
	}
	if err := c.Publish(ctx, comments(1, "again", 3)); err != nil {
		t.Fatalf("Publish after the stream was set up again: %v", err)
	}
	if n := natstest.StreamMsgs(t, url, stream); n != 3 {
		t.Fatalf("new stream holds %d messages, want 3", n)
	}
}

func TestConnect_ExistingStream(t *testing.T) {
	url := testkit.Service(t, "BW_TEST_NATS")
	ctx := context.Background()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("max age follows the setting", func(t *testing.T) {
		prefix, stream := isolated(t, url)
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, MaxAge: time.Hour, MaxMsgs: 1000}); err != nil {
			t.Fatal(err)
		}
		c, err := connect(ctx, Options{URL: url, Stream: stream, MaxAge: 3 * time.Hour}, prefix)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		if cfg.MaxAge != 3*time.Hour || cfg.MaxMsgs != 1000 {
			t.Fatalf("stream max age %s, max msgs %d; want 3h and the operator's 1000", cfg.MaxAge, cfg.MaxMsgs)
		}
	})
	t.Run("other subjects refused", func(t *testing.T) {
		prefix, stream := isolated(t, url)
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + "_other.>"}}); err != nil {
			t.Fatal(err)
		}
		_, err := connect(ctx, Options{URL: url, Stream: stream}, prefix)
		if err == nil || !strings.Contains(err.Error(), "does not take "+prefix+".>") {
			t.Fatalf("connect = %v, want a refusal naming the subjects", err)
		}
	})
}
