package mastodon

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// Test timings, scaled down from the defaults.
const (
	testBackoffMin  = 20 * time.Millisecond
	testBackoffMax  = 200 * time.Millisecond
	testAuthBackoff = 150 * time.Millisecond
	testStall       = time.Second
	testPing        = 100 * time.Millisecond
	waitDeadline    = 10 * time.Second
	testToken       = "t0ken"
)

func startServer(t *testing.T, opts fake.Options) *fake.Server {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	if opts.PingInterval == 0 {
		opts.PingInterval = testPing
	}
	return fake.Start(t, opts)
}

func testOptions(t *testing.T, instances ...string) Options {
	return Options{
		Instances:      instances,
		Token:          testToken,
		Client:         netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
		BackoffMin:     testBackoffMin,
		BackoffMax:     testBackoffMax,
		AuthBackoffMin: testAuthBackoff,
		StallTimeout:   testStall,
		PingInterval:   testPing,
		ConnectTimeout: 2 * time.Second,
		Logger:         testkit.Logger(t, "mastodon"),
	}
}

func spec(id int64, terms ...string) api.SubscriberSpec {
	return spawntest.Spec(api.SourceMastodon, id, nil, terms...)
}

// start runs the data source of the first instance in opts for specs.
func start(t *testing.T, opts Options, specs ...api.SubscriberSpec) (*instance, *spawntest.Recorder) {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	key := keyPrefix + strings.TrimSuffix(opts.Instances[0], "/")
	ds, err := k.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ds.SetSubscribers(spawntest.Subs(t, specs...))
	return ds.(*instance), runSource(t, ds)
}

func runSource(t *testing.T, ds source.DataSource) *spawntest.Recorder {
	t.Helper()
	rec := &spawntest.Recorder{}
	spawntest.Run(t, ds, rec.Emit)
	return rec
}

// subscribed waits until the server's one open connection subscribes
// exactly want.
func subscribed(t *testing.T, srv *fake.Server, want ...string) {
	t.Helper()
	slices.Sort(want)
	testkit.WaitFor(t, waitDeadline, "subscriptions "+strings.Join(want, ","), func() bool {
		subs := srv.Subscriptions()
		return len(subs) == 1 && slices.Equal(subs[0], want)
	})
}

func TestKind_OneKeyPerInstance(t *testing.T) {
	k, err := New(Options{Instances: []string{"https://b.example/", "https://A.example", "https://b.example"}})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := k.Keys(spawntest.Sub(t, spec(1, "golang")))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"mastodon:https://a.example", "mastodon:https://b.example"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if _, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{Query: []string{"(golang"}})); err == nil {
		t.Fatal("an invalid query got keys")
	}
	for _, bad := range [][]string{nil, {"ftp://a.example"}, {"https://a.example/?x=1"}, {"https://u:p@a.example"}} {
		if _, err := New(Options{Instances: bad}); err == nil {
			t.Errorf("instances %q accepted", bad)
		}
	}
}

func TestSource_SubscribesHashtagsOrPublicByQuery(t *testing.T) {
	cases := []struct {
		name  string
		specs []api.SubscriberSpec
		want  []string
	}{
		{"hashtags only", []api.SubscriberSpec{spec(1, "#golang"), spec(2, "#Rust OR #zig")}, []string{"hashtag:golang", "hashtag:rust", "hashtag:zig"}},
		{"free text needs public", []api.SubscriberSpec{spec(1, "golang")}, []string{"public"}},
		{"public covers the hashtags", []api.SubscriberSpec{spec(1, "#golang"), spec(2, "rust")}, []string{"public"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, fake.Options{})
			start(t, testOptions(t, srv.URL()), tc.specs...)
			subscribed(t, srv, tc.want...)
		})
	}
}

func TestSource_SubscriptionsFollowSubscribersByDiff(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"), spec(2, "#rust"))
	subscribed(t, srv, "hashtag:golang", "hashtag:rust")

	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{spec(1, "#golang"), spec(3, "#zig")}...))
	subscribed(t, srv, "hashtag:golang", "hashtag:zig")
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{spec(1, "#golang"), spec(3, "#zig"), spec(4, "gopher")}...))
	subscribed(t, srv, "public")

	var got []string
	for _, ev := range srv.SubscriptionEvents() {
		got = append(got, ev.Type+" "+ev.Stream)
	}
	want := []string{"subscribe hashtag:golang", "subscribe hashtag:rust", "subscribe hashtag:zig", "unsubscribe hashtag:rust",
		"subscribe public", "unsubscribe hashtag:golang", "unsubscribe hashtag:zig"}
	if !slices.Equal(got, want) {
		t.Fatalf("messages %q\nwant     %q", got, want)
	}
	if srv.Connections() != 1 {
		t.Fatalf("%d connections, want 1: changes ride the live connection", srv.Connections())
	}
	st := srv.Post(fake.Status{Content: "<p>hello gopher</p>"})
	testkit.WaitFor(t, waitDeadline, "the status", func() bool { return rec.Has(st.URI) })
}

func TestSource_ReconnectResubscribesEverything(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"), spec(2, "#rust"))
	subscribed(t, srv, "hashtag:golang", "hashtag:rust")
	srv.Cut(100 * time.Millisecond)
	testkit.WaitFor(t, waitDeadline, "a new connection", func() bool { return srv.Connections() == 2 })
	subscribed(t, srv, "hashtag:golang", "hashtag:rust")
	st := srv.Post(fake.Status{Content: "<p>#rust</p>", Tags: []string{"rust"}})
	testkit.WaitFor(t, waitDeadline, "the status after the reconnect", func() bool { return rec.Has(st.URI) })
	if s := ds.Stats(); s.Reconnects < 1 || s.Connects < 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSource_SameStatusThroughTwoInstancesIsOneID(t *testing.T) {
	a, b := startServer(t, fake.Options{Domain: "a.example"}), startServer(t, fake.Options{Domain: "b.example"})
	k, err := New(testOptions(t, a.URL(), b.URL()))
	if err != nil {
		t.Fatal(err)
	}
	sp := spec(1, "#golang")
	keys, err := k.Keys(spawntest.Sub(t, sp))
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	var recs []*spawntest.Recorder // a's, then b's
	for _, srv := range []*fake.Server{a, b} {
		key := keyPrefix + srv.URL()
		if !slices.Contains(keys, key) {
			t.Fatalf("keys %v lack %s", keys, key)
		}
		ds, err := k.New(key)
		if err != nil {
			t.Fatal(err)
		}
		ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{sp}...))
		recs = append(recs, runSource(t, ds))
	}
	subscribed(t, a, "hashtag:golang")
	subscribed(t, b, "hashtag:golang")

	orig := a.Post(fake.Status{Acct: "alice", Content: "<p>#golang 1.24 is out</p>", Tags: []string{"golang"}})
	dup := b.Post(fake.Status{Acct: "alice@a.example", URI: orig.URI, URL: orig.URL, Content: orig.Content, Tags: orig.Tags})
	if dup.ID == orig.ID {
		t.Fatal("the two instances gave the status the same local id")
	}
	for _, rec := range recs {
		testkit.WaitFor(t, waitDeadline, "the status on both instances", func() bool { return rec.Has(orig.URI) })
	}
	x, _ := recs[0].ByID(orig.URI)
	y, _ := recs[1].ByID(orig.URI)
	if x.Author != "alice@a.example" || y.Author != x.Author {
		t.Fatalf("authors %q and %q, want alice@a.example twice", x.Author, y.Author)
	}
	// The instances' reply ids differ; each links the reply to the uri.
	reply := b.Post(fake.Status{Acct: "bob", Content: "<p>#golang yay</p>", Tags: []string{"golang"}, InReplyToID: dup.ID})
	testkit.WaitFor(t, waitDeadline, "the reply", func() bool { return recs[1].Has(reply.URI) })
	if it, _ := recs[1].ByID(reply.URI); it.ReplyTo != orig.URI || it.ThreadID != orig.URI || it.Author != "bob@b.example" {
		t.Fatalf("reply %+v", it)
	}
	if s := k.Stats(); s[a.URL()].Items != 1 || s[b.URL()].Items != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestSource_ItemsCarryReblogsAndFavourites: a status streamed as it is
// written has no reblogs or favourites yet (zero, not unknown); an edit of
// an earlier status brings the counts it has by then. (Mastodon never
// streams a reblog on a hashtag stream, so a boost brings nothing.)
func TestSource_ItemsCarryReblogsAndFavourites(t *testing.T) {
	srv := startServer(t, fake.Options{})
	_, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	fresh := srv.Post(fake.Status{Content: "<p>#golang today</p>", Tags: []string{"golang"}})
	old := srv.Remember(fake.Status{Acct: "carol", Content: "<p>#golang tips</p>", Tags: []string{"golang"}, Reblogs: 25, Favourites: 70})
	srv.Post(fake.Status{Acct: "booster", Reblog: &old})
	srv.Edit(old)
	testkit.WaitFor(t, waitDeadline, "both statuses", func() bool { return rec.Has(fresh.URI, old.URI) })
	for _, tc := range []struct {
		uri  string
		want api.Engagement
	}{
		{fresh.URI, api.Engagement{}},
		{old.URI, api.Engagement{Reposts: 25, Likes: 70}},
	} {
		it, _ := rec.ByID(tc.uri)
		if e := it.Engagement; e == nil || *e != tc.want {
			t.Errorf("%s: engagement %+v, want %+v", tc.uri, e, tc.want)
		}
	}
}

func TestSource_DuplicatesAcrossStreamsAreDropped(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"), spec(2, "#go"))
	var told retractions
	ds.Retractions(told.add)
	subscribed(t, srv, "hashtag:go", "hashtag:golang")
	st := srv.Post(fake.Status{Content: "<p>#go #golang</p>", Tags: []string{"go", "golang"}})
	srv.Post(fake.Status{Acct: "booster", Reblog: &st}) // never on a hashtag stream
	edited := srv.Edit(st)
	srv.Delete(st)
	last := srv.Post(fake.Status{Content: "<p>#go</p>", Tags: []string{"go"}})
	testkit.WaitFor(t, waitDeadline, "the last status", func() bool { return rec.Has(last.URI) })
	// Once as posted; the edit and the delete are told as retractions,
	// once each (each arrives on both streams).
	if n := rec.Count(st.URI); n != 1 {
		t.Fatalf("status emitted %d times, want 1", n)
	}
	if !edited.EditedAt.After(st.CreatedAt) {
		t.Fatal("the edit carries no edited_at")
	}
	if got := told.ops(); len(got) != 2 || got[0] != "update "+st.URI || got[1] != "delete "+st.URI {
		t.Fatalf("retractions %v", got)
	}
	// Duplicates: the status's, the edit's and the delete's second stream.
	if s := ds.Stats(); s.Duplicates != 3 || s.Ignored != 0 || s.Items != 2 || s.Retractions != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSource_BadFramesAreSkippedAndCounted(t *testing.T) {
	srv := startServer(t, fake.Options{})
	opts := testOptions(t, srv.URL())
	opts.MaxMessageBytes = 64 << 10
	opts.StallTimeout = 5 * time.Second // a 50 MB message is slow to build under -race
	ds, rec := start(t, opts, spec(1, "golang"))
	subscribed(t, srv, "public")

	srv.SendRaw([]byte(`{"stream":["public"],"event":"update","payload":"{\"id\":\"1\",\"uri`)) // truncated payload
	srv.SendRaw([]byte(`{"stream":["public"],"event":"upd`))                                    // truncated frame
	srv.SendRaw([]byte(`<html>502 Bad Gateway</html>`))
	srv.SendRaw([]byte(`{"stream":["public"],"event":"update","payload":"{\"id\":\"1\"}"}`)) // no uri
	st := srv.Post(fake.Status{Content: "<p>golang</p>"})
	testkit.WaitFor(t, waitDeadline, "the good status", func() bool { return rec.Has(st.URI) })
	if s := ds.Stats(); s.Truncated != 2 || s.Malformed != 2 || s.Connects != 1 {
		t.Fatalf("stats %+v", s)
	}
	if err := ds.Err(); err != nil {
		t.Fatalf("err %v after a good status", err)
	}

	huge := append([]byte(`{"event":"update","payload":"`), bytes.Repeat([]byte("x"), 50<<20)...) // 50 MB
	srv.SendRaw(append(huge, `"}`...))
	testkit.WaitFor(t, waitDeadline, "a new connection", func() bool { return srv.Connections() == 2 && srv.Open() == 1 })
	subscribed(t, srv, "public")
	if s := ds.Stats(); s.TooLarge != 1 {
		t.Fatalf("stats %+v", s)
	}
	st = srv.Post(fake.Status{Content: "<p>golang</p>"})
	testkit.WaitFor(t, waitDeadline, "a status after the reconnect", func() bool { return rec.Has(st.URI) })
}

func TestSource_StalledConnectionIsReopened(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	srv.Stall()
	testkit.WaitFor(t, waitDeadline, "a stall", func() bool { return ds.Stats().Stalls == 1 })
	testkit.WaitFor(t, waitDeadline, "a new connection", func() bool { return srv.Connections() == 2 })
	testkit.WaitFor(t, waitDeadline, "resubscription", func() bool {
		subs := srv.Subscriptions()
		return len(subs) >= 1 && slices.Equal(subs[len(subs)-1], []string{"hashtag:golang"})
	})
	if !errors.Is(ds.Err(), ErrStalled) && ds.Err() != nil {
		t.Fatalf("err %v", ds.Err())
	}
	st := srv.Post(fake.Status{Content: "<p>#golang</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the status", func() bool { return rec.Has(st.URI) })
}

func TestSource_QuietConnectionWithPongsIsNotStalled(t *testing.T) {
	srv := startServer(t, fake.Options{PingInterval: time.Hour}) // the server never pings
	ds, _ := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	// Wait several stall timeouts of silence but for the answers to the
	// source's own pings.
	deadline := time.Now().Add(2 * testStall)
	testkit.WaitFor(t, waitDeadline, "quiet time", func() bool { return time.Now().After(deadline) })
	if s := ds.Stats(); s.Stalls != 0 || srv.Connections() != 1 {
		t.Fatalf("stats %+v, %d connections", s, srv.Connections())
	}
}

func TestSource_RefusedTokenFailsSubscribersAndRetriesSlowly(t *testing.T) {
	srv := startServer(t, fake.Options{Token: "other"})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	testkit.WaitFor(t, waitDeadline, "refusals", func() bool { return srv.Rejected() >= 2 })
	err := ds.Err()
	if !errors.Is(err, ErrTokenRefused) || errors.Is(err, source.ErrDegraded) || !strings.Contains(err.Error(), "access token") {
		t.Fatalf("err %v: want a refused token that is not passing", err)
	}
	// The streaming server's reason, from X-Error-Message.
	if !strings.Contains(err.Error(), "401 Unauthorized: Invalid access token") {
		t.Fatalf("err %q does not quote the instance's X-Error-Message", err)
	}
	if n := srv.Rejected(); n > 6 {
		t.Fatalf("%d handshakes in a few auth back-offs: not slow", n)
	}

	srv.SetToken(testToken)
	subscribed(t, srv, "hashtag:golang")
	testkit.WaitFor(t, waitDeadline, "the error cleared", func() bool { return ds.Err() == nil })

	// A token without the scope is refused by an error event after the
	// handshake; only a status proves it good again.
	srv.SendRaw([]byte(`{"error":"Access token does not have the required scopes","status":401}`))
	testkit.WaitFor(t, waitDeadline, "the refusal", func() bool { return errors.Is(ds.Err(), ErrTokenRefused) })
	subscribed(t, srv, "hashtag:golang")
	if !errors.Is(ds.Err(), ErrTokenRefused) {
		t.Fatalf("err %v cleared before a status arrived", ds.Err())
	}
	st := srv.Post(fake.Status{Content: "<p>#golang</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the status", func() bool { return rec.Has(st.URI) })
	testkit.WaitFor(t, waitDeadline, "the error cleared", func() bool { return ds.Err() == nil })
	if s := ds.Stats(); s.Refused < 3 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSource_ServerErrorEventIsPassing(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, _ := start(t, testOptions(t, srv.URL()), spec(1, "golang"))
	subscribed(t, srv, "public")
	srv.SendRaw([]byte(`{"error":"Unknown stream type","status":400}`))
	testkit.WaitFor(t, waitDeadline, "the error", func() bool { return errors.Is(ds.Err(), ErrServer) })
	if !errors.Is(ds.Err(), source.ErrDegraded) || srv.Connections() != 1 {
		t.Fatalf("err %v, %d connections", ds.Err(), srv.Connections())
	}
}

func TestSource_FollowsTheAdvertisedStreamingURL(t *testing.T) {
	streaming := startServer(t, fake.Options{})
	// Same host (127.0.0.1), another port: accepted.
	front := startServer(t, fake.Options{StreamingURL: "ws" + strings.TrimPrefix(streaming.URL(), "http")})
	start(t, testOptions(t, front.URL()), spec(1, "golang"))
	subscribed(t, streaming, "public")
	if front.Connections() != 0 {
		t.Fatalf("%d connections on the front instance", front.Connections())
	}
}

// TestSource_ReadyOnceItsStreamsAreSubscribed: the data source is ready
// (its subscribers' statuses arrive from now on) once every stream they
// need is subscribed on the open connection, and not while it is down.
func TestSource_ReadyOnceItsStreamsAreSubscribed(t *testing.T) {
	srv := startServer(t, fake.Options{})
	g := spec(1, "#golang")
	ds, _ := start(t, testOptions(t, srv.URL()), g)
	subscribed(t, srv, "hashtag:golang")
	testkit.WaitFor(t, waitDeadline, "ready", func() bool { return ds.Ready(g) })
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{g, spec(2, "#rust")}...))
	subscribed(t, srv, "hashtag:golang", "hashtag:rust")
	testkit.WaitFor(t, waitDeadline, "ready again", func() bool { return ds.Ready(g) })
	srv.Cut(300 * time.Millisecond)
	testkit.WaitFor(t, waitDeadline, "not ready while disconnected", func() bool { return !ds.Ready(g) })
	testkit.WaitFor(t, waitDeadline, "ready after the reconnect", func() bool { return ds.Ready(g) })
}

// TestSource_RefusedHandshakeSaysItsStatus: while the streaming server
// answers its handshakes with 503, the source's error carries the status,
// the reason the node shows its crawlers degraded with.
func TestSource_RefusedHandshakeSaysItsStatus(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, _ := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	srv.Cut(time.Minute)
	testkit.WaitFor(t, waitDeadline, "the refusal, its status the reason", func() bool {
		err := ds.Err()
		return errors.Is(err, ErrStatus) && source.Unreachable(err) == "HTTP 503 Service Unavailable"
	})
}
