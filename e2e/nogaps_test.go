package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	mastodonfake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// No gaps: a source without replay (X's filtered stream, Mastodon's
// streaming API) fills what a reconnect, a handover or a move left out
// from the service's history, and a spawn leaves without dropping
// anything. These tests run the built binaries at default timings.

// noGapsWait bounds every wait of these tests.
const noGapsWait = 90 * time.Second

// fleet is a hub and spawns run as processes, sharing a file store.
type fleet struct {
	t       *testing.T
	bin     string
	env     []string
	hubURL  string
	dataDir string
	client  *api.Client
	spawns  []*proc
	ctx     context.Context
}

// startFleet starts a hub at default timings on SQLite.
func startFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{t: t, bin: binDir(t), ctx: context.Background()}
	dir := t.TempDir()
	f.dataDir = filepath.Join(dir, "data")
	addr := testkit.FreeAddr(t)
	f.hubURL = "http://" + addr
	f.env = []string{"BW_NODE_TOKEN=" + clustertest.NodeToken, "BW_ADMIN_TOKEN=" + clustertest.AdminToken}
	startProc(t, f.env, filepath.Join(f.bin, "hub"), "--listen", addr, "--db", "sqlite://"+filepath.Join(dir, "hub.db"))
	f.client = api.NewClient(f.hubURL, clustertest.AdminToken, nil)
	return f
}

// spawn starts a spawn with the fleet's store and extra flags, and waits
// until the hub lists it.
func (f *fleet) spawn(extra ...string) *proc {
	f.t.Helper()
	args := append([]string{"--hub", f.hubURL, "--store", "file://" + f.dataDir, "--allow-targets", "127.0.0.0/8"}, extra...)
	p := startProc(f.t, f.env, filepath.Join(f.bin, "spawn"), args...)
	f.spawns = append(f.spawns, p)
	testkit.WaitFor(f.t, noGapsWait, "the spawn registered", func() bool {
		id := nodeIDOf(p)
		nodes, err := f.client.ListNodes(f.ctx)
		return err == nil && id != "" && slices.ContainsFunc(nodes, func(n api.Node) bool { return n.ID == id })
	})
	return p
}

// byNode returns the spawn process registered as node id.
func (f *fleet) byNode(id string) *proc {
	for _, p := range f.spawns {
		if nodeIDOf(p) == id {
			return p
		}
	}
	f.t.Fatalf("no spawn runs node %s", id)
	return nil
}

// crawler creates a crawler of source with query for a new user.
func (f *fleet) crawler(userID int64, source string, query ...string) api.Crawler {
	f.t.Helper()
	c, err := f.client.CreateCrawler(f.ctx, api.CrawlerCreate{UserID: userID, Source: source, Query: query})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fleet) user() api.User {
	f.t.Helper()
	u, err := f.client.CreateUser(f.ctx, api.UserCreate{Name: fmt.Sprintf("nogaps-%d", time.Now().UnixNano())})
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// storedOnce checks that the store holds for a crawler exactly the ids of
// want, each once, and reports what is missing and what is extra.
func (f *fleet) storedOnce(crawlerID int64, want []string) (missing, extra []string, twice int) {
	counts := map[string]int{}
	for _, c := range storedIn(f.t, f.dataDir, crawlerID) {
		counts[c.ID]++
	}
	for _, id := range want {
		if counts[id] == 0 {
			missing = append(missing, id)
		}
	}
	for id, n := range counts {
		if n > 1 {
			twice++
		}
		if !slices.Contains(want, id) {
			extra = append(extra, id)
		}
	}
	return missing, extra, twice
}

// missingSummary says how much of want a store lacks, naming the first
// ids missing, for a wait's failure.
func missingSummary(missing []string, want int) string {
	shown := missing[:min(len(missing), 20)]
	return fmt.Sprintf("%d of %d stored, missing %v", want-len(missing), want, shown)
}

// xPublisher publishes posts to the local X at a steady pace, cycling
// through words, and remembers each post's id, words and time.
type xPublisher struct {
	srv   *xv2.Server
	words []string
	mu    sync.Mutex
	posts []xPost
	stop  chan struct{}
	done  chan struct{}
}

type xPost struct {
	id   string
	text string
	at   time.Time
}

// xPublishEvery is the pace of the publisher: a post every 100 ms.
const xPublishEvery = 100 * time.Millisecond

func publishX(srv *xv2.Server, words ...string) *xPublisher {
	p := &xPublisher{srv: srv, words: words, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(xPublishEvery)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			text := fmt.Sprintf("%s number %d", words[i%len(words)], i)
			post, _ := srv.Publish(xv2.Post{Text: text, Username: "poster"})
			p.mu.Lock()
			p.posts = append(p.posts, xPost{id: post.ID, text: text, at: time.Now()})
			p.mu.Unlock()
		}
	}()
	return p
}

// halt stops publishing and waits for the publisher.
func (p *xPublisher) halt() {
	close(p.stop)
	<-p.done
}

// matching lists the comment ids of the posts whose text holds any of
// words, and how many of them were published in [from, to).
func (p *xPublisher) matching(from, to time.Time, words ...string) (ids []string, within int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, post := range p.posts {
		if slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(post.text, w+" ") }) {
			ids = append(ids, "tw:"+post.id)
			if !post.at.Before(from) && post.at.Before(to) {
				within++
			}
		}
	}
	return ids, within
}

func (p *xPublisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.posts)
}

// TestNoGaps_XStreamHolderKilled: the spawn holding the fleet's one X
// stream is SIGKILLed while posts keep coming. X goes on counting its
// connection for a few seconds, so the survivor's first attempts are
// refused with TooManyConnections; it retries on the short schedule,
// connects, and fills the gap from recent search. Every matching post of
// before, during and after the switch is stored exactly once per matching
// crawler.
func TestNoGaps_XStreamHolderKilled(t *testing.T) {
	srv, apiURL := xv2.Start(t, xv2.Options{BearerToken: "bearer"})
	f := startFleet(t)
	xflags := []string{"--twitter-api-url", apiURL, "--twitter-bearer-token", "bearer", "--bluesky=false"}
	f.spawn(xflags...)
	f.spawn(xflags...)

	u := f.user()
	crawlers := []struct {
		words []string
		c     api.Crawler
	}{{words: []string{"alpha"}}, {words: []string{"beta"}}, {words: []string{"alpha", "gamma"}}}
	for i := range crawlers {
		crawlers[i].c = f.crawler(u.ID, api.SourceTwitter, strings.Join(crawlers[i].words, " OR "))
	}
	testkit.WaitFor(t, noGapsWait, "the stream open with the crawlers' rules", func() bool {
		return srv.Connected() && len(srv.Rules()) > 0
	})
	pub := publishX(srv, "alpha", "beta", "gamma", "delta")
	defer func() {
		select {
		case <-pub.stop:
		default:
			pub.halt()
		}
	}()
	testkit.WaitFor(t, noGapsWait, "posts stored for every crawler", func() bool {
		for _, c := range crawlers {
			if len(storedIn(t, f.dataDir, c.c.ID)) < 3 {
				return false
			}
		}
		return true
	})

	cr, err := f.client.GetCrawler(f.ctx, crawlers[0].c.ID)
	if err != nil || cr.Node == "" {
		t.Fatalf("crawler %+v: %v", cr, err)
	}
	holder := f.byNode(cr.Node)
	before := len(srv.Connections())
	if err := holder.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var live time.Time
	refused := 0
	testkit.WaitFor(t, noGapsWait, "the survivor's stream live", func() bool {
		for _, c := range srv.Connections()[before:] {
			switch c.Status {
			case 200:
				live = c.At
				return true
			case 429:
				refused++
			}
		}
		refused = 0
		return false
	})
	t.Logf("holder SIGKILLed: the survivor's stream live after %s, %d TooManyConnections first", live.Sub(killed).Round(time.Millisecond), refused)
	// Posts keep coming after the switch, then stop.
	testkit.WaitFor(t, noGapsWait, "posts after the switch", func() bool { return time.Since(live) > 3*time.Second })
	pub.halt()

	for _, c := range crawlers {
		want, during := pub.matching(killed, live, c.words...)
		var missing, extra []string
		var twice int
		testkit.WaitForShowing(t, noGapsWait, fmt.Sprintf("crawler %d (%s) storing every matching post once", c.c.ID, strings.Join(c.words, " OR ")), func() (bool, string) {
			missing, extra, twice = f.storedOnce(c.c.ID, want)
			return len(missing) == 0, missingSummary(missing, len(want))
		})
		t.Logf("crawler %d (%s): %d matching posts stored, %d of them published with no stream live", c.c.ID, strings.Join(c.words, " OR "), len(want), during)
		if len(extra) > 0 || twice > 0 {
			t.Errorf("crawler %d: %d posts it does not match stored, %d stored twice", c.c.ID, len(extra), twice)
		}
	}
	searches := srv.Searches()
	t.Logf("gap of %s (kill to live stream) filled by %d recent searches; %d posts published in all",
		live.Sub(killed).Round(time.Millisecond), len(searches), pub.count())
	if refused == 0 {
		t.Errorf("the survivor was never refused with TooManyConnections: the local X did not hold the killed client's connection")
	}
	for _, s := range searches {
		if s.Status != 200 {
			t.Errorf("search %+v", s)
		}
	}
}

// drainWorld is a fleet whose spawns read every source kind from local
// services, and publishers that keep each crawler's source busy.
type drainWorld struct {
	*fleet
	t     *testing.T
	feeds *feedserver.Server
	feedB string
	x     *xv2.Server
	sd    *streamserver.Server
	js    *jetstream.Server
	md    *mastodonfake.Server
	flags []string

	mu sync.Mutex
	// crawlers by kind, and what each must store.
	byKind map[string][]api.Crawler
	want   map[int64][]string
	words  map[int64]string
	seq    int
}

func newDrainWorld(t *testing.T) *drainWorld {
	t.Helper()
	w := &drainWorld{t: t, byKind: map[string][]api.Crawler{}, want: map[int64][]string{}, words: map[int64]string{}}
	w.feeds, w.feedB = feedserver.Start(t, feedserver.Options{})
	var xURL, sdURL string
	w.x, xURL = xv2.Start(t, xv2.Options{BearerToken: "bearer"})
	w.sd, sdURL = streamserver.Start(t, streamserver.Options{Username: "u", APIKey: "k"})
	w.js = jetstream.Start(t, jetstream.Options{ReplayWindow: time.Hour})
	av := appview.Start(t)
	w.md = mastodonfake.Start(t, mastodonfake.Options{Token: "tok", Domain: "drain.example"})
	w.fleet = startFleet(t)
	w.flags = []string{"--feed-interval", "1s",
		"--twitter-api-url", xURL, "--twitter-bearer-token", "bearer",
		"--stream-url", sdURL, "--stream-username", "u", "--stream-api-key", "k",
		"--bluesky-jetstream-url", w.js.URL(), "--bluesky-appview-url", av.URL(),
		"--mastodon-url", w.md.URL(), "--mastodon-token", "tok"}
	return w
}

// drainKinds are the source kinds the drain tests run.
var drainKinds = []string{api.SourceRSS, api.SourceTwitter, api.SourceStream, api.SourceBluesky, api.SourceMastodon}

// addCrawlers creates n crawlers of kind, each reading a word of its own.
func (w *drainWorld) addCrawlers(userID int64, kind string, n int) {
	w.t.Helper()
	for range n {
		w.mu.Lock()
		w.seq++
		word := fmt.Sprintf("dw%s%d", kind[:2], w.seq)
		w.mu.Unlock()
		var q string
		switch kind {
		case api.SourceRSS:
			q = w.feedB + "/feeds/" + word + ".xml"
		case api.SourceMastodon:
			q = "#" + word
		default:
			q = word
		}
		c := w.crawler(userID, kind, q)
		w.mu.Lock()
		w.byKind[kind] = append(w.byKind[kind], c)
		w.words[c.ID] = word
		w.mu.Unlock()
	}
}

// publish publishes one item for one crawler of each kind, round robin,
// and records its id as one the crawler must store.
func (w *drainWorld) publish(round int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, kind := range drainKinds {
		list := w.byKind[kind]
		if len(list) == 0 {
			continue
		}
		c := list[round%len(list)]
		word := w.words[c.ID]
		text := fmt.Sprintf("%s item %d", word, round)
		var id string
		switch kind {
		case api.SourceRSS:
			id = w.feeds.Publish(word, feedserver.Item{Title: text, Description: text}).GUID
		case api.SourceTwitter:
			p, _ := w.x.Publish(xv2.Post{Text: text, Username: "drainer"})
			id = "tw:" + p.ID
		case api.SourceStream:
			id = "ds:" + w.sd.Publish(streamserver.Interaction{Content: text}).ID
		case api.SourceBluesky:
			id = w.js.Publish(jetstream.Post{DID: "did:plc:drainer", Text: text, Langs: []string{"en"}}).URI
		case api.SourceMastodon:
			id = w.md.Post(mastodonfake.Status{Acct: "drainer", Content: "<p>#" + word + " item</p>", Tags: []string{word}}).URI
		}
		w.want[c.ID] = append(w.want[c.ID], id)
	}
}

// publishing publishes a round every interval until stop is closed.
func (w *drainWorld) publishing(every time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for round := 0; ; round++ {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			w.publish(round)
		}
	}()
	return func() { close(quit); <-done }
}

// all lists every crawler.
func (w *drainWorld) all() []api.Crawler {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []api.Crawler
	for _, k := range drainKinds {
		out = append(out, w.byKind[k]...)
	}
	return out
}

// placeOnNode creates crawlers of every kind until at least n of each run
// on node (the fleet's X stream is held by one spawn: node must hold it).
func (w *drainWorld) placeOnNode(userID int64, node string, n int) map[string]int {
	w.t.Helper()
	on := map[string]int{}
	for round := 0; ; round++ {
		if round > 8 {
			w.t.Fatalf("after %d rounds only %v crawlers run on %s", round, on, node)
		}
		for _, kind := range drainKinds {
			if on[kind] < n {
				w.addCrawlers(userID, kind, 2*(n-on[kind]))
			}
		}
		testkit.WaitFor(w.t, noGapsWait, "every crawler running", func() bool {
			list, err := w.client.ListCrawlers(w.ctx)
			if err != nil || len(list) != len(w.all()) {
				return false
			}
			for _, c := range list {
				if c.State != api.StateRunning || c.Node == "" {
					return false
				}
			}
			return true
		})
		list, _ := w.client.ListCrawlers(w.ctx)
		on = map[string]int{}
		for _, c := range list {
			if c.Node == node {
				on[c.Source]++
			}
		}
		done := true
		for _, k := range drainKinds {
			done = done && on[k] >= n
		}
		if done {
			return on
		}
	}
}

// sampler checks, every 100 ms until stopped, that every crawler runs on
// a live spawn (its health lists it running) and that the hub never shows
// one pending or without a node.
type sampler struct {
	samples, violations int
	first               string
}

func (w *drainWorld) sample(urls []string) (stop func() sampler) {
	quit, done := make(chan struct{}), make(chan sampler, 1)
	ids := w.all()
	go func() {
		var s sampler
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		note := func(msg string) {
			s.violations++
			if s.first == "" {
				s.first = msg
			}
		}
		for {
			select {
			case <-quit:
				done <- s
				return
			case <-t.C:
			}
			s.samples++
			runs := map[int64]bool{}
			for _, u := range urls {
				h, ok := healthAt(u, time.Second)
				if !ok {
					continue
				}
				for _, sub := range h.Subscribers {
					if sub.State == api.StateRunning || sub.State == api.StateQuotaWait {
						runs[sub.CrawlerID] = true
					}
				}
			}
			list, err := w.client.ListCrawlers(w.ctx)
			if err != nil {
				note("the hub did not answer: " + err.Error())
				continue
			}
			for _, c := range ids {
				if !runs[c.ID] {
					note(fmt.Sprintf("sample %d: crawler %d (%s) runs on no spawn", s.samples, c.ID, c.Source))
				}
			}
			for _, c := range list {
				if c.State != api.StateRunning || c.Node == "" {
					note(fmt.Sprintf("sample %d: the hub shows crawler %d (%s) %s on %q", s.samples, c.ID, c.Source, c.State, c.Node))
				}
			}
		}
	}()
	return func() sampler { close(quit); return <-done }
}

// expectStoredOnce waits until every crawler stored every item published
// for it, and checks none is stored twice or for the wrong crawler.
func (w *drainWorld) expectStoredOnce() {
	w.t.Helper()
	crawlers := w.all()
	check := func(c api.Crawler) (want, missing, extra []string, twice int) {
		w.mu.Lock()
		want = slices.Clone(w.want[c.ID])
		w.mu.Unlock()
		missing, extra, twice = w.storedOnce(c.ID, want)
		return want, missing, extra, twice
	}
	deadline := time.Now().Add(noGapsWait)
	for time.Now().Before(deadline) && slices.ContainsFunc(crawlers, func(c api.Crawler) bool { _, m, _, _ := check(c); return len(m) > 0 }) {
		time.Sleep(100 * time.Millisecond)
	}
	items := 0
	for _, c := range crawlers {
		want, missing, extra, twice := check(c)
		items += len(want)
		if len(missing) > 0 {
			w.t.Errorf("crawler %d (%s): %d of %d items never stored, e.g. %v", c.ID, c.Source, len(missing), len(want), missing[:min(3, len(missing))])
		}
		if len(extra) > 0 || twice > 0 {
			w.t.Errorf("crawler %d (%s): %d items it does not match stored, %d stored twice", c.ID, c.Source, len(extra), twice)
		}
	}
	w.t.Logf("%d crawlers, %d items published for them, each checked stored exactly once", len(crawlers), items)
}

// loadedHolder starts two spawns, finds the one holding the fleet's X
// stream, places at least 10 crawlers of every source kind on it and
// publishes items for every crawler until stop is called, returning once
// every crawler has stored some: the spawn to drain and the other.
func (w *drainWorld) loadedHolder() (u api.User, holder string, drained, other *proc, stop func()) {
	t := w.t
	a := w.spawn(w.flags...)
	b := w.spawn(w.flags...)
	u = w.user()
	w.addCrawlers(u.ID, api.SourceTwitter, 1)
	testkit.WaitFor(t, noGapsWait, "the X stream held", func() bool {
		c, err := w.client.GetCrawler(w.ctx, w.byKind[api.SourceTwitter][0].ID)
		holder = c.Node
		return err == nil && c.State == api.StateRunning && w.x.Connected()
	})
	drained, other = a, b
	if nodeIDOf(b) == holder {
		drained, other = b, a
	}
	on := w.placeOnNode(u.ID, holder, 10)
	t.Logf("crawlers on the spawn to drain: %v (of %d in all)", on, len(w.all()))
	stop = w.publishing(50 * time.Millisecond)
	testkit.WaitFor(t, noGapsWait, "items flowing to every kind", func() bool {
		for _, c := range w.all() {
			if len(storedIn(t, w.dataDir, c.ID)) == 0 {
				return false
			}
		}
		return true
	})
	return u, holder, drained, other, stop
}

// TestNoGaps_DrainBySIGTERM: the spawn holding the fleet's X stream, with
// at least 10 crawlers of every source kind on it, is given SIGTERM while
// items keep coming for every crawler. Sampled every 100 ms, every crawler
// runs on some spawn throughout and the hub never shows one pending; the
// spawn exits by itself within its drain budget; every item is stored
// once for its crawler.
func TestNoGaps_DrainBySIGTERM(t *testing.T) {
	w := newDrainWorld(t)
	_, _, victim, other, stop := w.loadedHolder()
	nodes, err := w.client.ListNodes(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL)
	}
	check := w.sample(urls)

	exited := make(chan error, 1)
	go func() { exited <- victim.cmd.Wait() }()
	if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	var took time.Duration
	select {
	case err := <-exited:
		took = time.Since(signalled)
		if err != nil {
			t.Errorf("the drained spawn exited with %v", err)
		}
	case <-time.After(spawnapp.DefaultDrainTimeout):
		t.Fatalf("the spawn did not exit within its drain budget of %s", spawnapp.DefaultDrainTimeout)
	}
	// Items keep coming after it left.
	testkit.WaitFor(t, noGapsWait, "three more seconds of items", func() bool { return time.Since(signalled) > took+3*time.Second })
	s := check()
	stop()
	t.Logf("SIGTERM: the spawn handed its crawlers over and exited after %s (budget %s); %d samples, %d violations",
		took.Round(time.Millisecond), spawnapp.DefaultDrainTimeout, s.samples, s.violations)
	if s.violations > 0 {
		t.Errorf("%d violations in %d samples, first: %s", s.violations, s.samples, s.first)
	}
	if !strings.Contains(victim.output(), "drained: every crawler handed over") {
		t.Errorf("the spawn did not log a complete drain:\n%s", victim.output())
	}
	w.expectStoredOnce()
	nodes, _ = w.client.ListNodes(w.ctx)
	if len(nodes) != 1 || nodes[0].ID != nodeIDOf(other) {
		t.Errorf("nodes after the drain: %+v, want the other spawn alone", nodes)
	}
}

// TestNoGaps_DrainByBwctl: `bwctl node drain NODE` drains the spawn
// holding the fleet's X stream, with at least 10 crawlers of every source
// kind on it, without stopping it: every crawler moves to the other spawn
// with no moment unassigned, nothing is lost or stored twice, the drained
// spawn's health says "draining", node list shows it draining with
// nothing left on it, and new crawlers go elsewhere.
func TestNoGaps_DrainByBwctl(t *testing.T) {
	w := newDrainWorld(t)
	u, holder, drained, other, stop := w.loadedHolder()
	nodes, err := w.client.ListNodes(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{}
	var all []string
	for _, n := range nodes {
		urls[n.ID] = n.URL
		all = append(all, n.URL)
	}
	check := w.sample(all)

	cmd := exec.Command(filepath.Join(w.bin, "bwctl"), "--hub", w.hubURL, "node", "drain", holder)
	cmd.Env = append(os.Environ(), w.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bwctl node drain: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^state:\s+draining$`).Match(out) {
		t.Errorf("bwctl node drain printed:\n%s", out)
	}
	asked := time.Now()
	emptied := testkit.WaitFor(t, noGapsWait, "the drained spawn running nothing", func() bool {
		h, ok := healthAt(urls[holder], time.Second)
		return ok && h.State == api.NodeDraining && len(h.Subscribers) == 0
	})
	testkit.WaitFor(t, noGapsWait, "three more seconds of items", func() bool { return time.Since(asked) > emptied+3*time.Second })
	s := check()
	stop()
	t.Logf("bwctl node drain: every crawler moved off the spawn after %s; %d samples, %d violations", emptied.Round(time.Millisecond), s.samples, s.violations)
	if s.violations > 0 {
		t.Errorf("%d violations in %d samples, first: %s", s.violations, s.samples, s.first)
	}
	if drained.cmd.ProcessState != nil {
		t.Fatal("bwctl node drain stopped the spawn")
	}
	w.expectStoredOnce()

	// The node list shows it draining, with nothing on it; a new crawler
	// goes to the other spawn.
	nodes, _ = w.client.ListNodes(w.ctx)
	for _, n := range nodes {
		switch {
		case n.ID == holder && (n.State != api.NodeDraining || n.Subscribers != 0):
			t.Errorf("drained node listed %s with %d subscribers", n.State, n.Subscribers)
		case n.ID != holder && n.State != "ok":
			t.Errorf("node %s listed %s", n.ID, n.State)
		}
	}
	late := w.crawler(u.ID, api.SourceRSS, w.feedB+"/feeds/late.xml")
	testkit.WaitFor(t, noGapsWait, "a new crawler running", func() bool {
		c, err := w.client.GetCrawler(w.ctx, late.ID)
		return err == nil && c.State == api.StateRunning
	})
	if c, _ := w.client.GetCrawler(w.ctx, late.ID); c.Node != nodeIDOf(other) {
		t.Errorf("a new crawler went to %s, not to the spawn that is not drained", c.Node)
	}
}

// mastodonPublisher posts a status to the local Mastodon every interval,
// half with the crawler's tag, and remembers the tagged ones' URIs.
type mastodonPublisher struct {
	mu         sync.Mutex
	want       []string
	quit, done chan struct{}
}

func publishMastodon(srv *mastodonfake.Server, tag string, every time.Duration) *mastodonPublisher {
	p := &mastodonPublisher{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.quit:
				return
			case <-t.C:
			}
			if i%2 == 1 {
				srv.Post(mastodonfake.Status{Acct: "other", Content: "<p>#elsewhere</p>", Tags: []string{"elsewhere"}})
				continue
			}
			st := srv.Post(mastodonfake.Status{Acct: fmt.Sprintf("poster%d", i%5), Content: fmt.Sprintf("<p>#%s number %d</p>", tag, i), Tags: []string{tag}})
			p.mu.Lock()
			p.want = append(p.want, st.URI)
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *mastodonPublisher) halt() []string {
	close(p.quit)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.want)
}

// TestNoGaps_MastodonReconnect: the connection to the instance is cut and
// refused for a few seconds while statuses keep coming; once the spawn is
// back, it reads what it missed from the tag's timeline: every status is
// stored exactly once.
func TestNoGaps_MastodonReconnect(t *testing.T) {
	inst := mastodonfake.Start(t, mastodonfake.Options{Token: "tok", Domain: "gaps.example"})
	f := startFleet(t)
	f.spawn("--mastodon-url", inst.URL(), "--mastodon-token", "tok", "--bluesky=false")
	c := f.crawler(f.user().ID, api.SourceMastodon, "#nogaps")
	testkit.WaitFor(t, noGapsWait, "the spawn subscribed", func() bool { return inst.Open() == 1 && len(inst.Subscriptions()) == 1 })
	pub := publishMastodon(inst, "nogaps", 100*time.Millisecond)
	testkit.WaitFor(t, noGapsWait, "statuses stored", func() bool { return len(storedIn(t, f.dataDir, c.ID)) >= 3 })

	const down = 3 * time.Second
	conns := inst.Connections()
	inst.Cut(down)
	cut := time.Now()
	back := testkit.WaitFor(t, noGapsWait, "the spawn connected again", func() bool { return inst.Connections() > conns && inst.Open() == 1 })
	testkit.WaitFor(t, noGapsWait, "statuses after the reconnect", func() bool { return time.Since(cut) > back+2*time.Second })
	want := pub.halt()
	var missing, extra []string
	var twice int
	testkit.WaitForShowing(t, noGapsWait, "every status stored", func() (bool, string) {
		missing, extra, twice = f.storedOnce(c.ID, want)
		return len(missing) == 0, missingSummary(missing, len(want))
	})
	t.Logf("connection cut (handshakes refused %s): live again after %s; %d statuses stored, the gap of %s filled from the tag timeline",
		down, back.Round(time.Millisecond), len(want), back.Round(time.Millisecond))
	if len(extra) > 0 || twice > 0 {
		t.Errorf("%d statuses it does not match stored, %d stored twice", len(extra), twice)
	}
}

// TestNoGaps_MastodonCrawlerMoved: the spawn running a mastodon crawler
// is SIGKILLed while statuses keep coming; the crawler moves to the other
// spawn with its cursor, which reads what was posted since the status the
// crawler last stored: every status is stored exactly once.
func TestNoGaps_MastodonCrawlerMoved(t *testing.T) {
	inst := mastodonfake.Start(t, mastodonfake.Options{Token: "tok", Domain: "gaps.example"})
	f := startFleet(t)
	flags := []string{"--mastodon-url", inst.URL(), "--mastodon-token", "tok", "--bluesky=false"}
	f.spawn(flags...)
	f.spawn(flags...)
	c := f.crawler(f.user().ID, api.SourceMastodon, "#moved")
	testkit.WaitFor(t, noGapsWait, "a spawn subscribed", func() bool { return inst.Open() == 1 && len(inst.Subscriptions()) == 1 })
	pub := publishMastodon(inst, "moved", 100*time.Millisecond)
	testkit.WaitFor(t, noGapsWait, "statuses stored", func() bool { return len(storedIn(t, f.dataDir, c.ID)) >= 5 })
	cr, err := f.client.GetCrawler(f.ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.byNode(cr.Node).cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	moved := testkit.WaitFor(t, noGapsWait, "the crawler running on the other spawn", func() bool {
		x, err := f.client.GetCrawler(f.ctx, c.ID)
		return err == nil && x.State == api.StateRunning && x.Node != "" && x.Node != cr.Node
	})
	live := testkit.WaitFor(t, noGapsWait, "the other spawn subscribed", func() bool { return inst.Open() == 1 && len(inst.Subscriptions()) == 1 }) + moved
	testkit.WaitFor(t, noGapsWait, "statuses after the move", func() bool { return time.Since(killed) > live+2*time.Second })
	want := pub.halt()
	var missing, extra []string
	var twice int
	testkit.WaitForShowing(t, noGapsWait, "every status stored", func() (bool, string) {
		missing, extra, twice = f.storedOnce(c.ID, want)
		return len(missing) == 0, missingSummary(missing, len(want))
	})
	t.Logf("spawn SIGKILLed: crawler running elsewhere after %s, its stream live after %s; %d statuses stored, the gap filled from its cursor",
		moved.Round(time.Millisecond), live.Round(time.Millisecond), len(want))
	if len(extra) > 0 || twice > 0 {
		t.Errorf("%d statuses it does not match stored, %d stored twice", len(extra), twice)
	}
}
