package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
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
	f.env = []string{"BW_NODE_TOKEN=ng-node", "BW_ADMIN_TOKEN=ng-admin"}
	startProc(t, f.env, filepath.Join(f.bin, "hub"), "--listen", addr, "--db", "sqlite://"+filepath.Join(dir, "hub.db"))
	f.client = api.NewClient(f.hubURL, "ng-admin", nil)
	return f
}

// spawn starts a spawn with the fleet's store and extra flags, and waits
// until the hub lists it.
func (f *fleet) spawn(extra ...string) *proc {
	f.t.Helper()
	args := append([]string{"--hub", f.hubURL, "--store", "file://" + f.dataDir, "--allow-targets", "127.0.0.0/8", "--bluesky=false"}, extra...)
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
	xflags := []string{"--twitter-api-url", apiURL, "--twitter-bearer-token", "bearer"}
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
		testkit.WaitFor(t, noGapsWait, fmt.Sprintf("crawler %d (%s) storing every matching post once", c.c.ID, strings.Join(c.words, " OR ")), func() bool {
			missing, extra, twice = f.storedOnce(c.c.ID, want)
			return len(missing) == 0
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
