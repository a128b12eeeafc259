package stream

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// Test timings, scaled down from the defaults.
const (
	testBackoffMin   = 40 * time.Millisecond
	testBackoffMax   = 320 * time.Millisecond
	testAuthBackoff  = 200 * time.Millisecond
	testStall        = 200 * time.Millisecond
	testTick         = 20 * time.Millisecond
	testConnect      = 200 * time.Millisecond
	waitDeadline     = 10 * time.Second
	backoffTolerance = 2 * time.Second // how much later than planned a retry may come on a loaded machine
	testUser         = "acme"
	testKey          = "k3y"
)

func newServer(t *testing.T) (*streamserver.Server, string) {
	t.Helper()
	return streamserver.Start(t, streamserver.Options{Username: testUser, APIKey: testKey, TickInterval: testTick})
}

func testOptions(base string) Options {
	return Options{
		URL: base, Username: testUser, APIKey: testKey,
		Client:         netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
		BackoffMin:     testBackoffMin,
		BackoffMax:     testBackoffMax,
		AuthBackoffMin: testAuthBackoff,
		StallTimeout:   testStall,
		ConnectTimeout: testConnect,
		RequestTimeout: 2 * time.Second,
	}
}

type recorder = spawntest.Recorder

func spec(id int64, terms ...string) api.SubscriberSpec {
	return spawntest.Spec(api.SourceStream, id, nil, terms...)
}

// start runs the source for specs until the test ends (spawntest.Start).
func start(t *testing.T, opts Options, specs ...api.SubscriberSpec) (*multi, *recorder) {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ds, rec := spawntest.Start(t, k, Key, specs...)
	return ds.(*multi), rec
}

// subscribedTo reports whether the one open connection is subscribed to
// exactly n hashes.
func subscribedTo(srv *streamserver.Server, n int) bool {
	subs := srv.Subscriptions()
	return len(subs) == 1 && len(subs[0]) == n
}

// hashOf is the hash the server compiled a query to.
func hashOf(t *testing.T, srv *streamserver.Server, s api.SubscriberSpec) string {
	t.Helper()
	def, err := csdlOf(s.Query)
	if err != nil {
		t.Fatal(err)
	}
	h := streamserver.HashOf(def)
	if _, ok := srv.CSDL(h); !ok {
		t.Fatalf("query %v was not compiled", s.Query)
	}
	return h
}

// fanOut is what the node does with a query uuid: the item goes to every
// subscriber of that query.
func fanOut(items []source.Item, specs []api.SubscriberSpec) map[int64][]string {
	out := map[int64][]string{}
	for _, it := range items {
		for _, s := range specs {
			if it.QueryUUID == s.QueryUUID {
				out[s.CrawlerID] = append(out[s.CrawlerID], it.ID)
			}
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

func TestMulti_SharesOneConnectionAndFansOut(t *testing.T) {
	srv, base := newServer(t)
	g1, g2 := spec(1, "golang"), spec(2, "Golang ")
	rs, py := spec(3, `rust OR "new release"`), spec(4, "python")
	specs := []api.SubscriberSpec{g1, g2, rs, py}
	m, rec := start(t, testOptions(base), specs...)
	testkit.WaitFor(t, waitDeadline, "three subscriptions on one connection", func() bool { return subscribedTo(srv, 3) })
	if n := srv.Compiles(); n != 3 {
		t.Errorf("%d compiles, want 3 (one per distinct query)", n)
	}
	if def, _ := srv.CSDL(hashOf(t, srv, rs)); def != `interaction.content contains "new release" or interaction.content contains "rust"` {
		t.Errorf("CSDL %q", def)
	}

	created := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	a := srv.Publish(streamserver.Interaction{Content: "Golang news", Author: "gopher", Link: "https://example.com/a", CreatedAt: created})
	b := srv.Publish(streamserver.Interaction{Content: "a NEW RELEASE of something"})
	c := srv.Publish(streamserver.Interaction{Content: "python and golang"})
	srv.Publish(streamserver.Interaction{Content: "release news that is new"}) // not the phrase
	id := func(it streamserver.Interaction) string { return "ds:" + it.ID }
	testkit.WaitFor(t, waitDeadline, "four items", func() bool { return len(rec.All()) >= 4 })

	var first source.Item
	for _, it := range rec.All() {
		if it.ID == id(a) {
			first = it
		}
	}
	if first.Author != "gopher" || first.Text != "Golang news" || first.URL != "https://example.com/a" ||
		!first.PublishedAt.Equal(created) || first.QueryUUID != g1.QueryUUID || first.FetchedAt.IsZero() {
		t.Errorf("item %+v", first)
	}
	if n := rec.Count(id(c)); n != 2 {
		t.Errorf("an interaction matching two queries was emitted %d times, want once per query", n)
	}
	got := fanOut(rec.All(), specs)
	want := map[int64][]string{1: {id(a), id(c)}, 2: {id(a), id(c)}, 3: {id(b)}, 4: {id(c)}}
	for crawler, ids := range want {
		slices.Sort(ids)
		if !slices.Equal(got[crawler], ids) {
			t.Errorf("crawler %d got %v, want %v", crawler, got[crawler], ids)
		}
	}
	if n := len(rec.All()); n != 4 {
		t.Errorf("%d items, want 4", n)
	}
	bill := srv.Billing()
	if bill[hashOf(t, srv, g1)] != 2 || bill[hashOf(t, srv, rs)] != 1 || bill[hashOf(t, srv, py)] != 1 {
		t.Errorf("billing %v", bill)
	}
	if n := srv.Connections(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	if err := m.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

func TestMulti_FollowsSubscribersOnTheLiveConnection(t *testing.T) {
	srv, base := newServer(t)
	g, r := spec(1, "golang"), spec(2, "rust")
	m, rec := start(t, testOptions(base), g)
	testkit.WaitFor(t, waitDeadline, "one subscription", func() bool { return subscribedTo(srv, 1) })

	m.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{g, r}...))
	testkit.WaitFor(t, waitDeadline, "two subscriptions", func() bool { return subscribedTo(srv, 2) })
	m.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{r}...))
	testkit.WaitFor(t, waitDeadline, "golang unsubscribed", func() bool { return subscribedTo(srv, 1) && srv.Subscriptions()[0][0] == hashOf(t, srv, r) })
	gone := srv.Publish(streamserver.Interaction{Content: "golang only"})
	kept := srv.Publish(streamserver.Interaction{Content: "rust only"})
	testkit.WaitFor(t, waitDeadline, "the rust item", func() bool { return rec.Count("ds:"+kept.ID) == 1 })
	if rec.Count("ds:"+gone.ID) != 0 {
		t.Error("an item of an unsubscribed query was emitted")
	}

	// Coming back uses the cached hash.
	m.SetSubscribers(spawntest.Subs(t, []api.SubscriberSpec{r, g}...))
	testkit.WaitFor(t, waitDeadline, "golang again", func() bool { return subscribedTo(srv, 2) })
	if n := srv.Compiles(); n != 2 {
		t.Errorf("%d compiles, want 2 (the hash is cached)", n)
	}
	var actions []string
	for _, e := range srv.Events() {
		if !e.OK {
			t.Errorf("refused: %+v", e)
		}
		actions = append(actions, e.Action+" "+map[string]string{hashOf(t, srv, g): "golang", hashOf(t, srv, r): "rust"}[e.Hash])
	}
	want := []string{"subscribe golang", "subscribe rust", "unsubscribe golang", "subscribe golang"}
	if !slices.Equal(actions, want) {
		t.Errorf("messages %q, want %q", actions, want)
	}
	if n := srv.Connections(); n != 1 {
		t.Errorf("%d connections: subscriber changes must not reconnect", n)
	}
}

func TestMulti_ReconnectsWithBackoffAndResubscribes(t *testing.T) {
	srv, base := newServer(t)
	g, r := spec(1, "golang"), spec(2, "rust")
	m, rec := start(t, testOptions(base), g, r)
	testkit.WaitFor(t, waitDeadline, "two subscriptions", func() bool { return subscribedTo(srv, 2) })

	srv.FailConnections(503, 3)
	srv.Cut()
	testkit.WaitFor(t, waitDeadline, "the failure in Err", func() bool { return m.sawErr(ErrStatus) })
	testkit.WaitFor(t, waitDeadline, "resubscribed after reconnecting", func() bool { return srv.Connections() == 2 && subscribedTo(srv, 2) })
	attempts := srv.Attempts()
	if len(attempts) != 5 {
		t.Fatalf("%d attempts, want 5", len(attempts))
	}
	// Waits double from BackoffMin and are drawn from their upper half.
	for i, d := range []time.Duration{testBackoffMin, 2 * testBackoffMin, 4 * testBackoffMin} {
		g := attempts[i+2].At.Sub(attempts[i+1].At)
		if g < d/2 || g > d+backoffTolerance {
			t.Errorf("retry %d after %v, want between %v and %v", i+1, g.Round(time.Millisecond), d/2, d)
		}
	}
	it := srv.Publish(streamserver.Interaction{Content: "rust after the outage"})
	testkit.WaitFor(t, waitDeadline, "an item after reconnecting", func() bool { return rec.Count("ds:"+it.ID) == 1 })
	testkit.WaitFor(t, waitDeadline, "Err to clear", func() bool { return m.Err() == nil })
	if n := srv.Compiles(); n != 2 {
		t.Errorf("%d compiles, want 2 (hashes are cached across reconnects)", n)
	}
}

func TestMulti_StallReconnects(t *testing.T) {
	srv, base := newServer(t)
	m, rec := start(t, testOptions(base), spec(1, "quiet"))
	testkit.WaitFor(t, waitDeadline, "subscribed", func() bool { return subscribedTo(srv, 1) })
	srv.Stall(true)
	testkit.WaitFor(t, waitDeadline, "a stall", func() bool { return m.stats.stalls.Load() >= 1 })
	srv.Stall(false)
	testkit.WaitFor(t, waitDeadline, "a new connection", func() bool { return srv.Connections() >= 2 && subscribedTo(srv, 1) })
	it := srv.Publish(streamserver.Interaction{Content: "quiet no more"})
	testkit.WaitFor(t, waitDeadline, "item after the stall", func() bool { return rec.Count("ds:"+it.ID) == 1 })
}

func TestMulti_TicksAreNotStalls(t *testing.T) {
	srv, base := newServer(t)
	m, _ := start(t, testOptions(base), spec(1, "idle"))
	want := int64(3 * testStall / testTick)
	testkit.WaitFor(t, waitDeadline, "ticks", func() bool { return m.stats.ticks.Load() >= want })
	if n := m.stats.stalls.Load(); n != 0 {
		t.Errorf("%d stalls on a ticking connection", n)
	}
	if n := srv.Connections(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestMulti_BadAPIKey(t *testing.T) {
	srv, base := newServer(t)
	opts := testOptions(base)
	opts.APIKey = "wrong"
	m, _ := start(t, opts, spec(1, "secret"))
	testkit.WaitFor(t, waitDeadline, "two refusals", func() bool { return srv.Rejected() >= 2 })
	err := m.Err()
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--stream-api-key") {
		t.Errorf("Err() = %v, want ErrUnauthorized naming 401 and the flag", err)
	}
	a := srv.Attempts()
	if g := a[1].At.Sub(a[0].At); g < testAuthBackoff/2 {
		t.Errorf("retried a refused key after %v, want at least %v", g, testAuthBackoff/2)
	}
}

func TestMulti_KeyRevokedWhileConnected(t *testing.T) {
	srv, base := newServer(t)
	m, rec := start(t, testOptions(base), spec(1, "golang"))
	testkit.WaitFor(t, waitDeadline, "subscribed", func() bool { return subscribedTo(srv, 1) })
	srv.RefuseKeys(true)
	srv.Cut()
	testkit.WaitFor(t, waitDeadline, "the refusal in Err", func() bool { return m.sawErr(ErrUnauthorized) })
	srv.RefuseKeys(false)
	testkit.WaitFor(t, waitDeadline, "back and subscribed", func() bool { return subscribedTo(srv, 1) })
	it := srv.Publish(streamserver.Interaction{Content: "golang again"})
	testkit.WaitFor(t, waitDeadline, "item", func() bool { return rec.Count("ds:"+it.ID) == 1 })
}

func TestMulti_SubscriptionRefused(t *testing.T) {
	srv, base := newServer(t)
	g := spec(1, "golang")
	m, _ := start(t, testOptions(base), g)
	testkit.WaitFor(t, waitDeadline, "subscribed", func() bool { return subscribedTo(srv, 1) })
	srv.Forget(hashOf(t, srv, g))
	srv.Cut()
	testkit.WaitFor(t, waitDeadline, "the refusal in Err", func() bool { return errors.Is(m.Err(), ErrSubscribe) })
	if !strings.Contains(m.Err().Error(), "Stream not found") {
		t.Errorf("Err() = %v, want the service's reason", m.Err())
	}
}

func TestMulti_BadMessages(t *testing.T) {
	cases := []struct {
		name      string
		send      func(srv *streamserver.Server, hash string)
		want      error
		reconnect bool
	}{
		{"not JSON", func(s *streamserver.Server, _ string) { s.SendRaw([]byte("hello")) }, ErrMalformed, false},
		{"truncated JSON", func(s *streamserver.Server, h string) {
			s.SendRaw([]byte(`{"hash":"` + h + `","data":{"interaction":{"id":"1","content":"golang`))
		}, ErrTruncated, false},
		{"data without interaction", func(s *streamserver.Server, h string) { s.SendRaw([]byte(`{"hash":"` + h + `","data":{}}`)) }, ErrMalformed, false},
		{"interaction without id", func(s *streamserver.Server, h string) {
			s.SendRaw([]byte(`{"hash":"` + h + `","data":{"interaction":{"content":"golang"}}}`))
		}, ErrMalformed, false},
		{"trailing data", func(s *streamserver.Server, _ string) { s.SendRaw([]byte(`{"tick":1} {"tick":2}`)) }, ErrMalformed, false},
		{"huge message", func(s *streamserver.Server, _ string) {
			s.SendRaw([]byte(`{"tick":1,"message":"` + strings.Repeat("x", DefaultMaxMessageBytes) + `"}`))
		}, ErrMessageTooLarge, true},
		{"message cut off by a dropped connection", func(s *streamserver.Server, h string) {
			s.Truncate([]byte(`{"hash":"` + h + `","data":{"interaction":{"id":"1","content":"` + strings.Repeat("y", 64<<10)))
		}, ErrConnectionLost, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := newServer(t)
			g := spec(1, "golang")
			m, rec := start(t, testOptions(base), g)
			testkit.WaitFor(t, waitDeadline, "subscribed", func() bool { return subscribedTo(srv, 1) })
			tc.send(srv, hashOf(t, srv, g))
			testkit.WaitFor(t, waitDeadline, fmt.Sprintf("Err() to wrap %v", tc.want), func() bool { return m.sawErr(tc.want) })
			if tc.reconnect {
				testkit.WaitFor(t, waitDeadline, "a new connection", func() bool { return srv.Connections() == 2 && subscribedTo(srv, 1) })
			} else if n := srv.Connections(); n != 1 {
				t.Errorf("%d connections: a bad message must not cost the connection", n)
			}
			it := srv.Publish(streamserver.Interaction{Content: "golang after the bad message"})
			testkit.WaitFor(t, waitDeadline, "a good item", func() bool { return rec.Count("ds:"+it.ID) == 1 })
			if n := len(rec.All()); n != 1 {
				t.Errorf("%d items, want only the good one", n)
			}
		})
	}
}

func TestMulti_ServerThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	m, _ := start(t, testOptions("http://"+ln.Addr().String()), spec(1, "x"))
	testkit.WaitFor(t, waitDeadline, "a connect timeout", func() bool { return errors.Is(m.Err(), ErrConnectionLost) })
	testkit.WaitFor(t, waitDeadline, "a retry", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(held) >= 2
	})
	if n := m.stats.connects.Load(); n != 0 {
		t.Errorf("%d connects to a server that never answers", n)
	}
}

func TestMulti_CompileFailureIsRetried(t *testing.T) {
	srv := streamserver.New(streamserver.Options{Username: testUser, APIKey: testKey, TickInterval: testTick})
	var fail sync.Mutex
	failing := true
	h := srv.Handler()
	base := fakehttp.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail.Lock()
		f := failing
		fail.Unlock()
		if f && r.URL.Path == "/v1/compile" {
			http.Error(w, `{"error":"compiler busy"}`, http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}), srv.Close)
	m, rec := start(t, testOptions(base), spec(1, "golang"))
	testkit.WaitFor(t, waitDeadline, "the compile failure in Err", func() bool { return errors.Is(m.Err(), ErrCompile) && errors.Is(m.Err(), ErrStatus) })
	if !strings.Contains(m.Err().Error(), "compiler busy") {
		t.Errorf("Err() = %v, want the service's message", m.Err())
	}
	fail.Lock()
	failing = false
	fail.Unlock()
	testkit.WaitFor(t, waitDeadline, "subscribed after a retry", func() bool { return subscribedTo(srv, 1) })
	it := srv.Publish(streamserver.Interaction{Content: "golang"})
	testkit.WaitFor(t, waitDeadline, "item", func() bool { return rec.Count("ds:"+it.ID) == 1 })
	testkit.WaitFor(t, waitDeadline, "Err to clear", func() bool { return m.Err() == nil })
}

func TestKind(t *testing.T) {
	for _, o := range []Options{{URL: "https://x"}, {URL: "ftp://x", APIKey: "k"}, {URL: "https://x?q=1", APIKey: "k"}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	k, err := New(Options{URL: "https://stream.example/base/", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if k.compileURL != "https://stream.example/base/v1/compile" || k.multiURL != "wss://stream.example/base/multi" {
		t.Errorf("endpoints %s %s", k.compileURL, k.multiURL)
	}
	if keys, err := k.Keys(spawntest.Sub(t, spec(1, "a", "b"))); err != nil || !slices.Equal(keys, []string{Key}) {
		t.Errorf("Keys = %v, %v", keys, err)
	}
	if _, err := k.Keys(spawntest.Sub(t, api.SubscriberSpec{CrawlerID: 2, Source: api.SourceStream, Query: []string{" "}, QueryUUID: "u"})); err == nil {
		t.Error("Keys accepted an empty query")
	}
	if _, err := k.New("twitter"); err == nil {
		t.Error("New accepted a foreign key")
	}
	_, err = Unconfigured().Keys(spawntest.Sub(t, spec(3, "x")))
	if !errors.Is(err, ErrNotConfigured) || !errors.Is(err, source.ErrUnsupported) {
		t.Errorf("unconfigured Keys: %v", err)
	}
}

// TestCSDLRoundTrip checks that the service reads back, as the phrases of
// the definition, the terms that cover a query.
func TestCSDLRoundTrip(t *testing.T) {
	cases := []struct {
		query []string
		want  []string
	}{
		{[]string{`"Black Widow" OR golang OR #go`}, []string{"#go", "black widow", "golang"}},
		{[]string{"golang -java lang:en"}, []string{"golang"}},
		{[]string{"golang", "new release"}, []string{"golang", "release"}},
		{[]string{`back\slash`}, []string{`back\slash`}},
	}
	for _, tc := range cases {
		def, err := csdlOf(tc.query)
		if err != nil {
			t.Fatalf("csdl(%q): %v", tc.query, err)
		}
		phrases, err := streamserver.ParseCSDL(def)
		if err != nil {
			t.Fatalf("server refused %q: %v", def, err)
		}
		var got []string
		for _, p := range phrases {
			got = append(got, strings.Join(p, " "))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("query %q: server read %q, want %q", tc.query, got, tc.want)
		}
	}
	if _, err := csdlOf([]string{"-java"}); err == nil {
		t.Error("a query of negations only compiled")
	}
}

// sawErr reports whether one of the recent errors, cleared or not, wraps
// target: a failure that a reconnect has already repaired still shows.
func (m *multi) sawErr(target error) bool { return m.errs.Saw(target) }

// TestMulti_ReadyOnceTheSubscriptionIsConfirmed: a query is ready (its
// items arrive from now on) once the service confirmed its subscription
// on the live connection, and not after the connection is lost; the
// service keeps nothing for a query not yet subscribed.
func TestMulti_ReadyOnceTheSubscriptionIsConfirmed(t *testing.T) {
	srv, base := newServer(t)
	g := spec(1, "golang")
	srv.FailConnections(503, 1) // the first attempt is refused
	m, _ := start(t, testOptions(base), g)
	if m.Ready(g) {
		t.Fatal("ready before connecting")
	}
	testkit.WaitFor(t, waitDeadline, "ready", func() bool { return m.Ready(g) })
	if !subscribedTo(srv, 1) {
		t.Fatal("ready without a subscription on the server")
	}
	if m.Ready(spec(2, "rust")) {
		t.Fatal("a query never subscribed is ready")
	}
	srv.FailConnections(503, 2)
	srv.Cut()
	testkit.WaitFor(t, waitDeadline, "not ready while disconnected", func() bool { return !m.Ready(g) })
	testkit.WaitFor(t, waitDeadline, "ready again", func() bool { return m.Ready(g) })
}

// csdlOf parses a query as the node does, then compiles it.
func csdlOf(terms []string) (string, error) {
	q, err := query.ParseList(terms)
	if err != nil {
		return "", err
	}
	return csdl(q)
}
