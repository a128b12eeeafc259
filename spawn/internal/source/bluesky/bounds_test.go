package bluesky

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// tenYears is how far ahead the events and cursors from the future are.
const tenYears = 10 * 365 * 24 * time.Hour

// recordedAt returns the first recorded post of testdata/docs_posts.jsonl
// ("Hello World!") with its time_us set to at, and the post's URI.
func recordedAt(t *testing.T, at time.Time) (line []byte, uri string) {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(readLines(t, "docs_posts.jsonl")[0], &ev); err != nil {
		t.Fatal(err)
	}
	ev["time_us"] = at.UnixMicro()
	line, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return line, "at://did:plc:u5cwb2mwiv2bfq53cjufe6yn/app.bsky.feed.post/3k4duaz5vfs2b"
}

// notAfterNow fails the test for an item whose position is in the future.
func notAfterNow(t *testing.T, rec *spawntest.Recorder) {
	t.Helper()
	now := time.Now().UnixMicro()
	for _, it := range rec.All() {
		if it.Position > now {
			t.Errorf("post %s carries position %s, in the future", it.ID, usTime(it.Position))
		}
	}
}

func TestSource_EventFromTheFutureNeitherStopsTheStreamNorMovesTheCursor(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	src, rec := start(t, testOptions(t, js.URL()), spec(1, "hello"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	before := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "before"})
	testkit.WaitFor(t, waitTimeout, "the post before", func() bool { return rec.Has(before.URI) })

	line, futureURI := recordedAt(t, time.Now().Add(tenYears))
	if err := js.Replay([][]byte{line}); err != nil {
		t.Fatal(err)
	}
	var after []string
	for i := range 3 {
		after = append(after, js.Publish(jetstream.Post{DID: "did:plc:alice", Text: fmt.Sprint("after ", i)}).URI)
	}
	testkit.WaitFor(t, waitTimeout, "the post from the future and every post after it", func() bool {
		return rec.Has(futureURI) && rec.Has(after...)
	})
	notAfterNow(t, rec)
	if st := src.Stats(); st.Future != 1 || st.Repeats != 0 || st.Position > time.Now().UnixMicro() {
		t.Errorf("stats %+v, want one event from the future, no repeats, a position not in the future", st)
	}

	// A reconnect resumes from where the stream really stood.
	js.Cut(50 * time.Millisecond)
	testkit.WaitFor(t, waitTimeout, "the reconnect", func() bool { return len(js.Accepted()) == 2 && js.Conns() == 1 })
	if cur := js.Accepted()[1].Cursor; cur <= 0 || cur > time.Now().UnixMicro() {
		t.Errorf("the reconnect asked for cursor %s", usTime(cur))
	}
	last := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "after the reconnect"})
	testkit.WaitFor(t, waitTimeout, "the post after the reconnect", func() bool { return rec.Has(last.URI) })
	for _, uri := range append(after, futureURI, last.URI) {
		if n := rec.Count(uri); n != 1 {
			t.Errorf("post %s emitted %d times", uri, n)
		}
	}
	notAfterNow(t, rec)
}

func TestSource_CursorFromTheFutureStartsFromNowAndSaysSo(t *testing.T) {
	// Strictly increasing times: a post made after the subscriber came is
	// after "now" for it.
	js := jetstream.Start(t, jetstream.Options{StepBack: -1})
	future := time.Now().Add(tenYears).UnixMicro()
	a := spec(1, "golang")
	a.Cursor = &api.Cursor{Position: future}
	src, rec := start(t, testOptions(t, js.URL()), a)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	if cur := js.Accepted()[0].Cursor; cur > time.Now().UnixMicro() {
		t.Errorf("connected with cursor %s, in the future", usTime(cur))
	}
	p := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "golang"})
	testkit.WaitFor(t, waitTimeout, "the post", func() bool { return rec.Has(p.URI) })
	err := src.ErrFor(a)
	if !errors.Is(err, ErrFutureCursor) || !errors.Is(err, source.ErrDegraded) {
		t.Fatalf("ErrFor = %v, want a degraded ErrFutureCursor", err)
	}
	if !strings.Contains(err.Error(), usTime(future)) || !strings.Contains(err.Error(), "reading from now") {
		t.Errorf("ErrFor = %q, does not name the cursor and what is done", err)
	}
	if err := src.ErrFor(spec(2, "rust")); err != nil {
		t.Errorf("ErrFor of another query = %v", err)
	}
	notAfterNow(t, rec)
}

// The node drops what a subscriber's cursor says it has delivered: a cursor
// from the future must not make it drop everything.
func TestNode_SubscriberWithACursorFromTheFutureStoresWhatComes(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{StepBack: -1})
	k, err := New(testOptions(t, js.URL()))
	if err != nil {
		t.Fatal(err)
	}
	n, st := spawntest.StartNode(t, api.SourceBluesky, k)
	a := spec(1, "golang")
	a.Cursor = &api.Cursor{Position: time.Now().Add(tenYears).UnixMicro(), PublishedAt: time.Now().Add(-time.Hour)}
	spawntest.Subscribe(t, n, a)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	p := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "golang"})
	testkit.WaitFor(t, waitTimeout, "the post stored", func() bool { return len(st.IDs(1)) == 1 })
	if got := st.IDs(1); got[0] != p.URI {
		t.Errorf("stored %v", got)
	}
}

// bigPosts are posts over DefaultMaxMessageBytes as a user can make them.
func bigPosts() map[string]jetstream.Post {
	facets := make([]map[string]any, 10_000)
	for i := range facets {
		facets[i] = map[string]any{
			"features": []map[string]string{{"$type": "app.bsky.richtext.facet#link", "uri": "https://example.com/"}},
			"index":    map[string]int{"byteStart": 0, "byteEnd": 5},
		}
	}
	raw, _ := json.Marshal(facets)
	return map[string]jetstream.Post{
		"2 MB of text":  {DID: "did:plc:big", Text: strings.Repeat("golang ", 2<<20/7)},
		"10,000 facets": {DID: "did:plc:big", Text: "hello golang", Facets: raw},
	}
}

func TestSource_OversizedEventIsSkippedLiveAndInAReplay(t *testing.T) {
	for name, big := range bigPosts() {
		t.Run(name, func(t *testing.T) {
			js := jetstream.Start(t, jetstream.Options{})
			// Posts made before the source starts: a replay from a
			// cursor reads the oversized one in the middle.
			first := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "first"})
			js.Publish(big)
			replayed := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "after the big one"})
			a := spec(1, "golang")
			a.Cursor = &api.Cursor{Position: first.TimeUS - 1}
			src, rec := start(t, testOptions(t, js.URL()), a)
			testkit.WaitFor(t, waitTimeout, "the posts around the oversized one", func() bool { return rec.Has(first.URI, replayed.URI) })

			js.Publish(big)
			live := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "live after the big one"})
			testkit.WaitFor(t, waitTimeout, "the live post after the oversized one", func() bool { return rec.Has(live.URI) })
			if st := src.Stats(); st.TooLarge != 2 || st.Connects != 1 {
				t.Errorf("stats %+v, want two events too large on one connection", st)
			}
			if err := src.Err(); err != nil {
				t.Errorf("Err = %v after good posts", err)
			}
		})
	}
}

func TestSource_EventOverTheSkipLimitDoesNotPinTheCursor(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	first := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "first"})
	huge := js.Publish(bigPosts()["2 MB of text"])
	after := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "after the huge one"})
	opts := testOptions(t, js.URL())
	opts.MaxSkipBytes = 3 << 19 // 1.5 MiB: the 2 MB event ends the connection
	a := spec(1, "golang")
	a.Cursor = &api.Cursor{Position: first.TimeUS - 1}
	src, rec := start(t, opts, a)
	testkit.WaitFor(t, waitTimeout, "the post after the huge one", func() bool { return rec.Has(first.URI, after.URI) })
	acc := js.Accepted()
	if len(acc) != 2 || acc[1].Cursor <= huge.TimeUS {
		t.Errorf("connections %+v, want a second one after the huge event at %d", acc, huge.TimeUS)
	}
	if st := src.Stats(); st.TooLarge != 1 {
		t.Errorf("stats %+v, want the huge event counted once", st)
	}
}

// acceptThenClose is a WebSocket server that accepts every connection and
// closes it at once, and counts them.
func acceptThenClose(t *testing.T) (url string, conns func() []time.Time) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		_ = c.Close(websocket.StatusNormalClosure, "")
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/subscribe", func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), at...)
	}
}

func TestSource_ConnectionClosedBeforeAnyEventBacksOff(t *testing.T) {
	url, conns := acceptThenClose(t)
	opts := testOptions(t, url)
	opts.BackoffMin, opts.BackoffMax = 20*time.Millisecond, time.Minute
	src, _ := start(t, opts, spec(1, "golang"))
	const n = 8
	testkit.WaitFor(t, waitTimeout, "connections", func() bool { return len(conns()) >= n })
	at := conns()
	// Each wait is at least half of 20 ms doubled per failure in a row.
	floor := time.Duration(0)
	for i := range n - 1 {
		floor += opts.BackoffMin << i / 2
	}
	if took := at[n-1].Sub(at[0]); took < floor {
		t.Errorf("%d connections in %v, want at least %v of back-off between them", n, took, floor)
	}
	if !src.errs.Saw(ErrConnectionLost) {
		t.Errorf("Err never said the connection was lost (now %v)", src.Err())
	}
}

// With compressed events, an event too large even to read past is known by
// the time_us at the start of its decompressed message: the next connection
// starts after it.
func TestSource_CompressedEventOverTheSkipLimitDoesNotPinTheCursor(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	first := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "first"})
	// Text zstd cannot shrink below 1 MiB: random letters.
	r := rand.New(rand.NewPCG(7, 8))
	noise := make([]byte, 2<<20)
	for i := range noise {
		noise[i] = byte('a' + r.IntN(26))
	}
	huge := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: string(noise)})
	after := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "after the huge one"})
	opts := testOptions(t, js.URL())
	opts.Compress = true
	opts.MaxSkipBytes = 1<<20 + 1<<18 // 1.25 MiB: the compressed event is larger
	a := spec(1, "golang")
	a.Cursor = &api.Cursor{Position: first.TimeUS - 1}
	src, rec := start(t, opts, a)
	testkit.WaitFor(t, waitTimeout, "the post after the huge one", func() bool { return rec.Has(first.URI, after.URI) })
	acc := js.Accepted()
	if len(acc) != 2 || !acc[1].Compress || acc[1].Cursor <= huge.TimeUS {
		t.Errorf("connections %+v, want a second one after the huge event at %d", acc, huge.TimeUS)
	}
	if st := src.Stats(); st.TooLarge != 1 {
		t.Errorf("stats %+v, want the huge event counted once", st)
	}
}
