package twitterv1

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/match"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/twitterserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// Test timings: Twitter's policy scaled down about 250 times, so a test
// that waits out several back-offs stays fast.
const (
	testHTTPMin      = 20 * time.Millisecond
	testHTTPMax      = 160 * time.Millisecond
	testRateMin      = 60 * time.Millisecond
	testRateMax      = 240 * time.Millisecond
	testNetworkStep  = 10 * time.Millisecond
	testNetworkMax   = 40 * time.Millisecond
	testStall        = 200 * time.Millisecond
	testKeepAlive    = 20 * time.Millisecond
	testConnect      = 200 * time.Millisecond
	testReopen       = 20 * time.Millisecond
	waitDeadline     = 10 * time.Second
	backoffTolerance = 2 * time.Second // how much later than planned a retry may come on a loaded machine
)

var testCreds = Credentials{ConsumerKey: "ck", ConsumerSecret: "cs", AccessToken: "at", AccessSecret: "as"}

// newServer starts a local Twitter that checks signatures made with
// testCreds.
func newServer(t *testing.T) (*twitterserver.Server, string) {
	t.Helper()
	return twitterserver.Start(t, twitterserver.Options{
		Credentials: twitterserver.Credentials(testCreds),
		KeepAlive:   testKeepAlive,
	})
}

func loopbackClient() *http.Client {
	return netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
}

func testOptions(base string) Options {
	return Options{
		Credentials:         testCreds,
		APIURL:              base,
		StreamURL:           base,
		Client:              loopbackClient(),
		HTTPBackoffMin:      testHTTPMin,
		HTTPBackoffMax:      testHTTPMax,
		RateLimitBackoffMin: testRateMin,
		RateLimitBackoffMax: testRateMax,
		NetworkBackoffStep:  testNetworkStep,
		NetworkBackoffMax:   testNetworkMax,
		StallTimeout:        testStall,
		ConnectTimeout:      testConnect,
		ReopenDelay:         testReopen,
		SearchTimeout:       2 * time.Second,
	}
}

type recorder = spawntest.Recorder

func spec(id int64, terms ...string) api.SubscriberSpec {
	return spawntest.Spec(api.SourceTwitter, id, nil, terms...)
}

// start runs the source for specs until the test ends (spawntest.Start).
func start(t *testing.T, opts Options, specs ...api.SubscriberSpec) (*tracker, *recorder) {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ds, rec := spawntest.Start(t, k, Key, specs...)
	return ds.(*tracker), rec
}

func tweetID(tw twitterserver.Tweet) string { return fmt.Sprintf("tw:%d", tw.ID) }

// fanOut is what the node does with an item's terms: it goes to every
// subscriber whose query shares one.
func fanOut(items []source.Item, specs []api.SubscriberSpec) map[int64][]string {
	out := map[int64][]string{}
	for _, it := range items {
		for _, s := range specs {
			q, err := query.ParseList(s.Query)
			if err != nil {
				panic(err)
			}
			if _, ok := match.MatchQuery(q, match.Item{Text: it.Text, Author: it.Author}); ok {
				out[s.CrawlerID] = append(out[s.CrawlerID], it.ID)
			}
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

func openTracks(srv *twitterserver.Server) []string {
	var all []string
	for _, tr := range srv.OpenTracks() {
		all = append(all, strings.Join(tr, ","))
	}
	slices.Sort(all)
	return all
}

func TestTracker_SharesOneConnectionAndFansOut(t *testing.T) {
	srv, base := newServer(t)
	specs := []api.SubscriberSpec{spec(1, "golang"), spec(2, "golang", "rust"), spec(3, "Python", "new release")}
	tr, rec := start(t, testOptions(base), specs...)
	testkit.WaitFor(t, waitDeadline, "one stream tracking the union", func() bool {
		return slices.Equal(openTracks(srv), []string{"golang,new release,python,rust"})
	})

	created := time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)
	// The author writes "&"; the local Twitter sends "&amp;", as Twitter
	// does.
	t1 := srv.Publish(twitterserver.Tweet{ScreenName: "gopher", Text: "I love #Golang & friends", CreatedAt: created})
	t2 := srv.Publish(twitterserver.Tweet{ScreenName: "ferris", Text: "Rust, and python too"})
	t3 := srv.Publish(twitterserver.Tweet{ScreenName: "n", Text: "a release that is new: " + strings.Repeat("long text ", 20) + "the end"})
	t4 := srv.Publish(twitterserver.Tweet{ScreenName: "rt", Text: "golang retweeted", RetweetOf: "orig"})
	srv.Publish(twitterserver.Tweet{Text: "goland and rusty pythons match nothing"})
	srv.Publish(twitterserver.Tweet{Text: "new things only"}) // one word of "new release"
	testkit.WaitFor(t, waitDeadline, "four matching tweets", func() bool { return rec.Has(tweetID(t1), tweetID(t2), tweetID(t3), tweetID(t4)) })

	it, _ := rec.ByID(tweetID(t1))
	want := source.Item{
		ID: tweetID(t1), Author: "gopher", Text: "I love #Golang & friends",
		URL:         fmt.Sprintf("https://twitter.com/gopher/status/%d", t1.ID),
		PublishedAt: created, FetchedAt: it.FetchedAt, Terms: []string{"golang"},
	}
	if !it.PublishedAt.Equal(want.PublishedAt) || it.ID != want.ID || it.Author != want.Author || it.Text != want.Text ||
		it.URL != want.URL || !slices.Equal(it.Terms, want.Terms) || it.QueryUUID != "" {
		t.Errorf("item\n got %+v\nwant %+v", it, want)
	}
	if it.FetchedAt.IsZero() {
		t.Error("FetchedAt not set")
	}
	if it, _ := rec.ByID(tweetID(t3)); !strings.HasSuffix(it.Text, "the end") || !slices.Equal(it.Terms, []string{"new release"}) {
		t.Errorf("long tweet: text %q terms %v, want the full text and [new release]", it.Text, it.Terms)
	}
	// A retweet is the whole tweet it shares, not "RT @orig: …", with
	// repost_of naming it (the local Twitter gives it the retweet's id
	// minus one).
	if it, _ := rec.ByID(tweetID(t4)); it.Text != "golang retweeted" || it.Author != "rt" || it.RepostOf != fmt.Sprintf("tw:%d", t4.ID-1) {
		t.Errorf("retweet: %+v", it)
	}
	if it, _ := rec.ByID(tweetID(t2)); !slices.Equal(it.Terms, []string{"python", "rust"}) {
		t.Errorf("terms of %q: %v", "Rust, and python too", it.Terms)
	}

	got := fanOut(rec.All(), specs)
	wantFan := map[int64][]string{
		1: {tweetID(t1), tweetID(t4)},
		2: {tweetID(t1), tweetID(t2), tweetID(t4)},
		3: {tweetID(t2), tweetID(t3)},
	}
	for id, ids := range wantFan {
		slices.Sort(ids)
		if !slices.Equal(got[id], ids) {
			t.Errorf("crawler %d got %v, want %v", id, got[id], ids)
		}
	}
	if n := len(rec.All()); n != 4 {
		t.Errorf("%d items emitted, want 4", n)
	}
	if n := srv.Streaming(); n != 1 {
		t.Errorf("%d stream connections, want 1", n)
	}
	if err := tr.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
}

// manyTerms returns n distinct terms t0000, t0001, ….
func manyTerms(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%04d", from+i)
	}
	return out
}

func TestTracker_SplitsTermsAcrossConnections(t *testing.T) {
	srv, base := newServer(t)
	var specs []api.SubscriberSpec
	for i := range 4 {
		specs = append(specs, spec(int64(i+1), manyTerms(i*100, 100)...))
	}
	specs = append(specs, spec(5, "t0400")) // the 401st term
	tr, rec := start(t, testOptions(base), specs...)
	testkit.WaitFor(t, waitDeadline, "two streams", func() bool { return srv.Open() == 2 })
	tracks := srv.OpenTracks()
	slices.SortFunc(tracks, func(a, b []string) int { return len(b) - len(a) })
	if len(tracks[0]) != MaxTrackTerms || len(tracks[1]) != 1 {
		t.Fatalf("track sizes %d and %d, want %d and 1", len(tracks[0]), len(tracks[1]), MaxTrackTerms)
	}
	union := slices.Concat(tracks[0], tracks[1])
	slices.Sort(union)
	if !slices.Equal(union, manyTerms(0, 401)) {
		t.Fatal("the two streams do not track exactly the 401 terms")
	}

	a := srv.Publish(twitterserver.Tweet{Text: "about t0400 only"})
	b := srv.Publish(twitterserver.Tweet{Text: "about t0007 and t0399"})
	testkit.WaitFor(t, waitDeadline, "tweets from both streams", func() bool { return rec.Has(tweetID(a), tweetID(b)) })
	got := fanOut(rec.All(), specs)
	if !slices.Equal(got[5], []string{tweetID(a)}) || !slices.Equal(got[1], []string{tweetID(b)}) ||
		!slices.Equal(got[4], []string{tweetID(b)}) || len(got[2]) != 0 || len(got[3]) != 0 {
		t.Errorf("fan-out %v", got)
	}

	// Down to 300 terms: one connection is enough again.
	tr.SetSubscribers(spawntest.Subs(t, specs[:3]...))
	testkit.WaitFor(t, waitDeadline, "one stream with 300 terms", func() bool {
		tr := srv.OpenTracks()
		return len(tr) == 1 && len(tr[0]) == 300
	})
}

func TestTracker_ReopensOnChangeWithoutLosingTweets(t *testing.T) {
	srv, base := newServer(t)
	alpha, beta := spec(1, "alpha"), spec(2, "beta test")
	tr, rec := start(t, testOptions(base), alpha)
	testkit.WaitFor(t, waitDeadline, "stream tracking alpha", func() bool { return slices.Equal(openTracks(srv), []string{"alpha"}) })
	a1 := srv.Publish(twitterserver.Tweet{Text: "alpha one"})
	testkit.WaitFor(t, waitDeadline, "a1", func() bool { return rec.Has(tweetID(a1)) })

	// The re-open fails until the test allows it, so tweets published
	// meanwhile can only come back through search.
	srv.FailStreams(503, 1<<30)
	tr.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{alpha, beta}...))
	testkit.WaitFor(t, waitDeadline, "the re-open to fail", func() bool { return srv.Open() == 0 && errors.Is(tr.Err(), ErrStatus) })
	a2 := srv.Publish(twitterserver.Tweet{Text: "alpha two, during the gap"})
	b1 := srv.Publish(twitterserver.Tweet{Text: "test of beta one, during the gap"})
	srv.Publish(twitterserver.Tweet{Text: "beta without the other word"})
	srv.Publish(twitterserver.Tweet{Text: "gamma, not tracked"})
	srv.FailStreams(0, 0)

	testkit.WaitFor(t, waitDeadline, "the gap's tweets", func() bool { return rec.Has(tweetID(a2), tweetID(b1)) })
	testkit.WaitFor(t, waitDeadline, "stream tracking alpha and beta", func() bool { return slices.Equal(openTracks(srv), []string{"alpha,beta test"}) })
	searches := srv.Searches()
	if len(searches) == 0 || searches[0].SinceID != a1.ID || !strings.Contains(searches[0].Query, `"alpha"`) || !strings.Contains(searches[0].Query, `("beta" "test")`) {
		t.Errorf("searches %+v, want one since %d for alpha and beta", searches, a1.ID)
	}
	if it, _ := rec.ByID(tweetID(b1)); !slices.Equal(it.Terms, []string{"beta test"}) || it.Text != "test of beta one, during the gap" {
		t.Errorf("backfilled item %+v", it)
	}
	if n := len(rec.All()); n != 3 {
		t.Errorf("%d items, want 3 (each once)", n)
	}
	testkit.WaitFor(t, waitDeadline, "Err to clear", func() bool { return tr.Err() == nil })

	// Removing a subscriber narrows the track; its tweets stop.
	tr.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{beta}...))
	testkit.WaitFor(t, waitDeadline, "stream tracking beta test", func() bool { return slices.Equal(openTracks(srv), []string{"beta test"}) })
	a3 := srv.Publish(twitterserver.Tweet{Text: "alpha three"})
	b2 := srv.Publish(twitterserver.Tweet{Text: "beta two test"})
	testkit.WaitFor(t, waitDeadline, "b2", func() bool { return rec.Has(tweetID(b2)) })
	if rec.Has(tweetID(a3)) {
		t.Error("a tweet for a removed term was emitted")
	}
}

func TestTracker_DebouncesRapidChanges(t *testing.T) {
	srv, base := newServer(t)
	opts := testOptions(base)
	opts.ReopenDelay = 300 * time.Millisecond
	tr, _ := start(t, opts, spec(1, "a0"))
	testkit.WaitFor(t, waitDeadline, "first stream", func() bool { return srv.Streaming() == 1 })
	var specs []api.SubscriberSpec
	for i := range 10 {
		specs = append(specs, spec(int64(i+1), fmt.Sprintf("a%d", i)))
		tr.SetSubscribers(spawntest.Subs(t, specs...))
	}
	testkit.WaitFor(t, waitDeadline, "stream with all ten terms", func() bool { return srv.Open() == 1 && len(srv.OpenTracks()[0]) == 10 })
	if n := srv.Streaming(); n != 2 {
		t.Errorf("%d connections for ten quick changes, want 2 (the first, then one re-open)", n)
	}
}

func TestKind(t *testing.T) {
	if _, err := New(Options{Credentials: Credentials{ConsumerKey: "only"}}); err == nil {
		t.Error("New accepted incomplete credentials")
	}
	if _, err := New(Options{Credentials: testCreds, APIURL: "ftp://x"}); err == nil {
		t.Error("New accepted an ftp API URL")
	}
	k, err := New(Options{Credentials: testCreds})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		terms []string
		ok    bool
	}{
		{"plain", []string{"golang", "Rust Lang"}, true},
		{"sixty bytes", []string{strings.Repeat("x", MaxTrackBytes)}, true},
		{"too long", []string{strings.Repeat("x", MaxTrackBytes+1)}, false},
		{"comma list", []string{"a,b"}, true},
		{"boolean query", []string{`("black widow" OR #spawn) -marvel lang:en`}, true},
		{"negations only", []string{"-java"}, false},
		{"unclosed group", []string{"(golang"}, false},
		{"empty", []string{" "}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{CrawlerID: 9, Source: api.SourceTwitter, Query: tc.terms}))
			if tc.ok != (err == nil) {
				t.Fatalf("Keys(%q) = %v, %v", tc.terms, keys, err)
			}
			if tc.ok && !slices.Equal(keys, []string{Key}) {
				t.Errorf("keys %v", keys)
			}
		})
	}
	if _, err := k.New("rss:x"); err == nil {
		t.Error("New accepted a foreign key")
	}
	_, err = Unconfigured().Keys(spawntest.Sub(t, api.SubscriberSpec{CrawlerID: 3, Source: api.SourceTwitter, Query: []string{"x"}}))
	if !errors.Is(err, ErrNotConfigured) || !errors.Is(err, source.ErrUnsupported) ||
		!strings.Contains(err.Error(), "twitter credentials not configured on this spawn") {
		t.Errorf("unconfigured Keys: %v", err)
	}
}

func TestMatcher(t *testing.T) {
	m := newMatcher([]string{"c++", "go", "golang", "new release", "über", "#rust", "学习"})
	cases := []struct {
		text string
		want []string
	}{
		{"Go is good", []string{"go"}},
		{"good gopher", nil},
		{"#Golang rocks", []string{"golang"}},
		{"golang, go!", []string{"go", "golang"}},
		{"release of something new", []string{"new release"}},
		{"a new thing", nil},
		{"I write C++ daily", []string{"c++"}},
		{"Über alles", []string{"über"}},
		{"ubers", nil},
		{"love #rust", []string{"#rust"}},
		{"love rust", nil},
		{"golang’s generics", []string{"golang"}},
		{"«golang»—fast", []string{"golang"}},
		{"学习golang。", []string{"golang", "学习"}},
		{"go\u200blang", []string{"golang"}},
		{"golangé", nil},
	}
	for _, tc := range cases {
		if got := m.match(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("match(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestSearchQueries(t *testing.T) {
	got := searchQueries([]string{"a", "b c", "-x", `q"uote`})
	if want := []string{`"a" OR ("b" "c") OR "-x" OR "quote"`}; !slices.Equal(got, want) {
		t.Errorf("searchQueries = %q, want %q", got, want)
	}
	qs := searchQueries(manyTerms(0, 400))
	n := 0
	for _, q := range qs {
		if len(q) > maxSearchQueryBytes {
			t.Errorf("query of %d bytes", len(q))
		}
		n += strings.Count(q, " OR ") + 1
	}
	if n != 400 || len(qs) < 2 {
		t.Errorf("%d queries holding %d terms, want several holding 400", len(qs), n)
	}
}

func TestFramer(t *testing.T) {
	r := strings.NewReader("{\"a\":1}\r\n\r\n{\"b\":2}\n" + strings.Repeat("y", 100) + "\r\n{\"c\":")
	f := newFramer(r, 64)
	var got []string
	var err error
	for {
		var line []byte
		if line, err = f.Next(); err != nil {
			break
		}
		got = append(got, string(line))
	}
	if want := []string{`{"a":1}`, "", `{"b":2}`}; !slices.Equal(got, want) || !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("frames %q, err %v", got, err)
	}
	f = newFramer(strings.NewReader("{\"c\":"), 64)
	if _, err := f.Next(); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated: %v", err)
	}
}
