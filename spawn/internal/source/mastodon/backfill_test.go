package mastodon

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

func uris(items []source.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// TestGap_ReconnectFilledFromTheTimelines: statuses posted while the
// connection is down are read from the REST timeline of each subscribed
// stream once it is back, from the newest status streamed before, handed
// over oldest first and each once.
func TestGap_ReconnectFilledFromTheTimelines(t *testing.T) {
	srv := startServer(t, fake.Options{})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	before := srv.Post(fake.Status{Acct: "alice", Content: "<p>#golang before</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the status before the break", func() bool { return rec.Has(before.URI) })

	srv.Cut(500 * time.Millisecond) // down, and handshakes refused for a while
	var during []string
	for i := range 45 { // more than a timeline page
		during = append(during, srv.Post(fake.Status{Acct: "bob", Content: "<p>#golang during</p>", Tags: []string{"golang"}}).URI)
		if i%10 == 0 {
			srv.Post(fake.Status{Acct: "carol", Content: "<p>#rust elsewhere</p>", Tags: []string{"rust"}})
		}
	}
	testkit.WaitFor(t, waitDeadline, "the gap's statuses", func() bool { return rec.Has(during...) })
	after := srv.Post(fake.Status{Acct: "dave", Content: "<p>#golang after</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the status after", func() bool { return rec.Has(after.URI) })

	want := append(append([]string{before.URI}, during...), after.URI)
	if got := uris(rec.All()); !slices.Equal(got, want) {
		t.Fatalf("items %d %v\nwant %d %v (each once, in order)", len(got), got, len(want), want)
	}
	if n := srv.RESTCalls("GET /api/v1/timelines/tag/{hashtag}"); n < 2 {
		t.Fatalf("%d tag timeline calls, want the pages of the gap", n)
	}
	if s := ds.Stats(); s.GapsFilled != 1 || s.GapItems != int64(len(during)) {
		t.Fatalf("gaps filled %d with %d items, want 1 with %d", s.GapsFilled, s.GapItems, len(during))
	}
	if it, _ := rec.ByID(during[0]); it.SourceID == "" || !strings.HasSuffix(during[0], "/"+it.SourceID) {
		t.Errorf("item source id %q of %s", it.SourceID, during[0])
	}
}

// TestGap_MovedSubscriberFilledFromItsCursor: a subscriber arriving with
// its crawler's cursor gets what was posted after the status its crawler
// last stored from this instance, or, without one, back to the cursor's
// published time.
func TestGap_MovedSubscriberFilledFromItsCursor(t *testing.T) {
	cases := []struct {
		name   string
		cursor func(key string, stored fake.Status) *api.Cursor
		// again: the time-only cursor reaches back to the stored status
		// (the spawn drops what its cursor covers).
		again bool
	}{
		{"status id", func(key string, st fake.Status) *api.Cursor {
			return &api.Cursor{PublishedAt: st.CreatedAt, Sources: map[string]string{key: st.ID}}
		}, false},
		{"published time", func(_ string, st fake.Status) *api.Cursor { return &api.Cursor{PublishedAt: st.CreatedAt} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, fake.Options{})
			now := time.Now()
			srv.Post(fake.Status{Acct: "a", Content: "<p>#golang old</p>", Tags: []string{"golang"}, CreatedAt: now.Add(-10 * time.Minute)})
			stored := srv.Post(fake.Status{Acct: "b", Content: "<p>#golang stored</p>", Tags: []string{"golang"}, CreatedAt: now.Add(-5 * time.Minute)})
			missed := srv.Post(fake.Status{Acct: "c", Content: "<p>#golang missed</p>", Tags: []string{"golang"}, CreatedAt: now.Add(-time.Minute)})
			sp := spec(1, "#golang")
			sp.Cursor = tc.cursor(keyPrefix+srv.URL(), stored)
			_, rec := start(t, testOptions(t, srv.URL()), sp)
			testkit.WaitFor(t, waitDeadline, "the missed status", func() bool { return rec.Has(missed.URI) })
			want := []string{missed.URI}
			if tc.again {
				want = []string{stored.URI, missed.URI}
			}
			if got := uris(rec.All()); !slices.Equal(got, want) {
				t.Fatalf("items %v, want %v", got, want)
			}
		})
	}
}

// TestGap_ClosedInstanceFilledFromTheHomeTimeline: where the feeds are
// closed and the source reads the followed tags through the home
// timeline, a gap is filled from the home timeline, keeping only what the
// hashtag streams would have carried.
func TestGap_ClosedInstanceFilledFromTheHomeTimeline(t *testing.T) {
	srv := startServer(t, fake.Options{TimelinesAccess: fake.ClosedLiveFeeds})
	srv.FollowAccount("friend")
	_, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "user")
	followed(t, srv, "golang")
	first := srv.Post(fake.Status{Acct: "bob@elsewhere.example", Content: "<p>#golang first</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the first status", func() bool { return rec.Has(first.URI) })

	srv.Cut(300 * time.Millisecond)
	missed := srv.Post(fake.Status{Acct: "carol", Content: "<p>#golang missed</p>", Tags: []string{"golang"}})
	friend := srv.Post(fake.Status{Acct: "friend", Content: "<p>lunch</p>"}) // on home, not a tag's
	testkit.WaitFor(t, waitDeadline, "the missed status", func() bool { return rec.Has(missed.URI) })
	last := srv.Post(fake.Status{Acct: "dave", Content: "<p>#golang last</p>", Tags: []string{"golang"}})
	testkit.WaitFor(t, waitDeadline, "the last status", func() bool { return rec.Has(last.URI) })
	if got, want := uris(rec.All()), []string{first.URI, missed.URI, last.URI}; !slices.Equal(got, want) {
		t.Fatalf("items %v, want %v (not the friend's %s)", got, want, friend.URI)
	}
	if n := srv.RESTCalls("GET /api/v1/timelines/home"); n == 0 {
		t.Fatal("the home timeline was never read")
	}
}
