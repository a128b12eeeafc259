package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// binDir returns a directory with hub, spawn and bwctl: BW_BIN_DIR when set
// (make test builds them first), else a fresh build.
func binDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("BW_BIN_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "bwctl")); err == nil {
			return d
		}
	}
	if testing.Short() {
		t.Skip("builds the binaries; skipped with -short")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "../hub", "../spawn", "../cmd/bwctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// proc is a started binary whose output is kept for the test log.
type proc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func startProc(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(name), p.output())
		}
	})
	return p
}

// TestBinaries_EndToEnd runs the real hub, two spawns and bwctl as separate
// processes, kills a spawn with SIGKILL and checks its crawler moves.
func TestBinaries_EndToEnd(t *testing.T) {
	bin := binDir(t)
	dir := t.TempDir()
	feeds, feedBase := feedserver.Start(t, feedserver.Options{})

	hubAddr := testkit.FreeAddr(t)
	env := []string{"BW_NODE_TOKEN=binaries-node-token", "BW_ADMIN_TOKEN=binaries-admin-token", "BW_HUB_URL=http://" + hubAddr}
	const poll = 200 * time.Millisecond
	hubArgs := []string{"--listen", hubAddr, "--db", "sqlite://" + filepath.Join(dir, "hub.db"),
		"--poll-interval", poll.String(), "--orphan-after", "1s", "--detach-after", "1500ms"}
	hub := startProc(t, env, filepath.Join(bin, "hub"), hubArgs...)
	spawnArgs := []string{"--hub", "http://" + hubAddr, "--store", "file://" + filepath.Join(dir, "data"),
		"--allow-targets", "127.0.0.0/8", "--feed-interval", "100ms"}
	s1 := startProc(t, env, filepath.Join(bin, "spawn"), spawnArgs...)
	s2 := startProc(t, env, filepath.Join(bin, "spawn"), spawnArgs...)

	bwctl := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "bwctl"), args...)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			return stdout.String(), fmt.Errorf("bwctl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String(), nil
	}
	var nodes []api.Node
	testkit.WaitFor(t, clustertest.WaitTimeout, "two nodes in bwctl node list", func() bool {
		out, err := bwctl("node", "list", "--json")
		return err == nil && json.Unmarshal([]byte(out), &nodes) == nil && len(nodes) == 2
	})

	out, err := bwctl("user", "add", "acme", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var u api.User
	if err := json.Unmarshal([]byte(out), &u); err != nil || u.ID == 0 {
		t.Fatalf("user add printed %q: %v", out, err)
	}
	out, err = bwctl("crawler", "add", "--user", fmt.Sprint(u.ID), "--source", "rss", "--query", feedBase+"/feeds/bin.xml", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cr api.Crawler
	if err := json.Unmarshal([]byte(out), &cr); err != nil || cr.ID == 0 {
		t.Fatalf("crawler add printed %q: %v", out, err)
	}
	show := func() api.Crawler {
		out, err := bwctl("crawler", "show", fmt.Sprint(cr.ID), "--json")
		if err != nil {
			return api.Crawler{}
		}
		var c api.Crawler
		_ = json.Unmarshal([]byte(out), &c)
		return c
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "crawler running", func() bool { return show().State == api.StateRunning })
	feeds.Publish("bin", feedserver.Item{GUID: "one", Title: "first", Description: "first item", Published: time.Now()})
	testkit.WaitFor(t, clustertest.WaitTimeout, "comment visible through bwctl", func() bool {
		out, err := bwctl("comments", "recent", fmt.Sprint(cr.ID), "--json")
		var cs []api.Comment
		return err == nil && json.Unmarshal([]byte(out), &cs) == nil && len(cs) == 1 && cs[0].ID == "one"
	})

	// SIGKILL the spawn running the crawler: the survivor takes it over.
	running := show().Node
	victim := s1
	if nodeIDOf(s2) == running {
		victim = s2
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	testkit.WaitFor(t, clustertest.WaitTimeout, "crawler running on the survivor", func() bool {
		c := show()
		return c.State == api.StateRunning && c.Node != "" && c.Node != running
	})
	moved := time.Since(killed)
	t.Logf("crawler running on the surviving spawn %s after SIGKILL", moved.Round(time.Millisecond))
	// Promise: within 3 poll intervals plus the node-failure threshold
	// (3 failed polls, the default).
	if bound := 3*poll + defaultNodeFailures*poll; moved > bound+schedulingSlack {
		t.Errorf("moving the killed spawn's crawler took %s, over the bound of %s", moved, bound)
	}
	survivor := show().Node

	// SIGKILL the hub and start it again on the same database: the spawn
	// sees the new epoch, registers, and the crawler runs again.
	if err := hub.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = hub.cmd.Wait()
	restarted := time.Now()
	startProc(t, env, filepath.Join(bin, "hub"), hubArgs...)
	testkit.WaitFor(t, clustertest.WaitTimeout, "crawler running again under the restarted hub", func() bool {
		c := show()
		return c.State == api.StateRunning && c.Node == survivor
	})
	back := time.Since(restarted)
	t.Logf("crawler running again %s after the hub was killed and restarted", back.Round(time.Millisecond))
	if back > 20*time.Second {
		t.Errorf("recovery from a hub restart took %s, over 20 s", back)
	}

	if _, err := bwctl("crawler", "show", "99999"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("bwctl on a missing crawler: %v", err)
	}
}

// nodeIDOf reads the node id a spawn logged at start.
func nodeIDOf(p *proc) string {
	sc := bufio.NewScanner(strings.NewReader(p.output()))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "node_id="); i >= 0 && strings.Contains(line, "spawn listening") {
			f := strings.Fields(line[i+len("node_id="):])
			if len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// TestBinaries_KilledSpawnUsageIsRecovered kills, with SIGKILL, the spawn
// running a limited crawler while comments stream in. What it stored but
// never reported is read back from the store, so the crawler still stops at
// exactly its limit with stored comments equal to SQL usage.
func TestBinaries_KilledSpawnUsageIsRecovered(t *testing.T) {
	bin := binDir(t)
	dir := t.TempDir()
	feeds, feedBase := feedserver.Start(t, feedserver.Options{})
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() { // a fast feed: an item every 5 ms
		base := time.Now().Add(-time.Hour)
		for i := 0; ctx.Err() == nil; i++ {
			feeds.Publish("fast", feedItem(fmt.Sprintf("fast-%d", i), base.Add(time.Duration(i)*time.Millisecond)))
			time.Sleep(5 * time.Millisecond)
		}
	}()

	hubAddr := testkit.FreeAddr(t)
	env := []string{"BW_NODE_TOKEN=binaries-node-token", "BW_ADMIN_TOKEN=binaries-admin-token"}
	startProc(t, env, filepath.Join(bin, "hub"), "--listen", hubAddr, "--db", "sqlite://"+filepath.Join(dir, "hub.db"),
		"--poll-interval", "500ms", "--orphan-after", "2s", "--detach-after", "3s")
	store := filepath.Join(dir, "data")
	spawnArgs := []string{"--hub", "http://" + hubAddr, "--store", "file://" + store,
		"--allow-targets", "127.0.0.0/8", "--feed-interval", "50ms"}
	spawns := []*proc{startProc(t, env, filepath.Join(bin, "spawn"), spawnArgs...), startProc(t, env, filepath.Join(bin, "spawn"), spawnArgs...)}

	client := api.NewClient("http://"+hubAddr, "binaries-admin-token", nil)
	testkit.WaitFor(t, clustertest.WaitTimeout, "two nodes", func() bool { n, err := client.ListNodes(ctx); return err == nil && len(n) == 2 })
	u, err := client.CreateUser(ctx, api.UserCreate{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 400
	cr, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{feedBase + "/feeds/fast.xml"}, CommentLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	// Kill while the spawn holds comments it stored but has not reported
	// yet: the store has more of them than SQL usage says.
	var running api.Crawler
	testkit.WaitFor(t, clustertest.WaitTimeout, "comments stored but not yet reported", func() bool {
		running, err = client.GetCrawler(ctx, cr.ID)
		return err == nil && running.Node != "" && running.Usage >= 20 && int64(countStored(t, store, cr.ID)) > running.Usage
	})
	victim := spawns[0]
	if nodeIDOf(spawns[1]) == running.Node {
		victim = spawns[1]
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the spawn running crawler %d at usage %d", cr.ID, running.Usage)

	var final api.Crawler
	took := testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler at its limit on the survivor", func() bool {
		final, err = client.GetCrawler(ctx, cr.ID)
		return err == nil && final.State == api.StateLimitReached
	})
	stored := countStored(t, store, cr.ID)
	events, _ := client.Events(ctx)
	for _, e := range events {
		if e.Kind == "usage_recovered" {
			t.Logf("hub: %s", e.Message)
		}
	}
	t.Logf("limit reached %s after the kill: usage %d, stored %d, limit %d", took.Round(time.Millisecond), final.Usage, stored, limit)
	if final.Usage != limit || stored != limit {
		t.Fatalf("usage %d and stored %d, want both exactly the limit %d", final.Usage, stored, limit)
	}
}

// countStored counts the distinct comments a file store holds for a crawler.
func countStored(t *testing.T, dir string, crawlerID int64) int {
	t.Helper()
	ids := map[string]bool{}
	for _, c := range storedIn(t, dir, crawlerID) {
		ids[c.ID] = true
	}
	return len(ids)
}
