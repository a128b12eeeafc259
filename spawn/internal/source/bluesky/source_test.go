package bluesky

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// waitTimeout bounds every condition a test waits for.
const waitTimeout = spawntest.WaitTimeout

// testOptions are short timers for a source of the fake Jetstream at url,
// asking a local AppView for handles.
func testOptions(t *testing.T, url string) Options {
	opts, _ := testOptionsWithAppView(t, url)
	return opts
}

// testOptionsWithAppView is testOptions returning the local AppView too.
func testOptionsWithAppView(t *testing.T, url string) (Options, *appview.Server) {
	av := appview.Start(t)
	return Options{
		JetstreamURL: url,
		AppViewURL:   av.URL(),
		BackoffMin:   20 * time.Millisecond,
		BackoffMax:   200 * time.Millisecond,
		StallTimeout: 5 * time.Second,
		LookupLinger: 20 * time.Millisecond,
		Logger:       testkit.Logger(t, "bluesky"),
	}, av
}

func spec(id int64, terms ...string) api.SubscriberSpec {
	return spawntest.Spec(api.SourceBluesky, id, nil, terms...)
}

// start runs the source of a fake until the test ends.
func start(t *testing.T, opts Options, specs ...api.SubscriberSpec) (*Source, *spawntest.Recorder) {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ds, rec := spawntest.Start(t, k, Key, specs...)
	return ds.(*Source), rec
}

// untagged counts the items for every query that carry uri.
func untagged(rec *spawntest.Recorder, uri string) (all, tagged int) {
	for _, it := range rec.All() {
		if it.ID != uri {
			continue
		}
		if it.QueryUUID == "" {
			all++
		} else {
			tagged++
		}
	}
	return all, tagged
}

func TestKind_Validates(t *testing.T) {
	cases := []struct {
		name string
		url  string
		ok   bool
	}{
		{"default", "", true},
		{"wss", "wss://jetstream1.us-west.bsky.network/subscribe", true},
		{"ws", "ws://127.0.0.1:6008/subscribe", true},
		{"https", "https://jetstream.example/subscribe", false},
		{"with a query", "wss://jetstream.example/subscribe?wantedCollections=x", false},
		{"not a URL", "::", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := New(Options{JetstreamURL: tc.url})
			if (err == nil) != tc.ok {
				t.Fatalf("New(%q): %v", tc.url, err)
			}
			if k != nil && tc.url == "" && k.opts.JetstreamURL != DefaultJetstreamURL {
				t.Errorf("default URL %q", k.opts.JetstreamURL)
			}
		})
	}
	k, _ := New(Options{})
	if _, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{Query: []string{"golang"}})); err == nil {
		t.Error("a subscriber without query uuid was accepted")
	}
	if _, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{Query: []string{`"unclosed`}, QueryUUID: "u"})); err == nil {
		t.Error("an invalid query was accepted")
	}
	if _, err := k.New("rss"); err == nil {
		t.Error("a foreign key was accepted")
	}
}

func TestSource_OneConnectionCarriesEverySubscriber(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	specs := []api.SubscriberSpec{spec(1, "golang"), spec(2, "rust OR zig"), spec(3, "#bsky lang:en")}
	src, rec := start(t, testOptions(t, js.URL()), specs...)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })

	js.PublishIdentity("did:plc:alice", "Alice.Test")
	p := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "golang and zig", Langs: []string{"EN"}})
	q := js.Publish(jetstream.Post{DID: "did:plc:bob", Text: "no handle", ReplyParent: p.URI, ReplyRoot: p.URI})
	js.Publish(jetstream.Post{DID: "did:plc:bob", Collection: "app.bsky.feed.like"})
	del := js.Publish(jetstream.Post{DID: "did:plc:bob", Operation: "delete", RKey: "3kabc"})
	testkit.WaitFor(t, waitTimeout, "both posts and the deletion", func() bool {
		return rec.Has(p.URI, q.URI) && src.Stats().Position == del.TimeUS
	})

	got, _ := rec.ByID(p.URI)
	if got.Author != "alice.test" || got.AuthorID != "did:plc:alice" || got.URL != "https://bsky.app/profile/did:plc:alice/post/"+p.URI[strings.LastIndex(p.URI, "/")+1:] ||
		got.Text != "golang and zig" || got.Lang != "en" || got.Position != p.TimeUS || got.QueryUUID != "" {
		t.Errorf("post %+v", got)
	}
	if got, _ := rec.ByID(q.URI); got.Author != "did:plc:bob" || got.AuthorID != "did:plc:bob" || got.ReplyTo != p.URI || got.ThreadID != p.URI {
		t.Errorf("reply %+v", got)
	}
	if n := len(rec.All()); n != 2 {
		t.Errorf("%d items, want the 2 posts only", n)
	}
	acc := js.Accepted()
	if len(acc) != 1 || !slices.Equal(acc[0].Collections, []string{PostCollection}) || acc[0].Cursor != 0 {
		t.Errorf("connections %+v, want one for posts from the live stream", acc)
	}
	if st := src.Stats(); st.Items != 2 || st.Connects != 1 || st.Lag <= 0 {
		t.Errorf("stats %+v", st)
	}
	if err := src.Err(); err != nil {
		t.Errorf("Err %v", err)
	}
}

func TestSource_CutResumesWithoutGapsOrRepeats(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	src, rec := start(t, testOptions(t, js.URL()), spec(1, "golang"), spec(2, "rust"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })

	// Posts keep coming while the service is away.
	var (
		mu        sync.Mutex
		published []string
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			p := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: fmt.Sprint("post ", i)})
			mu.Lock()
			published = append(published, p.URI)
			mu.Unlock()
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(published) }
	testkit.WaitFor(t, waitTimeout, "posts before the cut", func() bool { return count() >= 20 && len(rec.All()) >= 10 })
	js.Cut(2 * time.Second)
	testkit.WaitFor(t, waitTimeout, "the refusal to show, the answer's status its reason", func() bool {
		err := src.Err()
		return errors.Is(err, ErrStatus) && errors.Is(err, source.ErrDegraded) && source.Unreachable(err) == "HTTP 503 Service Unavailable"
	})
	testkit.WaitFor(t, waitTimeout, "the reconnect", func() bool { return len(js.Accepted()) >= 2 })
	n := count()
	testkit.WaitFor(t, waitTimeout, "posts after the reconnect", func() bool { return count() >= n+20 })
	close(stop)
	<-done

	mu.Lock()
	want := slices.Clone(published)
	mu.Unlock()
	testkit.WaitFor(t, waitTimeout, "every post", func() bool { return rec.Has(want...) })
	for _, uri := range want {
		if all, tagged := untagged(rec, uri); all != 1 || tagged != 0 {
			t.Fatalf("post %s emitted %d times for all and %d tagged, want once for all", uri, all, tagged)
		}
	}
	acc := js.Accepted()
	if acc[1].Cursor <= 0 {
		t.Errorf("the reconnect asked for cursor %d, want the last position read minus the overlap", acc[1].Cursor)
	}
	if err := src.Err(); err != nil {
		t.Errorf("Err after the reconnect: %v", err)
	}
	if st := src.Stats(); st.Reconnects < 1 || st.Repeats < 1 || st.Items != int64(len(want)) {
		t.Errorf("stats %+v for %d posts", st, len(want))
	}
}

func TestSource_LateSubscriberWithOlderCursorIsReplayedAlone(t *testing.T) {
	// Strictly increasing times: the cursor falls between known posts.
	js := jetstream.Start(t, jetstream.Options{StepBack: -1})
	a, b := spec(1, "golang"), spec(2, "rust")
	src, rec := start(t, testOptions(t, js.URL()), a)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	var posts []jetstream.Published
	for i := range 5 {
		posts = append(posts, js.Publish(jetstream.Post{DID: "did:plc:alice", Text: fmt.Sprint("post ", i)}))
	}
	testkit.WaitFor(t, waitTimeout, "the first posts", func() bool { return len(rec.All()) == 5 })

	// b comes from another node, where it delivered up to the second post.
	b.Cursor = &api.Cursor{Position: posts[1].TimeUS}
	src.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{a, b}...))
	testkit.WaitFor(t, waitTimeout, "the rewind", func() bool { return len(js.Accepted()) == 2 })
	if got := js.Accepted()[1].Cursor; got > posts[1].TimeUS || got < posts[1].TimeUS-DefaultResumeOverlap.Microseconds() {
		t.Errorf("rewound to %d, want the cursor %d minus the overlap", got, posts[1].TimeUS)
	}
	posts = append(posts, js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "after"}))
	testkit.WaitFor(t, waitTimeout, "the replay and the new post", func() bool { return len(rec.All()) == 9 })

	for i, p := range posts {
		all, tagged := untagged(rec, p.URI)
		switch {
		case i < 2: // b had them
			if all != 1 || tagged != 0 {
				t.Errorf("post %d: %d for all, %d tagged", i, all, tagged)
			}
		case i < 5: // a had them; b gets them alone
			it := rec.All()[slices.IndexFunc(rec.All()[5:], func(it source.Item) bool { return it.ID == p.URI })+5]
			if all != 1 || tagged != 1 || it.QueryUUID != b.QueryUUID {
				t.Errorf("post %d: %d for all, %d tagged (%q)", i, all, tagged, it.QueryUUID)
			}
		default: // new to both
			if all != 1 || tagged != 0 {
				t.Errorf("new post: %d for all, %d tagged", all, tagged)
			}
		}
	}
	if st := src.Stats(); st.Rewinds != 1 {
		t.Errorf("%d rewinds", st.Rewinds)
	}
	if err := src.ErrFor(b); err != nil {
		t.Errorf("ErrFor(b) = %v", err)
	}
}

func TestSource_CursorOlderThanTheReplayWindowIsReported(t *testing.T) {
	const window = 300 * time.Millisecond
	js := jetstream.Start(t, jetstream.Options{ReplayWindow: window})
	old := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "forgotten"})
	testkit.WaitFor(t, waitTimeout, "the post to leave the window", func() bool { return js.Oldest() == 0 })
	kept := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "kept"})

	a, b := spec(1, "golang"), spec(2, "rust")
	b.Cursor = &api.Cursor{Position: old.TimeUS}
	opts := testOptions(t, js.URL())
	opts.ReplayWindow = window
	opts.GapSlack = 50 * time.Millisecond
	src, rec := start(t, opts, a, b)
	testkit.WaitFor(t, waitTimeout, "the post kept", func() bool { return rec.Has(kept.URI) })

	err := src.ErrFor(b)
	if !errors.Is(err, ErrSkipped) || !errors.Is(err, source.ErrDegraded) {
		t.Fatalf("ErrFor(b) = %v, want a degraded ErrSkipped", err)
	}
	for _, part := range []string{"older than the service's replay window", time.UnixMicro(old.TimeUS).UTC().Format(time.RFC3339Nano), time.UnixMicro(kept.TimeUS).UTC().Format(time.RFC3339Nano)} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("ErrFor(b) = %q, does not say %q", err, part)
		}
	}
	if err := src.ErrFor(a); err != nil {
		t.Errorf("ErrFor(a) = %v, want nil: a brought no cursor", err)
	}
	if rec.Has(old.URI) {
		t.Error("the forgotten post was emitted")
	}
	if st := src.Stats(); st.Gaps != 1 {
		t.Errorf("%d gaps", st.Gaps)
	}
	src.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{a}...))
	if err := src.Err(); err != nil {
		t.Errorf("Err after b left: %v", err)
	}
}

func TestSource_SkipsBadEvents(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	src, rec := start(t, testOptions(t, js.URL()), spec(1, "golang"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	cases := []struct {
		name  string
		frame string
		want  error
		count func(Stats) int64
	}{
		{"not JSON", `<html>`, ErrMalformed, func(s Stats) int64 { return s.Malformed }},
		{"truncated", postFrame[:200], ErrTruncated, func(s Stats) int64 { return s.Truncated }},
		{"post without record", `{"did":"did:plc:a","time_us":5,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.post","rkey":"k"}}`, ErrMalformed, func(s Stats) int64 { return s.Malformed }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.count(src.Stats())
			js.SendRaw([]byte(tc.frame))
			testkit.WaitFor(t, waitTimeout, "the skip", func() bool { return tc.count(src.Stats()) == before+1 })
			if err := src.Err(); !errors.Is(err, tc.want) || !errors.Is(err, source.ErrDegraded) {
				t.Errorf("Err = %v, want a degraded %v", err, tc.want)
			}
			p := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "still here"})
			testkit.WaitFor(t, waitTimeout, "the next post", func() bool { return rec.Has(p.URI) })
			if err := src.Err(); err != nil {
				t.Errorf("Err after a good event: %v", err)
			}
		})
	}
	if st := src.Stats(); st.Connects != 1 {
		t.Errorf("%d connections: bad events must not end the connection", st.Connects)
	}
}

func TestSource_HugeFrameIsSkippedOnTheSameConnection(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	src, rec := start(t, testOptions(t, js.URL()), spec(1, "golang"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	first := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "before"})
	testkit.WaitFor(t, waitTimeout, "the first post", func() bool { return rec.Has(first.URI) })

	js.SendRaw(bytes.Repeat([]byte("x"), 50<<20))
	later := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "after"})
	testkit.WaitFor(t, waitTimeout, "the post after the huge frame", func() bool { return rec.Has(later.URI) })
	if st := src.Stats(); st.TooLarge != 1 || st.Connects != 1 {
		t.Errorf("stats %+v", st)
	}
	if all, _ := untagged(rec, first.URI); all != 1 {
		t.Errorf("the first post emitted %d times", all)
	}
}

func TestSource_StalledConnectionIsReopened(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts := testOptions(t, js.URL())
	opts.StallTimeout = 200 * time.Millisecond
	src, rec := start(t, opts, spec(1, "golang"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	first := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "before"})
	testkit.WaitFor(t, waitTimeout, "the first post", func() bool { return rec.Has(first.URI) })

	js.Stall()
	held := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "held"})
	testkit.WaitFor(t, waitTimeout, "the stall", func() bool { return src.Stats().Stalls >= 1 && errors.Is(src.Err(), ErrStalled) })
	js.Unstall()
	testkit.WaitFor(t, waitTimeout, "the held post", func() bool { return rec.Has(held.URI) })
	if all, _ := untagged(rec, first.URI); all != 1 {
		t.Errorf("the first post emitted %d times", all)
	}
}

func TestSource_RefusedConnectionIsDegradedAndRetried(t *testing.T) {
	cases := []struct {
		name string
		url  func(t *testing.T) string
		want error
	}{
		{"nothing listens", func(t *testing.T) string { return "ws://" + testkit.FreeAddr(t) + "/subscribe" }, ErrConnectionLost},
		{"the service refuses", func(t *testing.T) string {
			js := jetstream.Start(t, jetstream.Options{})
			js.Cut(time.Hour)
			return js.URL()
		}, ErrStatus},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, _ := start(t, testOptions(t, tc.url(t)), spec(1, "golang"))
			testkit.WaitFor(t, waitTimeout, "the error", func() bool {
				err := src.Err()
				return errors.Is(err, tc.want) && errors.Is(err, source.ErrDegraded)
			})
			if err := src.ErrFor(spec(1, "golang")); !errors.Is(err, tc.want) {
				t.Errorf("ErrFor = %v", err)
			}
		})
	}
}
