package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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
	env := []string{"BW_NODE_TOKEN=fo-node", "BW_ADMIN_TOKEN=fo-admin"}

	// Spawns reach the first hub only through leaderLink; the first hub
	// reaches each spawn through that spawn's proxy, which drops the
	// requests of the cut term.
	addrs := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	urls := []string{"http://" + addrs[0], "http://" + addrs[1]}
	leaderLink := faultproxy.Start(t, urls[0], 1)
	hubs := make([]*proc, 2)
	hubs[0] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[0], "--advertise", leaderLink.URL(), "--db", dsn)
	testkit.WaitFor(t, failoverWait, "the first hub leads", func() bool {
		h, ok := hubHealth(urls[0])
		return ok && h.Role == api.RoleLeader
	})
	hubs[1] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[1], "--db", dsn)
	testkit.WaitFor(t, failoverWait, "the second hub stands by", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && h.Role == api.RoleStandby && h.Leader == leaderLink.URL()
	})
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
	client := api.NewClient(urls[0]+","+urls[1], "fo-admin", nil)
	ctx := context.Background()
	testkit.WaitFor(t, failoverWait, "three nodes", func() bool {
		nodes, err := client.ListNodes(ctx)
		return err == nil && len(nodes) == 3
	})
	u, err := client.CreateUser(ctx, api.UserCreate{Name: "partition"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 6 {
		cr, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{fmt.Sprintf("%s/feeds/pt%d.xml", feedBase, i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.ID)
	}
	const limit = 40
	limited, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{feedBase + "/feeds/ptlimit.xml"}, CommentLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, limited.ID)
	base := time.Now().Add(-time.Hour)
	publish := func(prefix string, n, from int) {
		for i := range n {
			feeds.Publish("ptlimit", feedserver.Item{GUID: fmt.Sprintf("%s%d", prefix, i), Title: "story", Description: "text", Published: base.Add(time.Duration(from+i) * time.Second)})
		}
	}
	publish("a", 25, 0)
	allRunning := func() bool {
		list, err := client.ListCrawlers(ctx)
		if err != nil || len(list) != len(ids) {
			return false
		}
		for _, c := range list {
			if c.State != api.StateRunning || c.Node == "" {
				return false
			}
		}
		return true
	}
	testkit.WaitFor(t, failoverWait, "every crawler running", allRunning)
	testkit.WaitFor(t, failoverWait, "the limited crawler's first comments counted", func() bool {
		c, err := client.GetCrawler(ctx, limited.ID)
		return err == nil && c.Usage == 25
	})
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
	publish("b", 10, 100) // comments arrive while the spawns are cut off
	leads := testkit.WaitFor(t, failoverWait, "the standby leads", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && h.Role == api.RoleLeader
	})
	back := testkit.WaitFor(t, failoverWait, "every crawler running again under the new leader", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && len(h.Nodes) == 3 && allRunning()
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
	testkit.WaitFor(t, failoverWait, "the old leader stands by", func() bool {
		h, ok := hubHealth(urls[0])
		return ok && h.Role == api.RoleStandby && h.Leader == urls[1]
	})

	publish("c", 40, 200)
	testkit.WaitFor(t, failoverWait, "the limited crawler at its limit with usage equal to stored", func() bool {
		c, err := client.GetCrawler(ctx, limited.ID)
		return err == nil && c.State == api.StateLimitReached && c.Usage == int64(len(storedIn(t, filepath.Join(dir, "data"), limited.ID)))
	})
	c, _ := client.GetCrawler(ctx, limited.ID)
	stored := len(storedIn(t, filepath.Join(dir, "data"), limited.ID))
	t.Logf("limited crawler: usage %d, stored %d, limit %d", c.Usage, stored, limit)
	if c.Usage != limit || stored != limit {
		t.Errorf("usage %d, stored %d: want both at the limit of %d", c.Usage, stored, limit)
	}
	for i, s := range spawns {
		terms := acceptedTerms(s)
		t.Logf("spawn %d accepted terms %v", i+1, terms)
		for j := 1; j < len(terms); j++ {
			if terms[j] < terms[j-1] {
				t.Errorf("spawn %d accepted term %d after term %d", i+1, terms[j], terms[j-1])
			}
		}
		if len(terms) == 0 || terms[len(terms)-1] <= oldTerm {
			t.Errorf("spawn %d never accepted a term after %d: %v", i+1, oldTerm, terms)
		}
	}
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
	env := []string{"BW_NODE_TOKEN=fo-node", "BW_ADMIN_TOKEN=fo-admin"}

	addrs := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	urls := []string{"http://" + addrs[0], "http://" + addrs[1]}
	hubs := make([]*proc, 2)
	hubs[0] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[0], "--db", u0.String())
	testkit.WaitFor(t, failoverWait, "the first hub leads", func() bool {
		h, ok := hubHealth(urls[0])
		return ok && h.Role == api.RoleLeader
	})
	hubs[1] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[1], "--db", dsn)
	testkit.WaitFor(t, failoverWait, "the second hub stands by", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && h.Role == api.RoleStandby && h.Leader == urls[0]
	})
	var spawns []*proc
	for range 3 {
		spawns = append(spawns, startProc(t, env, filepath.Join(bin, "spawn"), "--hub", strings.Join(urls, ","),
			"--store", "file://"+filepath.Join(dir, "data"), "--allow-targets", "127.0.0.0/8", "--feed-interval", "500ms"))
	}
	client := api.NewClient(urls[1]+","+urls[0], "fo-admin", nil)
	ctx := context.Background()
	testkit.WaitFor(t, failoverWait, "three nodes", func() bool {
		nodes, err := client.ListNodes(ctx)
		return err == nil && len(nodes) == 3
	})
	u, err := client.CreateUser(ctx, api.UserCreate{Name: "dbpartition"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 6 {
		cr, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{fmt.Sprintf("%s/feeds/db%d.xml", feedBase, i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.ID)
	}
	const limit = 40
	limited, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{feedBase + "/feeds/dblimit.xml"}, CommentLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, limited.ID)
	base := time.Now().Add(-time.Hour)
	publish := func(prefix string, n, from int) {
		for i := range n {
			feeds.Publish("dblimit", feedserver.Item{GUID: fmt.Sprintf("%s%d", prefix, i), Title: "story", Description: "text", Published: base.Add(time.Duration(from+i) * time.Second)})
		}
	}
	publish("a", 25, 0)
	allRunning := func() bool {
		list, err := client.ListCrawlers(ctx)
		if err != nil || len(list) != len(ids) {
			return false
		}
		for _, c := range list {
			if c.State != api.StateRunning || c.Node == "" {
				return false
			}
		}
		return true
	}
	testkit.WaitFor(t, failoverWait, "every crawler running", allRunning)
	testkit.WaitFor(t, failoverWait, "the limited crawler's first comments counted", func() bool {
		c, err := client.GetCrawler(ctx, limited.ID)
		return err == nil && c.Usage == 25
	})

	dbLink.setCut(true)
	publish("b", 10, 100)
	stopped := testkit.WaitFor(t, failoverWait, "the cut-off leader stops leading", func() bool {
		h, ok := hubHealth(urls[0])
		return !ok || h.Role != api.RoleLeader
	})
	leads := testkit.WaitFor(t, failoverWait, "the standby leads", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && h.Role == api.RoleLeader
	}) + stopped
	back := testkit.WaitFor(t, failoverWait, "every crawler running again under the new leader", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && len(h.Nodes) == 3 && allRunning()
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
	testkit.WaitFor(t, failoverWait, "the old leader stands by", func() bool {
		h, ok := hubHealth(urls[0])
		return ok && h.Role == api.RoleStandby && h.Leader == urls[1]
	})
	publish("c", 40, 200)
	testkit.WaitFor(t, failoverWait, "the limited crawler at its limit with usage equal to stored", func() bool {
		c, err := client.GetCrawler(ctx, limited.ID)
		return err == nil && c.State == api.StateLimitReached && c.Usage == int64(len(storedIn(t, filepath.Join(dir, "data"), limited.ID)))
	})
	c, _ := client.GetCrawler(ctx, limited.ID)
	stored := len(storedIn(t, filepath.Join(dir, "data"), limited.ID))
	t.Logf("limited crawler: usage %d, stored %d, limit %d", c.Usage, stored, limit)
	if c.Usage != limit || stored != limit {
		t.Errorf("usage %d, stored %d: want both at the limit of %d", c.Usage, stored, limit)
	}
	for i, s := range spawns {
		terms := acceptedTerms(s)
		t.Logf("spawn %d accepted terms %v", i+1, terms)
		for j := 1; j < len(terms); j++ {
			if terms[j] < terms[j-1] {
				t.Errorf("spawn %d accepted term %d after term %d", i+1, terms[j], terms[j-1])
			}
		}
	}
}
