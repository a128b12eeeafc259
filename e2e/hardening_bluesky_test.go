package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// tenYears is how far ahead the event and the cursor from the future are.
const tenYears = 10 * 365 * 24 * time.Hour

// blueskyProcs is a hub and a spawn run as processes from the built
// binaries, the spawn reading a local Jetstream (which the test can stop
// and start again on the same address) and asking a local AppView.
type blueskyProcs struct {
	t        *testing.T
	bin, dir string
	env      []string
	hubArgs  []string
	spawnArg []string
	hub      *proc
	spawn    *proc
	js       *jetstream.Server
	jsAddr   string
	client   *api.Client
}

func startBlueskyProcs(t *testing.T) *blueskyProcs {
	p := &blueskyProcs{t: t, bin: binDir(t), dir: t.TempDir(), jsAddr: testkit.FreeAddr(t)}
	p.startJetstream()
	av := appview.Start(t)
	hubAddr := testkit.FreeAddr(t)
	p.env = []string{"BW_NODE_TOKEN=" + clustertest.NodeToken, "BW_ADMIN_TOKEN=" + clustertest.AdminToken}
	p.hubArgs = []string{"--listen", hubAddr, "--db", "sqlite://" + p.dbPath(), "--poll-interval", "200ms", "--orphan-after", "2s", "--detach-after", "3s"}
	p.spawnArg = []string{"--hub", "http://" + hubAddr, "--store", "file://" + filepath.Join(p.dir, "data"),
		"--bluesky-jetstream-url", "ws://" + p.jsAddr + jetstream.SubscribePath, "--bluesky-appview-url", av.URL()}
	p.hub = startProc(t, p.env, filepath.Join(p.bin, "hub"), p.hubArgs...)
	p.spawn = startProc(t, p.env, filepath.Join(p.bin, "spawn"), p.spawnArg...)
	p.client = api.NewClient("http://"+hubAddr, clustertest.AdminToken, nil)
	return p
}

func (p *blueskyProcs) dbPath() string { return filepath.Join(p.dir, "hub.db") }

// startJetstream starts a new, empty Jetstream on the test's address. Its
// times strictly increase: a post published once a crawler runs is never
// before the crawler's start (production's step back by tens of
// milliseconds, which the source's own tests cover, could put the first
// post before a crawler made a moment earlier).
func (p *blueskyProcs) startJetstream() {
	js := jetstream.New(jetstream.Options{StepBack: -1})
	if err := js.Serve(p.jsAddr); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(js.Close)
	p.js = js
}

// restart stops a process with SIGTERM and starts it again with the same
// arguments.
func (p *blueskyProcs) restart(old *proc, name string, args []string) *proc {
	p.t.Helper()
	stopProc(p.t, old)
	return startProc(p.t, p.env, filepath.Join(p.bin, name), args...)
}

// stopProc stops a started process with SIGTERM and waits for it.
func stopProc(t *testing.T, old *proc) {
	t.Helper()
	if err := old.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = old.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(clustertest.WaitTimeout):
		_ = old.cmd.Process.Kill()
		<-done
	}
}

// crawler creates a user and a bluesky crawler and waits for it to run
// with the spawn connected to Jetstream.
func (p *blueskyProcs) crawler(q string) api.Crawler {
	p.t.Helper()
	ctx := context.Background()
	var u api.User
	testkit.WaitFor(p.t, clustertest.WaitTimeout, "the hub", func() bool {
		var err error
		u, err = p.client.CreateUser(ctx, api.UserCreate{Name: "bluesky-customer"})
		return err == nil
	})
	cr, err := p.client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceBluesky, Query: []string{q}})
	if err != nil {
		p.t.Fatal(err)
	}
	p.waitRunning(cr.ID)
	return cr
}

func (p *blueskyProcs) waitRunning(id int64) {
	p.t.Helper()
	testkit.WaitFor(p.t, clustertest.WaitTimeout, "the crawler running, the spawn connected", func() bool {
		cr, err := p.client.GetCrawler(context.Background(), id)
		return err == nil && cr.State == api.StateRunning && p.js.Conns() == 1
	})
}

// stored waits until every uri is among the crawler's stored comments.
func (p *blueskyProcs) stored(id int64, what string, uris ...string) {
	p.t.Helper()
	var have []string
	testkit.WaitFor(p.t, clustertest.WaitTimeout, what, func() bool {
		have = commentIDs(storedIn(p.t, filepath.Join(p.dir, "data"), id))
		for _, u := range uris {
			if !slices.Contains(have, u) {
				return false
			}
		}
		return true
	})
}

// db opens the hub's SQLite database, as an operator's shell would.
func (p *blueskyProcs) db() *gorm.DB {
	p.t.Helper()
	params := url.Values{"_pragma": {"busy_timeout(10000)"}}
	db, err := gorm.Open(sqlite.Open(p.dbPath()+"?"+params.Encode()), &gorm.Config{Logger: gormlogger.Discard})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return db
}

// cursorPos reads crawlers.cursor_pos, where the hub keeps the crawler's
// position in the Jetstream log.
func (p *blueskyProcs) cursorPos(id int64) int64 {
	p.t.Helper()
	var pos int64
	if err := p.db().Raw("SELECT cursor_pos FROM crawlers WHERE id = ?", id).Scan(&pos).Error; err != nil {
		p.t.Fatal(err)
	}
	return pos
}

// notInTheFuture fails the test for a saved cursor past the clock (and the
// hub's minute of slack for clocks that differ).
func (p *blueskyProcs) notInTheFuture(id int64, when string) int64 {
	p.t.Helper()
	pos := p.cursorPos(id)
	if pos > time.Now().Add(time.Minute).UnixMicro() {
		p.t.Errorf("%s: crawlers.cursor_pos is %s, in the future", when, time.UnixMicro(pos).UTC())
	}
	return pos
}

// futureEvent is a recorded post ("Hello World!", the Bluesky docs'
// example account) with its time_us ten years ahead, and its URI.
func futureEvent(t *testing.T) ([]byte, string) {
	t.Helper()
	data, err := os.ReadFile("../spawn/internal/source/bluesky/testdata/docs_posts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &ev); err != nil {
		t.Fatal(err)
	}
	ev["time_us"] = time.Now().Add(tenYears).UnixMicro()
	line, _ := json.Marshal(ev)
	return line, "at://did:plc:u5cwb2mwiv2bfq53cjufe6yn/app.bsky.feed.post/3k4duaz5vfs2b"
}

// TestHardening_BlueskyEventsFromTheFutureOrTooLargeDoNotStopIngest runs
// the hub and a spawn as processes on a local Jetstream and injects, mid
// stream, an event ten years ahead and two events over 1 MiB (2 MB of text,
// and 10,000 facets): every later matching post is stored, crawlers.cursor_pos
// is never in the future, and crawling goes on after Jetstream restarts and
// after the spawn restarts (resuming from the saved cursor).
func TestHardening_BlueskyEventsFromTheFutureOrTooLargeDoNotStopIngest(t *testing.T) {
	p := startBlueskyProcs(t)
	cr := p.crawler("hello")
	before := p.js.Publish(jetstream.Post{DID: "did:plc:alice4hardening", Text: "hello before"})
	p.stored(cr.ID, "the post before", before.URI)

	line, futureURI := futureEvent(t)
	if err := p.js.Replay([][]byte{line}); err != nil {
		t.Fatal(err)
	}
	facets := make([]map[string]any, 10_000)
	for i := range facets {
		facets[i] = map[string]any{
			"features": []map[string]string{{"$type": "app.bsky.richtext.facet#link", "uri": "https://example.com/"}},
			"index":    map[string]int{"byteStart": 0, "byteEnd": 5},
		}
	}
	raw, _ := json.Marshal(facets)
	p.js.Publish(jetstream.Post{DID: "did:plc:big4hardening", Text: strings.Repeat("hello ", 2<<20/6)})
	p.js.Publish(jetstream.Post{DID: "did:plc:big4hardening", Text: "hello facets", Facets: raw})
	var after []string
	for i := range 5 {
		after = append(after, p.js.Publish(jetstream.Post{DID: "did:plc:alice4hardening", Text: fmt.Sprint("hello after ", i)}).URI)
	}
	p.stored(cr.ID, "the post from the future and every post after the injected events", append(after, futureURI)...)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the cursor saved", func() bool { return p.cursorPos(cr.ID) > 0 })
	p.notInTheFuture(cr.ID, "after the injected events")
	if n := spawnSample(t, spawnURLOf(t, p), `bw_spawn_source_skipped_total{data_source="bluesky",reason="too_large"}`); n != 2 {
		t.Errorf("%v events skipped as too large, want 2", n)
	}
	if n := spawnSample(t, spawnURLOf(t, p), "bw_spawn_bluesky_future_events_total"); n != 1 {
		t.Errorf("%v events from the future, want 1", n)
	}

	// Jetstream restarts (empty, as the fake keeps no disk): the spawn
	// dials again from a cursor that is not in the future.
	p.js.Close()
	p.startJetstream()
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn back on Jetstream", func() bool { return p.js.Conns() == 1 })
	if acc := p.js.Accepted(); acc[0].Cursor > time.Now().UnixMicro() {
		t.Errorf("the spawn dialled the restarted Jetstream with cursor %s, in the future", time.UnixMicro(acc[0].Cursor).UTC())
	}
	restarted := p.js.Publish(jetstream.Post{DID: "did:plc:alice4hardening", Text: "hello after Jetstream restarted"})
	p.stored(cr.ID, "the post after Jetstream restarted", restarted.URI)

	// The spawn restarts: the crawler resumes from its saved cursor.
	saved := p.notInTheFuture(cr.ID, "before the spawn restarts")
	p.spawn = p.restart(p.spawn, "spawn", p.spawnArg)
	p.waitRunning(cr.ID)
	var cursors []int64
	for _, a := range p.js.Accepted() {
		cursors = append(cursors, a.Cursor)
	}
	if last := cursors[len(cursors)-1]; last <= 0 || last > saved {
		t.Errorf("the restarted spawn dialled with cursors %v, want one at or before the saved %d", cursors, saved)
	}
	again := p.js.Publish(jetstream.Post{DID: "did:plc:alice4hardening", Text: "hello after the spawn restarted"})
	p.stored(cr.ID, "the post after the spawn restarted", again.URI)
	p.notInTheFuture(cr.ID, "at the end")
}

// spawnURLOf finds the spawn's URL from the hub's node list.
func spawnURLOf(t *testing.T, p *blueskyProcs) string {
	t.Helper()
	var u string
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn in the node list", func() bool {
		nodes, err := p.client.ListNodes(context.Background())
		if err != nil || len(nodes) != 1 {
			return false
		}
		u = nodes[0].URL
		return true
	})
	return u
}

// TestHardening_BlueskyCursorSavedInTheFutureReadsFromNowAndSaysSo gives a
// crawler a cursor ten years ahead in the hub's database (as one event from
// the future saved it before cursors were bounded), then starts the hub
// again: the crawler says its cursor is in the future, stores what comes,
// and its saved cursor is replaced by a real one.
func TestHardening_BlueskyCursorSavedInTheFutureReadsFromNowAndSaysSo(t *testing.T) {
	p := startBlueskyProcs(t)
	cr := p.crawler("hello")
	first := p.js.Publish(jetstream.Post{DID: "did:plc:alice4hardening", Text: "hello first"})
	p.stored(cr.ID, "the first post", first.URI)
	// Its count (and cursor) applied, so none is left to replace the
	// future cursor when the hub comes back.
	testkit.WaitFor(t, clustertest.WaitTimeout, "the first cursor saved", func() bool { return p.cursorPos(cr.ID) > 0 })

	stopProc(t, p.hub)
	future := time.Now().Add(tenYears).UnixMicro()
	if err := p.db().Exec("UPDATE crawlers SET cursor_pos = ? WHERE id = ?", future, cr.ID).Error; err != nil {
		t.Fatal(err)
	}
	p.hub = startProc(t, p.env, filepath.Join(p.bin, "hub"), p.hubArgs...)
	var shown api.Crawler
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler to say its cursor is in the future", func() bool {
		var err error
		shown, err = p.client.GetCrawler(context.Background(), cr.ID)
		return err == nil && shown.State == api.StateRunning && strings.Contains(shown.Error, "in the future")
	})
	t.Logf("crawler error: %s", shown.Error)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn on Jetstream", func() bool { return p.js.Conns() == 1 })
	var posts []string
	for i := range 3 {
		posts = append(posts, p.js.Publish(jetstream.Post{DID: "did:plc:alice4hardening", Text: fmt.Sprint("hello now ", i)}).URI)
	}
	p.stored(cr.ID, "the posts made after the hub came back", posts...)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the saved cursor replaced by a real one", func() bool {
		pos := p.cursorPos(cr.ID)
		return pos > 0 && pos <= time.Now().UnixMicro()
	})
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler to stop saying so", func() bool {
		got, err := p.client.GetCrawler(context.Background(), cr.ID)
		return err == nil && !strings.Contains(got.Error, "in the future")
	})
}
