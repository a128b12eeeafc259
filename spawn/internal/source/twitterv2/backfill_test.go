package twitterv2

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fakex "github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// itemIDs lists the ids of the items emitted, in order.
func itemIDs(items []source.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// TestGap_ReconnectFilledFromRecentSearch: posts published while the
// stream is down are found by recent search once it is back, since the
// last post the stream delivered for the rule, handed over oldest first
// and each once; what the stream delivered is not handed over again.
func TestGap_ReconnectFilledFromRecentSearch(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	s, rec, _ := run(t, testOptions(t, url), spec(1, "golang"))
	waitRules(t, srv, "golang")
	testkit.WaitFor(t, wait, "the stream", srv.Connected)
	before, _ := srv.Publish(fakex.Post{Text: "golang before the break"})
	testkit.WaitFor(t, wait, "the post before the break", func() bool { return rec.Has("tw:" + before.ID) })

	srv.Hold() // the stream stays down while posts are published
	srv.Cut()
	testkit.WaitFor(t, wait, "the stream down", func() bool { return !srv.Connected() })
	var during []string
	for _, text := range []string{"golang one", "unrelated", "golang two", "GOLANG three"} {
		p, matched := srv.Publish(fakex.Post{Text: text})
		if len(matched) > 0 {
			during = append(during, "tw:"+p.ID)
		}
	}
	srv.Release()
	testkit.WaitFor(t, wait, "the gap's posts", func() bool { return rec.Has(during...) })
	after, _ := srv.Publish(fakex.Post{Text: "golang after"})
	testkit.WaitFor(t, wait, "the post after", func() bool { return rec.Has("tw:" + after.ID) })

	want := append(append([]string{"tw:" + before.ID}, during...), "tw:"+after.ID)
	if got := itemIDs(rec.All()); !slices.Equal(got, want) {
		t.Fatalf("items %v\nwant  %v (each once, in order)", got, want)
	}
	searches := srv.Searches()
	if len(searches) != 1 || searches[0].SinceID != before.ID || searches[0].Query != "golang" || searches[0].Results != 3 {
		t.Fatalf("searches %+v, want one for golang since %s finding 3", searches, before.ID)
	}
	it, _ := rec.ByID(during[0])
	if it.Text != "golang one" || it.Author != "user" || it.SourceID != strings.TrimPrefix(during[0], "tw:") {
		t.Errorf("gap item %+v", it)
	}
	st := s.Stats()
	if st.GapsFilled != 1 || st.GapPosts != 3 || st.GapSeconds <= 0 {
		t.Errorf("gap stats filled %d posts %d seconds %v, want 1, 3, > 0", st.GapsFilled, st.GapPosts, st.GapSeconds)
	}
}

// TestGap_MovedCrawlerFilledFromItsCursor: a subscriber that arrives with
// its crawler's cursor (it ran on another spawn) gets the posts of its
// query published after the newest its crawler stored, from the post id
// in the cursor, or from the cursor's time when it has none.
func TestGap_MovedCrawlerFilledFromItsCursor(t *testing.T) {
	cases := []struct {
		name   string
		cursor func(stored fakex.Post) *api.Cursor
		// again: the stored post is searched again, X's created_at
		// having whole seconds (the spawn drops what the cursor covers).
		again bool
	}{
		{"post id", func(p fakex.Post) *api.Cursor {
			return &api.Cursor{PublishedAt: p.CreatedAt, Sources: map[string]string{Key: p.ID}}
		}, false},
		{"published time", func(p fakex.Post) *api.Cursor { return &api.Cursor{PublishedAt: p.CreatedAt.Truncate(time.Second)} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
			base := time.Now().Add(-10 * time.Minute)
			srv.Publish(fakex.Post{Text: "golang long ago", CreatedAt: base})
			stored, _ := srv.Publish(fakex.Post{Text: "golang stored elsewhere", CreatedAt: base.Add(time.Minute)})
			missed, _ := srv.Publish(fakex.Post{Text: "golang missed", CreatedAt: base.Add(3 * time.Minute)})
			sp := spec(1, "golang")
			sp.Cursor = tc.cursor(stored)
			_, rec, _ := run(t, testOptions(t, url), sp)
			testkit.WaitFor(t, wait, "the missed post", func() bool { return rec.Has("tw:" + missed.ID) })
			want := []string{"tw:" + missed.ID}
			if tc.again {
				want = []string{"tw:" + stored.ID, "tw:" + missed.ID}
			}
			if got := itemIDs(rec.All()); !slices.Equal(got, want) {
				t.Fatalf("items %v, want %v", got, want)
			}
		})
	}
}

// TestGap_SearchWaitsOutTheRateLimit: a 429 from recent search waits
// until x-rate-limit-reset, then the gap is filled.
func TestGap_SearchWaitsOutTheRateLimit(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	srv.FailSearches(http.StatusTooManyRequests)
	old, _ := srv.Publish(fakex.Post{Text: "golang missed", CreatedAt: time.Now().Add(-time.Minute)})
	sp := spec(1, "golang")
	sp.Cursor = &api.Cursor{PublishedAt: old.CreatedAt.Add(-time.Minute)}
	s, rec, d := run(t, testOptions(t, url), sp)
	testkit.WaitFor(t, wait, "the missed post", func() bool { return rec.Has("tw:" + old.ID) })
	if st := s.Stats(); st.SearchRateLimited != 1 || st.Searches != 2 {
		t.Fatalf("searches %d, rate limited %d; want 2 and 1", st.Searches, st.SearchRateLimited)
	}
	// The wait is until the window's reset, minutes away.
	if !slices.ContainsFunc(d.all(), func(w time.Duration) bool { return w > time.Minute }) {
		t.Fatalf("waits %v, none until the rate limit's reset", d.all())
	}
}

// TestGap_LongRulesSearchedInParts: a packed rule longer than recent
// search takes is searched as several queries, each within the limit,
// together covering every query of the rule.
func TestGap_LongRulesSearchedInParts(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token, MaxQueryLength: 40})
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	var specs []api.SubscriberSpec
	var want []string
	base := time.Now().Add(-5 * time.Minute)
	for i, w := range words {
		p, _ := srv.Publish(fakex.Post{Text: w + " missed", CreatedAt: base.Add(time.Duration(i) * time.Second)})
		want = append(want, "tw:"+p.ID)
		sp := spec(int64(i+1), w)
		sp.Cursor = &api.Cursor{PublishedAt: base.Add(-time.Minute)}
		specs = append(specs, sp)
	}
	opts := testOptions(t, url)
	opts.MaxSearchQueryLength = 40
	_, rec, _ := run(t, opts, specs...)
	testkit.WaitFor(t, wait, "every missed post", func() bool { return rec.Has(want...) })
	searches := srv.Searches()
	if len(searches) < 2 {
		t.Fatalf("%d searches, want the rule split into several", len(searches))
	}
	for _, q := range searches {
		if len([]rune(q.Query)) > 40 || q.Status != http.StatusOK {
			t.Errorf("search %q answered %d", q.Query, q.Status)
		}
	}
	if got := itemIDs(rec.All()); !slices.Equal(got, want) {
		t.Fatalf("items %v\nwant  %v", got, want)
	}
}
