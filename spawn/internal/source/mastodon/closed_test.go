package mastodon

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// tagEvents renders the server's follow log as "follow golang".
func tagEvents(srv *fake.Server) []string {
	var out []string
	for _, e := range srv.TagEvents() {
		out = append(out, e.Action+" "+e.Tag)
	}
	return out
}

func followed(t *testing.T, srv *fake.Server, want ...string) {
	t.Helper()
	slices.Sort(want)
	testkit.WaitFor(t, waitDeadline, "followed tags "+strings.Join(want, ","), func() bool {
		return slices.Equal(srv.FollowedTags(), want)
	})
}

func TestSource_ClosedFeedsServeHashtagsThroughFollowedTags(t *testing.T) {
	srv := startServer(t, fake.Options{TimelinesAccess: fake.ClosedLiveFeeds})
	srv.FollowAccount("friend")
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"), spec(2, "#rust lang:en"))
	subscribed(t, srv, "user")
	followed(t, srv, "golang", "rust")

	tagged := srv.Post(fake.Status{Acct: "bob@elsewhere.example", Content: "<p>#golang 1.25</p>", Tags: []string{"golang"}})
	both := srv.Post(fake.Status{Acct: "carol", Content: "<p>#golang and #rust</p>", Tags: []string{"golang", "rust"}, Language: "en"})
	// The home timeline also carries the followed account's statuses: not
	// a followed tag's public status, so no subscriber's.
	friend := srv.Post(fake.Status{Acct: "friend", Content: "<p>lunch</p>"})
	private := srv.Post(fake.Status{Acct: "friend", Content: "<p>#golang secret</p>", Tags: []string{"golang"}, Visibility: fake.VisibilityPrivate})
	srv.Post(fake.Status{Acct: "friend", Reblog: &tagged})
	last := srv.Post(fake.Status{Acct: "dave", Content: "<p>#rust</p>", Tags: []string{"rust"}})
	testkit.WaitFor(t, waitDeadline, "the followed tags' statuses", func() bool { return rec.Has(tagged.URI, both.URI, last.URI) })
	for _, uri := range []string{friend.URI, private.URI} {
		if rec.Has(uri) {
			t.Errorf("status %s handed over: not a followed tag's public status", uri)
		}
	}
	if n := rec.Count(both.URI); n != 1 {
		t.Errorf("a status with two followed tags (twice on the home timeline) handed over %d times", n)
	}
	if s := ds.Stats(); s.Filtered != 3 || s.Follows != 2 {
		t.Fatalf("stats %+v: want the friend's status, the private one and the reblog filtered", s)
	}
	if err := ds.ErrFor(spec(1, "#golang")); err != nil {
		t.Fatalf("hashtag subscriber: %v", err)
	}

	// The tags follow the subscribers.
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{spec(1, "#golang")}...))
	followed(t, srv, "golang")
	if got, want := tagEvents(srv), []string{"follow golang", "follow rust", "unfollow rust"}; !slices.Equal(got, want) {
		t.Fatalf("tag events %q, want %q", got, want)
	}
}

func TestSource_FreeTextOnClosedInstanceFailsNamingTheInstance(t *testing.T) {
	srv := startServer(t, fake.Options{TimelinesAccess: fake.ClosedLiveFeeds})
	free, tags := spec(1, "golang"), spec(2, "#golang")
	ds, _ := start(t, testOptions(t, srv.URL()), free, tags)
	subscribed(t, srv, "user")
	err := ds.ErrFor(free)
	host := strings.TrimPrefix(srv.URL(), "http://")
	if !errors.Is(err, ErrLiveFeedsClosed) || errors.Is(err, source.ErrDegraded) ||
		!strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), "live_feeds local disabled, remote disabled") {
		t.Fatalf("free-text subscriber: err %v; want a lasting ErrLiveFeedsClosed naming %s and why", err, host)
	}
	if err := ds.ErrFor(tags); err != nil {
		t.Fatalf("hashtag subscriber: %v", err)
	}
}

func TestSource_RoleThatMayViewFeedsReadsDisabledFeeds(t *testing.T) {
	srv := startServer(t, fake.Options{TimelinesAccess: fake.ClosedLiveFeeds, ViewFeeds: true})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "golang"))
	subscribed(t, srv, "public")
	st := srv.Post(fake.Status{Acct: "bob@elsewhere.example", Content: "<p>golang</p>"})
	testkit.WaitFor(t, waitDeadline, "the status", func() bool { return rec.Has(st.URI) })
	if err := ds.ErrFor(spec(1, "golang")); err != nil || len(srv.FollowedTags()) != 0 {
		t.Fatalf("err %v, followed %v", err, srv.FollowedTags())
	}
}

// TestSource_PublicStreamOfOnlyDeletesIsTakenAsClosed: an instance before
// Mastodon 4.5 says nothing of its feeds, but its public stream carries
// only deletes: the source takes it as closed.
func TestSource_PublicStreamOfOnlyDeletesIsTakenAsClosed(t *testing.T) {
	srv := startServer(t, fake.Options{Version: "4.4.3", TimelinesAccess: fake.ClosedLiveFeeds})
	opts := testOptions(t, srv.URL())
	opts.ClosedAfterDeletes = 3
	free, tags := spec(1, "golang"), spec(2, "#golang")
	ds, rec := start(t, opts, free, tags)
	subscribed(t, srv, "public")
	for range 3 {
		srv.Delete(srv.Post(fake.Status{Acct: "bob@elsewhere.example", Content: "<p>gone</p>"}))
	}
	subscribed(t, srv, "user")
	followed(t, srv, "golang")
	if err := ds.ErrFor(free); !errors.Is(err, ErrLiveFeedsClosed) || !strings.Contains(err.Error(), "only delete events (3 in a row)") {
		t.Fatalf("free-text subscriber: err %v", err)
	}
	st := srv.Post(fake.Status{Acct: "bob@elsewhere.example", Content: "<p>#golang</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the status through the followed tag", func() bool { return rec.Has(st.URI) })
}

// TestSource_FollowsBeforeTheSpawnAreNeverUnfollowed: a tag the account
// followed already stays followed when the subscribers let it go and when
// the data source stops; the tags the source followed itself are
// unfollowed then.
func TestSource_FollowsBeforeTheSpawnAreNeverUnfollowed(t *testing.T) {
	srv := startServer(t, fake.Options{TimelinesAccess: fake.ClosedLiveFeeds})
	srv.FollowTag("golang")
	k, err := New(testOptions(t, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := k.New(keyPrefix + srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{spec(1, "#golang"), spec(2, "#rust")}...))
	stop := runUntil(t, ds)
	followed(t, srv, "golang", "rust")
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{spec(2, "#rust")}...))
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{spec(2, "#rust"), spec(3, "#zig")}...))
	followed(t, srv, "golang", "rust", "zig")
	stop()
	followed(t, srv, "golang")
	for _, e := range tagEvents(srv) {
		if e == "unfollow golang" {
			t.Fatalf("tag events %q: the account's own follow was undone", tagEvents(srv))
		}
	}

	// The next data source of the instance finds golang followed by the
	// account again and leaves it so.
	ds, _ = k.New(keyPrefix + srv.URL())
	ds.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{spec(1, "#golang")}...))
	stop = runUntil(t, ds)
	subscribed(t, srv, "user")
	stop()
	followed(t, srv, "golang")
}

// runUntil runs ds until the returned stop is called (or the test ends),
// which waits for Run to return.
func runUntil(t *testing.T, ds source.DataSource) (stop func()) {
	t.Helper()
	rec := &spawntest.Recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ds.Run(ctx, rec.Emit) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(waitDeadline):
			t.Error("Run did not return after its context ended")
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestSource_TagUnfollowedElsewhereIsFollowedAgain(t *testing.T) {
	srv := startServer(t, fake.Options{TimelinesAccess: fake.ClosedLiveFeeds})
	opts := testOptions(t, srv.URL())
	opts.FollowCheckInterval = 50 * time.Millisecond
	ds, rec := start(t, opts, spec(1, "#golang"))
	followed(t, srv, "golang")
	srv.UnfollowTag("golang") // another spawn sharing the account let it go
	followed(t, srv, "golang")
	testkit.WaitFor(t, waitDeadline, "the refollow counted", func() bool { return ds.Stats().Refollows >= 1 })
	subscribed(t, srv, "user")
	st := srv.Post(fake.Status{Content: "<p>#golang</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the status", func() bool { return rec.Has(st.URI) })
}

func TestSource_TokenWithoutFollowScopesFailsHashtagSubscribers(t *testing.T) {
	srv := startServer(t, fake.Options{TimelinesAccess: fake.ClosedLiveFeeds, Scopes: []string{"read"}})
	ds, _ := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	testkit.WaitFor(t, waitDeadline, "the refusal", func() bool { return errors.Is(ds.ErrFor(spec(1, "#golang")), ErrFollowRefused) })
	err := ds.ErrFor(spec(1, "#golang"))
	if errors.Is(err, source.ErrDegraded) || !strings.Contains(err.Error(), "write:follows") ||
		!strings.Contains(err.Error(), "This action is outside the authorized scopes") {
		t.Fatalf("err %v: want a lasting refusal saying which scopes", err)
	}
}

func TestSource_ReplyToAnUnseenStatusIsLinkedThroughItsContext(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	root := srv.Remember(fake.Status{Acct: "alice", Content: "<p>root</p>"})
	mid := srv.Remember(fake.Status{Acct: "bob@elsewhere.example", Content: "<p>mid</p>", InReplyToID: root.ID})
	leaf := srv.Post(fake.Status{Acct: "carol", Content: "<p>#golang leaf</p>", Tags: []string{"golang"}, InReplyToID: mid.ID})
	// A reply to the leaf needs no look-up: the leaf was seen.
	next := srv.Post(fake.Status{Acct: "dave", Content: "<p>#golang next</p>", Tags: []string{"golang"}, InReplyToID: leaf.ID})
	// The parent of this one is unknown to the instance.
	lost := srv.Post(fake.Status{Acct: "erin", Content: "<p>#golang lost</p>", Tags: []string{"golang"}, InReplyToID: "4242"})
	testkit.WaitFor(t, waitDeadline, "the replies", func() bool { return rec.Has(leaf.URI, next.URI, lost.URI) })
	for _, tc := range []struct {
		uri, replyTo, thread string
	}{
		{leaf.URI, mid.URI, root.URI},
		{next.URI, leaf.URI, root.URI},
		{lost.URI, "", ""},
	} {
		it, _ := rec.ByID(tc.uri)
		if it.ReplyTo != tc.replyTo || it.ThreadID != tc.thread {
			t.Errorf("%s: reply_to %q thread_id %q, want %q %q", tc.uri, it.ReplyTo, it.ThreadID, tc.replyTo, tc.thread)
		}
	}
	if s := ds.Stats(); s.Resolved != 2 || srv.RESTCalls("GET /api/v1/statuses/{id}/context") != 2 {
		t.Fatalf("stats %+v, %d context calls: want one look-up for the leaf and one for the lost reply", s, srv.RESTCalls("GET /api/v1/statuses/{id}/context"))
	}
}
