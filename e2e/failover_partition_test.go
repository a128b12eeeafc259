package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/faultproxy"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// partitionBound: the leader cut off from every spawn (not from the
// database) → a standby leads and every crawler runs again. The spawns
// notice only when they detach (detach_after, 15 s by default), then
// complain to the standby as they register.
const partitionBound = 30 * time.Second

// dbPartitionBound: the leader cut off from the database → a standby leads
// and every crawler runs again. The standby takes over a lease after the
// last renewal it saw (6 s); then the spawns, woken with the new term,
// report their subscribers in the polls that follow, a limited crawler
// running from the poll after its first lease (two poll intervals).
const dbPartitionBound = 15 * time.Second

// epochTermOf reads the term of the epoch a hub→spawn request carries in
// its JSON body (0 when it carries none).
func epochTermOf(body []byte) uint64 {
	var m struct {
		Epoch string `json:"epoch"`
	}
	if json.Unmarshal(body, &m) != nil {
		return 0
	}
	return api.EpochTerm(m.Epoch)
}

// TestFailover_LeaderCutOffFromSpawnsStandbyLeads runs two hubs on one
// PostgreSQL database and three spawns at default timings, and cuts the
// leader off from every spawn, both ways, while both hubs still reach the
// database: the leader keeps renewing its leadership, the spawns detach
// and, registering again, tell the standby they cannot reach the leader;
// with complaints from most known spawns the standby takes the leadership
// over and every crawler runs again. When the partition heals the old
// leader stands by. Spawns accept terms only in increasing order, and a
// limited crawler ends with usage equal to what is stored, at its limit.
func TestFailover_LeaderCutOffFromSpawnsStandbyLeads(t *testing.T) {
	bin := binDir(t)
	dsn := freshPostgres(t)
	dir := t.TempDir()
	feeds, feedBase := feedserver.Start(t, feedserver.Options{})
	env := []string{"BW_NODE_TOKEN=failover-node-token", "BW_ADMIN_TOKEN=failover-admin-token"}

	// Spawns reach the first hub only through leaderLink; the first hub
	// reaches each spawn through that spawn's proxy, which drops the
	// requests of the cut term.
	addrs := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	urls := []string{"http://" + addrs[0], "http://" + addrs[1]}
	leaderLink := faultproxy.Start(t, urls[0], 1)
	hubs := make([]*proc, 2)
	hubs[0] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[0], "--advertise", leaderLink.URL(), "--db", dsn)
	waitRole(t, "the first hub leads", urls[0], api.RoleLeader, "")
	hubs[1] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[1], "--db", dsn)
	waitRole(t, "the second hub stands by", urls[1], api.RoleStandby, leaderLink.URL())
	var spawns []*proc
	var spawnLinks []*faultproxy.Proxy
	for i := range 3 {
		addr := testkit.FreeAddr(t)
		link := faultproxy.Start(t, "http://"+addr, uint64(10+i))
		spawnLinks = append(spawnLinks, link)
		spawns = append(spawns, startProc(t, env, filepath.Join(bin, "spawn"), "--listen", addr, "--advertise", link.URL(),
			"--hub", leaderLink.URL()+","+urls[1], "--store", "file://"+filepath.Join(dir, "data"),
			"--allow-targets", "127.0.0.0/8", "--feed-interval", "500ms"))
	}
	client := api.NewClient(urls[0]+","+urls[1], "failover-admin-token", nil)
	ctx := context.Background()
	testkit.WaitFor(t, failoverWait, "three nodes", func() bool {
		nodes, err := client.ListNodes(ctx)
		return err == nil && len(nodes) == 3
	})
	load := newFailoverLoad(t, client, feeds, feedBase, "pt", filepath.Join(dir, "data"))
	h0, _ := hubHealth(urls[0])
	oldTerm := api.EpochTerm(h0.Epoch)

	// Cut the leader off from the spawns, both ways; both hubs still
	// reach the database.
	var cutTerm atomic.Uint64
	cutTerm.Store(oldTerm)
	leaderLink.Cut()
	for _, l := range spawnLinks {
		l.Sever(func(r *http.Request, body []byte) bool { return epochTermOf(body) == cutTerm.Load() })
	}
	load.publish("b", 10, 100) // comments arrive while the spawns are cut off
	leads := waitRole(t, "the standby leads", urls[1], api.RoleLeader, "")
	back := testkit.WaitFor(t, failoverWait, "every crawler running again under the new leader", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && len(h.Nodes) == 3 && load.allRunning()
	}) + leads
	t.Logf("leader cut off from the spawns: standby leads after %s, every crawler running again after %s (bound %s)",
		leads.Round(time.Millisecond), back.Round(time.Millisecond), partitionBound)
	if back > partitionBound+schedulingSlack {
		t.Errorf("the takeover took %s, over %s", back, partitionBound)
	}
	if h, ok := hubHealth(urls[0]); ok && h.Role == api.RoleLeader {
		t.Errorf("the cut-off hub still says it leads (term %d)", oldTerm)
	}
	if !strings.Contains(hubs[1].output(), "most spawns cannot reach the leader") {
		t.Error("the standby took over without the spawns' complaints")
	}

	// Heal: the old leader stands by and names the new one.
	leaderLink.Heal()
	for _, l := range spawnLinks {
		l.Sever(nil)
	}
	waitRole(t, "the old leader stands by", urls[0], api.RoleStandby, urls[1])

	load.expectExactLimit("c", 200)
	expectIncreasingTerms(t, spawns, oldTerm)
}

// tcpLink forwards TCP connections to a target until cut: then it closes
// every open connection and resets new ones at once, as a network
// partition between a hub and its database looks to the hub.
type tcpLink struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func startTCPLink(t *testing.T, target string) *tcpLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &tcpLink{ln: ln, target: target, conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		l.setCut(true)
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.pipe(c)
			}()
		}
	}()
	return l
}

func (l *tcpLink) addr() string { return l.ln.Addr().String() }

// track registers c while the link is up; it reports false when cut.
func (l *tcpLink) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return false
	}
	l.conns[c] = true
	return true
}

func (l *tcpLink) pipe(c net.Conn) {
	up, err := net.Dial("tcp", l.target)
	if err != nil || !l.track(c) || !l.track(up) {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, up)
	l.mu.Unlock()
}

// setCut cuts the link (closing what is open) or heals it.
func (l *tcpLink) setCut(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	if cut {
		for c := range l.conns {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			c.Close()
		}
		clear(l.conns)
	}
}

// TestFailover_LeaderCutOffFromDatabaseStandbyLeads runs two hubs on one
// PostgreSQL database, the leader reaching it through a TCP link the test
// cuts, and three spawns at default timings. With the database gone the
// leader cannot renew: it stops leading at its deadline, before the
// standby's view of the lease lapses; the standby takes over, wakes the
// spawns with the new term and every crawler runs again. Healed, the old
// leader stands by. Spawns accept terms only in increasing order, and a
// limited crawler ends with usage equal to what is stored, at its limit.
func TestFailover_LeaderCutOffFromDatabaseStandbyLeads(t *testing.T) {
	bin := binDir(t)
	dsn := freshPostgres(t)
	u0, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dbLink := startTCPLink(t, u0.Host)
	u0.Host = dbLink.addr()
	dir := t.TempDir()
	feeds, feedBase := feedserver.Start(t, feedserver.Options{})
	env := []string{"BW_NODE_TOKEN=failover-node-token", "BW_ADMIN_TOKEN=failover-admin-token"}

	addrs := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	urls := []string{"http://" + addrs[0], "http://" + addrs[1]}
	hubs := make([]*proc, 2)
	hubs[0] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[0], "--db", u0.String())
	waitRole(t, "the first hub leads", urls[0], api.RoleLeader, "")
	hubs[1] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[1], "--db", dsn)
	waitRole(t, "the second hub stands by", urls[1], api.RoleStandby, urls[0])
	var spawns []*proc
	for range 3 {
		spawns = append(spawns, startProc(t, env, filepath.Join(bin, "spawn"), "--hub", strings.Join(urls, ","),
			"--store", "file://"+filepath.Join(dir, "data"), "--allow-targets", "127.0.0.0/8", "--feed-interval", "500ms"))
	}
	client := api.NewClient(urls[1]+","+urls[0], "failover-admin-token", nil)
	ctx := context.Background()
	testkit.WaitFor(t, failoverWait, "three nodes", func() bool {
		nodes, err := client.ListNodes(ctx)
		return err == nil && len(nodes) == 3
	})
	load := newFailoverLoad(t, client, feeds, feedBase, "db", filepath.Join(dir, "data"))

	dbLink.setCut(true)
	load.publish("b", 10, 100)
	stopped := testkit.WaitFor(t, failoverWait, "the cut-off leader stops leading", func() bool {
		h, ok := hubHealth(urls[0])
		return !ok || h.Role != api.RoleLeader
	})
	leads := waitRole(t, "the standby leads", urls[1], api.RoleLeader, "") + stopped
	back := testkit.WaitFor(t, failoverWait, "every crawler running again under the new leader", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && len(h.Nodes) == 3 && load.allRunning()
	}) + leads
	t.Logf("leader cut off from the database: it stopped leading after %s, the standby leads after %s, every crawler running again after %s (bound %s)",
		stopped.Round(time.Millisecond), leads.Round(time.Millisecond), back.Round(time.Millisecond), dbPartitionBound)
	if stopped > leads {
		t.Errorf("the standby led before the old leader stopped")
	}
	if back > dbPartitionBound {
		t.Errorf("the takeover took %s, over %s", back, failoverBound)
	}

	dbLink.setCut(false)
	waitRole(t, "the old leader stands by", urls[0], api.RoleStandby, urls[1])
	load.expectExactLimit("c", 200)
	expectIncreasingTerms(t, spawns, 0)
}
