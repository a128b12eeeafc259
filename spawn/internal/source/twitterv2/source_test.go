package twitterv2

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fakex "github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

const (
	token = "test-bearer-token"
	wait  = spawntest.WaitTimeout
)

// testOptions are short, scaled timings for a source against the local
// server; the back-off bases stay as X states them, since the tests record
// the waits instead of sleeping them.
func testOptions(t *testing.T, apiURL string) Options {
	return Options{
		APIURL:               apiURL,
		BearerToken:          token,
		Client:               netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
		Logger:               testkit.Logger(t, "xv2"),
		StallTimeout:         500 * time.Millisecond,
		ConnectTimeout:       2 * time.Second,
		ReconcileDelay:       10 * time.Millisecond,
		RulesRequestInterval: time.Millisecond,
		ReconcileRetryMin:    20 * time.Millisecond,
		ReconcileRetryMax:    100 * time.Millisecond,
	}
}

// delays records the source's back-off waits and sleeps each only briefly.
type delays struct {
	mu  sync.Mutex
	got []time.Duration
}

// briefWait is how long a recorded back-off really waits.
const briefWait = 5 * time.Millisecond

func (d *delays) sleep(ctx context.Context, w time.Duration) bool {
	d.mu.Lock()
	d.got = append(d.got, w)
	d.mu.Unlock()
	t := time.NewTimer(briefWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (d *delays) all() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}

// run starts the source for specs until the test ends.
func run(t *testing.T, opts Options, specs ...api.SubscriberSpec) (*Source, *spawntest.Recorder, *delays) {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := k.New(Key)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.(*Source)
	d := &delays{}
	s.sleep, s.searchSleep = d.sleep, d.sleep
	s.SetSubscribers(spawntest.Subs(t, specs...))
	rec := &spawntest.Recorder{}
	spawntest.Run(t, s, rec.Emit)
	return s, rec, d
}

func spec(id int64, q string) api.SubscriberSpec {
	return spawntest.Spec(api.SourceTwitter, id, nil, q)
}

// waitRules waits until the server holds rules carrying exactly the rule
// texts of queries.
func waitRules(t *testing.T, srv *fakex.Server, queries ...string) []fakex.Rule {
	t.Helper()
	want := map[string]bool{}
	for _, q := range queries {
		want[ruleText(t, q)] = true
	}
	var rules []fakex.Rule
	testkit.WaitFor(t, wait, "the app's rules to carry the queries", func() bool {
		rules = srv.Rules()
		got := map[string]bool{}
		for _, r := range rules {
			ms, ok := splitMembers(r.Value, want)
			if !ok {
				return false
			}
			for _, m := range ms {
				got[m] = true
			}
		}
		return len(got) == len(want)
	})
	return rules
}

func TestSource_PostsReachTheSpawnOnce(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	a, b, c := spec(1, "golang"), spec(2, "golang"), spec(3, `"new release" -beta`)
	s, rec, _ := run(t, testOptions(t, url), a, b, c)
	rules := waitRules(t, srv, "golang", `"new release" -beta`)
	testkit.WaitFor(t, wait, "the stream", srv.Connected)

	p, matched := srv.Publish(fakex.Post{Text: "golang has a new release", Username: "gopher", Lang: "en",
		Metrics: fakex.Metrics{RetweetCount: 12, LikeCount: 85, ReplyCount: 3, ImpressionCount: 4000}})
	if len(matched) == 0 {
		t.Fatalf("the post matched none of %v", rules)
	}
	srv.Publish(fakex.Post{Text: "nothing to see"})
	p2, _ := srv.Publish(fakex.Post{Text: "GoLang again", ReplyTo: p.ID, ConversationID: p.ID})
	testkit.WaitFor(t, wait, "both posts", func() bool { return rec.Has("tw:"+p.ID, "tw:"+p2.ID) })

	it, _ := rec.ByID("tw:" + p.ID)
	if it.Author != "gopher" || it.URL != "https://twitter.com/gopher/status/"+p.ID || it.Lang != "en" {
		t.Errorf("item %+v", it)
	}
	if e := it.Engagement; e == nil || *e != (api.Engagement{Reposts: 12, Likes: 85}) {
		t.Errorf("engagement %+v, want the post's retweets and likes", e)
	}
	reply, _ := rec.ByID("tw:" + p2.ID)
	if reply.ReplyTo != "tw:"+p.ID || reply.ThreadID != "tw:"+p.ID {
		t.Errorf("reply links %q %q", reply.ReplyTo, reply.ThreadID)
	}
	if e := reply.Engagement; e == nil || *e != (api.Engagement{}) {
		t.Errorf("engagement of a new post %+v, want zero counts", e)
	}
	if n := len(rec.All()); n != 2 {
		t.Fatalf("%d items emitted, want 2 (each post once)", n)
	}
	if q := srv.Connections()[0].Query; !strings.Contains(q, "expansions=author_id") || !strings.Contains(q, "public_metrics") {
		t.Errorf("stream query %q does not ask for the author and the public metrics", q)
	}
	st := s.Stats()
	var read, emitted uint64
	for _, r := range st.Rules {
		read += r.Read
		emitted += r.Emitted
	}
	if st.Read != 2 || st.Emitted != 2 || read < 2 || emitted < 2 {
		t.Errorf("stats %+v", st)
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

func TestSource_RuleChangesTouchOnlyTheChangedRules(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	opts := testOptions(t, url)
	opts.MaxRuleLength = 20 // one or two queries a rule
	foreign := srv.AddRule("someone else", "theirs")
	a, b, c := spec(1, "alpha"), spec(2, "bravo"), spec(3, "charlie delta")
	s, _, _ := run(t, opts, a, b, c)
	before := waitRules(t, srv, "alpha", "bravo", "charlie delta")
	if slices.ContainsFunc(before, func(r fakex.Rule) bool { return r.ID == foreign.ID }) {
		t.Fatal("a rule the spawn did not make survived")
	}
	reconciles := s.Stats().Reconciles
	n := len(srv.RulesRequests())

	s.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{a, b, c, spec(4, "echo")}...))
	after := waitRules(t, srv, "alpha", "bravo", "charlie delta", "echo")
	testkit.WaitFor(t, wait, "the reconcile", func() bool { return s.Stats().Reconciles > reconciles })
	for _, r := range before {
		if !slices.Contains(after, r) {
			t.Errorf("rule %q was replaced when only a query was added", r.Value)
		}
	}
	for _, req := range srv.RulesRequests()[n:] {
		if len(req.Deletes) > 0 {
			t.Errorf("a query added, yet rules %v were deleted", req.Deletes)
		}
		if !req.DryRun && len(req.Adds) > 0 && (len(req.Adds) != 1 || req.Adds[0].Value != "echo") {
			t.Errorf("a query added, yet rules %v were created", req.Adds)
		}
	}
}

func TestSource_RefusedRuleFailsOnlyItsCrawler(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	good, bad := spec(1, "rust"), spec(2, "golang lang:zz")
	s, _, _ := run(t, testOptions(t, url), good, bad)
	waitRules(t, srv, "rust")
	testkit.WaitFor(t, wait, "the refusal", func() bool { return s.ErrFor(bad) != nil })
	err := s.ErrFor(bad)
	if !errors.Is(err, ErrRuleRefused) || errors.Is(err, source.ErrDegraded) || !strings.Contains(err.Error(), "zz") {
		t.Fatalf("ErrFor(refused) = %v, want a lasting ErrRuleRefused naming the language", err)
	}
	if err := s.ErrFor(good); err != nil {
		t.Fatalf("ErrFor(good) = %v, want nil", err)
	}
	for _, r := range srv.Rules() {
		if strings.Contains(r.Value, "lang:zz") {
			t.Fatalf("the refused rule %q was stored", r.Value)
		}
	}
	// Dropping the crawler drops its error.
	s.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{good}...))
	testkit.WaitFor(t, wait, "the error to clear", func() bool { return s.Err() == nil })
}

func TestSource_QueriesPastTheRuleCountFailClearly(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token, MaxRules: 1})
	opts := testOptions(t, url)
	opts.MaxRules, opts.MaxRuleLength = 1, 20
	specs := []api.SubscriberSpec{spec(1, "alphaalpha"), spec(2, "bravobravo"), spec(3, "charliecharlie")}
	s, _, _ := run(t, opts, specs...)
	testkit.WaitFor(t, wait, "a reconcile", func() bool { return s.Stats().Reconciles > 0 })
	failed := 0
	for _, sp := range specs {
		if err := s.ErrFor(sp); err != nil {
			if !errors.Is(err, ErrNoRoom) {
				t.Fatalf("ErrFor = %v, want ErrNoRoom", err)
			}
			failed++
		}
	}
	if rules := srv.Rules(); len(rules) != 1 || failed != 2 {
		t.Fatalf("%d rules held and %d queries failed; want 1 and 2", len(rules), failed)
	}
}

func TestSource_BacksOffAsXAsks(t *testing.T) {
	cases := []struct {
		name   string
		inject func(srv *fakex.Server)
		want   []time.Duration
		is     error
	}{
		{"429", func(srv *fakex.Server) { srv.FailStreams(429, 429, 429) },
			[]time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}, ErrRateLimited},
		{"503", func(srv *fakex.Server) { srv.FailStreams(503, 503, 503) },
			[]time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second}, ErrStatus},
		// Held elsewhere: ten short retries two seconds apart, as after a
		// handover, then X's minute-long back-off.
		{"TooManyConnections", func(srv *fakex.Server) { srv.Hold() },
			append(slices.Repeat([]time.Duration{2 * time.Second}, 10), time.Minute, 2*time.Minute), ErrTooManyConnections},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
			tc.inject(srv)
			s, _, d := run(t, testOptions(t, url), spec(1, "golang"))
			testkit.WaitFor(t, wait, "the back-offs", func() bool { return len(d.all()) >= len(tc.want) })
			if !s.errs.Saw(tc.is) {
				t.Fatalf("Err() never reported %v (now %v)", tc.is, s.Err())
			}
			srv.Release()
			testkit.WaitFor(t, wait, "the stream", srv.Connected)
			if got := d.all(); !slices.Equal(got[:len(tc.want)], tc.want) {
				t.Fatalf("waits %v, want %v", got, tc.want)
			}
			testkit.WaitFor(t, wait, "the error to clear", func() bool { return s.Err() == nil })
		})
	}
}

// TestSource_TooManyConnectionsPassesWhileRetriedSoon: during the short
// retries of a handover the refusal shows as passing (the subscribers keep
// running); once they are spent, another client holds the stream and the
// subscribers fail.
func TestSource_TooManyConnectionsPassesWhileRetriedSoon(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	srv.Hold()
	s, _, d := run(t, testOptions(t, url), spec(1, "golang"))
	testkit.WaitFor(t, wait, "a short retry", func() bool { return len(d.all()) >= 1 })
	if err := s.Err(); !errors.Is(err, ErrTooManyConnections) || !errors.Is(err, source.ErrDegraded) {
		t.Fatalf("Err() during the short retries = %v, want ErrTooManyConnections, passing", err)
	}
	testkit.WaitFor(t, wait, "the short retries spent", func() bool { return len(d.all()) >= 11 })
	if err := s.Err(); !errors.Is(err, ErrTooManyConnections) || errors.Is(err, source.ErrDegraded) {
		t.Fatalf("Err() after the short retries = %v, want ErrTooManyConnections, lasting", err)
	}
}

// TestSource_ShortRetriesKeepARequestReserve: the short retries stop when
// X's x-rate-limit-remaining for the stream endpoint falls to the
// reserve, leaving the rest of the window's 50 requests to X's back-off.
func TestSource_ShortRetriesKeepARequestReserve(t *testing.T) {
	// 13 requests a window, 10 kept in reserve: the first two refusals
	// leave 12 and 11 and are retried soon, the third leaves 10.
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token, StreamConnectLimit: 13})
	srv.Hold()
	_, _, d := run(t, testOptions(t, url), spec(1, "golang"))
	testkit.WaitFor(t, wait, "the back-offs", func() bool { return len(d.all()) >= 4 })
	want := []time.Duration{2 * time.Second, 2 * time.Second, time.Minute, 2 * time.Minute}
	if got := d.all()[:4]; !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
}

func TestSource_NetworkErrorsBackOffLinearly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every connection is refused
	_, _, d := run(t, testOptions(t, "http://"+addr), spec(1, "golang"))
	testkit.WaitFor(t, wait, "five back-offs", func() bool { return len(d.all()) >= 5 })
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second, 1250 * time.Millisecond}
	if got := d.all()[:5]; !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
}

func TestSource_SkipsMalformedAndOversizedMessages(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	opts := testOptions(t, url)
	opts.MaxLineBytes = 2048
	s, rec, _ := run(t, opts, spec(1, "golang"))
	waitRules(t, srv, "golang")
	testkit.WaitFor(t, wait, "the stream", srv.Connected)
	srv.SendRaw([]byte("{not json\r\n"), false)
	srv.SendRaw([]byte(`{"data":{"id":"12x","text":"golang"}}`+"\r\n"), false)
	srv.SendRaw([]byte(`{"data":{"id":"5","text":"`+strings.Repeat("golang ", 1000)+`"}}`+"\r\n"), false)
	p, _ := srv.Publish(fakex.Post{Text: "golang after the noise"})
	testkit.WaitFor(t, wait, "the good post", func() bool { return rec.Has("tw:" + p.ID) })
	st := s.Stats()
	if st.Malformed != 2 || st.Oversized != 1 || st.Connects != 1 || len(rec.All()) != 1 {
		t.Fatalf("stats %+v, items %d; want 2 malformed, 1 oversized, 1 connection, 1 item", st, len(rec.All()))
	}
}

func TestSource_ReconnectsAfterAStall(t *testing.T) {
	// The dropped connection holds the app's slot for a while, scaled
	// down as the stall timeout is.
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token, KeepAlive: 50 * time.Millisecond, SlotHold: 50 * time.Millisecond})
	s, rec, d := run(t, testOptions(t, url), spec(1, "golang"))
	waitRules(t, srv, "golang")
	testkit.WaitFor(t, wait, "the stream", srv.Connected)
	srv.Stall()
	testkit.WaitFor(t, wait, "the stall to be noticed", func() bool { return s.Stats().Stalls > 0 })
	if !s.errs.Saw(ErrStalled) {
		t.Fatalf("Err() never reported ErrStalled (now %v)", s.Err())
	}
	srv.Resume()
	testkit.WaitFor(t, wait, "a new connection", func() bool { return s.Stats().Connects >= 2 && srv.Connected() })
	if got := d.all(); len(got) == 0 || got[0] != DefaultNetworkBackoffStep {
		t.Fatalf("waits %v, want the first at %v", got, DefaultNetworkBackoffStep)
	}
	p, _ := srv.Publish(fakex.Post{Text: "golang is back"})
	testkit.WaitFor(t, wait, "a post after the reconnect", func() bool { return rec.Has("tw:" + p.ID) })
}

func TestSource_CutStreamReconnects(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	s, rec, _ := run(t, testOptions(t, url), spec(1, "golang"))
	waitRules(t, srv, "golang")
	testkit.WaitFor(t, wait, "the stream", srv.Connected)
	srv.SendRaw([]byte(`{"data":{"id":"1","te`), true)
	testkit.WaitFor(t, wait, "a new connection", func() bool { return s.Stats().Connects >= 2 && srv.Connected() })
	p, _ := srv.Publish(fakex.Post{Text: "golang"})
	testkit.WaitFor(t, wait, "a post after the reconnect", func() bool { return rec.Has("tw:" + p.ID) })
}

func TestSource_RefusedTokenIsReported(t *testing.T) {
	_, url := fakex.Start(t, fakex.Options{BearerToken: "another token"})
	s, _, _ := run(t, testOptions(t, url), spec(1, "golang"))
	streamErr := func() error { return s.errs.ErrOf(func(p string) bool { return p == streamPart }) }
	testkit.WaitFor(t, wait, "the refusal", func() bool { return errors.Is(streamErr(), ErrUnauthorized) })
	if err := streamErr(); errors.Is(err, source.ErrDegraded) || !strings.Contains(err.Error(), "--twitter-bearer-token") {
		t.Fatalf("stream error %v, want a lasting refusal naming the flag", err)
	}
}

// TestSource_InStreamErrorIsReportedAndSurvived: X's operational-disconnect
// document arrives inside the stream, which X then ends; the source
// reports it (its detail in the error it shows while it waits to
// reconnect), reconnects, and posts flow again.
func TestSource_InStreamErrorIsReportedAndSurvived(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	s, rec, d := run(t, testOptions(t, url), spec(1, "golang"))
	var mu sync.Mutex
	var shown []error // the errors Err showed during each back-off
	s.sleep = func(ctx context.Context, w time.Duration) bool {
		mu.Lock()
		shown = append(shown, s.Err())
		mu.Unlock()
		return d.sleep(ctx, w)
	}
	waitRules(t, srv, "golang")
	testkit.WaitFor(t, wait, "the stream", srv.Connected)
	if !srv.EndStream(fakex.OperationalDisconnect) {
		t.Fatal("no stream open")
	}
	testkit.WaitFor(t, wait, "a new connection", func() bool { return s.Stats().Connects >= 2 && srv.Connected() })
	mu.Lock()
	got := slices.Clone(shown)
	mu.Unlock()
	if len(got) == 0 || !errors.Is(got[0], ErrDisconnected) || !strings.Contains(got[0].Error(), "disconnected upstream for operational reasons") {
		t.Fatalf("errors shown while reconnecting %v, want the operational disconnect", got)
	}
	if st := s.Stats(); st.Notices != 1 || st.Malformed != 0 {
		t.Errorf("stats %+v, want 1 notice and nothing malformed", st)
	}
	p, _ := srv.Publish(fakex.Post{Text: "golang is back"})
	testkit.WaitFor(t, wait, "a post after the reconnect", func() bool { return rec.Has("tw:" + p.ID) })
}

// TestSource_RepostOfALongPostIsStoredWhole: the local X sends a repost of
// a post past 280 characters as X does (the repost's text cut to
// "RT @user: …", the original in includes.tweets with its whole text in
// note_tweet, HTML-escaped, its link a t.co address); the item is the
// whole original as written, its link in full, with repost_of.
func TestSource_RepostOfALongPostIsStoredWhole(t *testing.T) {
	srv, url := fakex.Start(t, fakex.Options{BearerToken: token})
	_, rec, _ := run(t, testOptions(t, url), spec(1, "epilogue"))
	long := "Release notes <draft> & more: " + strings.Repeat("a long paragraph on generics & iterators, ", 8) +
		"see https://go.dev/doc/go1.24 and the epilogue"
	orig, _ := srv.Publish(fakex.Post{Text: long, Username: "golang", AuthorID: "113419064", Lang: "en"})
	waitRules(t, srv, "epilogue")
	testkit.WaitFor(t, wait, "the stream", srv.Connected)
	rp, matched := srv.Publish(fakex.Post{RepostOf: orig.ID, Username: "gopher", AuthorID: "42"})
	if len(matched) == 0 {
		t.Fatal("X's rule did not match the repost")
	}
	testkit.WaitFor(t, wait, "the repost", func() bool { return rec.Has("tw:" + rp.ID) })
	it, _ := rec.ByID("tw:" + rp.ID)
	if it.Text != long || it.RepostOf != "tw:"+orig.ID || it.Author != "gopher" || it.AuthorID != "42" || it.Lang != "en" {
		t.Errorf("repost item %+v", it)
	}
	if !slices.Equal(it.Links, []string{"https://go.dev/doc/go1.24"}) {
		t.Errorf("links %q", it.Links)
	}
}
