package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// Promises at default settings (poll every 2 s, leader lease 6 s renewed
// every 2 s), measured with real processes.
const (
	// failoverBound: the leader SIGKILLed → a standby leads and every
	// crawler runs again.
	failoverBound = 10 * time.Second
	// killedSpawnBound: a spawn SIGKILLed (connection refused) → its
	// crawlers run on another spawn.
	killedSpawnBound = 3 * time.Second
	// failoverWait bounds every wait of these tests.
	failoverWait = 60 * time.Second
)

// freshPostgres creates an empty database on BW_TEST_POSTGRES for one test
// and drops it when the test ends.
func freshPostgres(t *testing.T) string {
	t.Helper()
	base := os.Getenv("BW_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
			t.Fatal("BW_TEST_POSTGRES is unset but BW_REQUIRE_SERVICES=1")
		}
		t.Skip("BW_TEST_POSTGRES is unset")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("BW_TEST_POSTGRES: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "bw_failover_" + hex.EncodeToString(b[:])
	exec := func(stmt string) {
		db, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: gormlogger.Discard})
		if err != nil {
			t.Fatalf("connect to BW_TEST_POSTGRES: %v", err)
		}
		defer func() {
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		}()
		if err := db.Exec(stmt).Error; err != nil {
			t.Errorf("%s: %v", stmt, err)
		}
	}
	exec("CREATE DATABASE " + name)
	t.Cleanup(func() { exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// hubHealth reads one hub's health document directly.
func hubHealth(hubURL string) (api.HubHealth, bool) {
	resp, err := http.Get(hubURL + api.PathHealth)
	if err != nil {
		return api.HubHealth{}, false
	}
	defer resp.Body.Close()
	var h api.HubHealth
	return h, resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil
}

var acceptedTerm = regexp.MustCompile(`msg="hub term accepted".* term=(\d+)`)

// acceptedTerms lists the hub terms a spawn process logged accepting, in
// order.
func acceptedTerms(p *proc) []uint64 {
	var out []uint64
	for _, m := range acceptedTerm.FindAllStringSubmatch(p.output(), -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

// TestFailover_LeaderKilledStandbyLeads runs two hubs on one PostgreSQL
// database and three spawns that know both, at default timings. The leader
// is SIGKILLed: the standby takes over and every crawler runs again within
// failoverBound. Then a spawn is SIGKILLed: its crawlers run elsewhere
// within killedSpawnBound. No spawn ever accepts a lower term after a
// higher one, and a limited crawler ends with usage equal to what is
// stored, at its limit.
func TestFailover_LeaderKilledStandbyLeads(t *testing.T) {
	bin := binDir(t)
	dsn := freshPostgres(t)
	dir := t.TempDir()
	feeds, feedBase := feedserver.Start(t, feedserver.Options{})
	env := []string{"BW_NODE_TOKEN=failover-node-token", "BW_ADMIN_TOKEN=failover-admin-token"}

	addrs := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	urls := []string{"http://" + addrs[0], "http://" + addrs[1]}
	hubs := make([]*proc, 2)
	startHub := func(i int) {
		hubs[i] = startProc(t, env, filepath.Join(bin, "hub"), "--listen", addrs[i], "--db", dsn)
	}
	startHub(0)
	waitRole(t, "the first hub leads", urls[0], api.RoleLeader, "")
	startHub(1)
	waitRole(t, "the second hub stands by and names the leader", urls[1], api.RoleStandby, urls[0])
	spawnArgs := []string{"--hub", strings.Join(urls, ","), "--store", "file://" + filepath.Join(dir, "data"),
		"--allow-targets", "127.0.0.0/8", "--feed-interval", "500ms"}
	var spawns []*proc
	for range 3 {
		spawns = append(spawns, startProc(t, env, filepath.Join(bin, "spawn"), spawnArgs...))
	}
	// The client knows both hubs; it finds the leader whichever answers.
	client := api.NewClient(urls[1]+","+urls[0], "failover-admin-token", nil)
	ctx := context.Background()
	testkit.WaitFor(t, failoverWait, "three nodes", func() bool {
		nodes, err := client.ListNodes(ctx)
		return err == nil && len(nodes) == 3
	})

	load := newFailoverLoad(t, client, feeds, feedBase, "fo", filepath.Join(dir, "data"))

	// SIGKILL the leader.
	if err := hubs[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	leads := waitRole(t, "the standby leads", urls[1], api.RoleLeader, "")
	back := testkit.WaitFor(t, failoverWait, "every crawler running again under the new leader", func() bool {
		h, ok := hubHealth(urls[1])
		return ok && len(h.Nodes) == 3 && load.allRunning()
	}) + leads
	t.Logf("leader SIGKILLed: standby leads after %s, every crawler running again after %s (bound %s)", leads.Round(time.Millisecond), back.Round(time.Millisecond), failoverBound)
	if back > failoverBound+schedulingSlack {
		t.Errorf("failover took %s, over %s", back, failoverBound)
	}

	// The old leader comes back: it stands by.
	startHub(0)
	waitRole(t, "the restarted hub stands by", urls[0], api.RoleStandby, urls[1])

	// SIGKILL the spawn running the limited crawler: connection refused.
	lc, err := client.GetCrawler(ctx, load.limited.ID)
	if err != nil {
		t.Fatal(err)
	}
	victim := -1
	for i, s := range spawns {
		if nodeIDOf(s) == lc.Node {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no spawn runs node %s", lc.Node)
	}
	onVictim := map[int64]bool{}
	list, _ := client.ListCrawlers(ctx)
	for _, c := range list {
		if c.Node == lc.Node {
			onVictim[c.ID] = true
		}
	}
	if err := spawns[victim].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	moved := testkit.WaitFor(t, failoverWait, "the killed spawn's crawlers running elsewhere", func() bool {
		list, err := client.ListCrawlers(ctx)
		if err != nil {
			return false
		}
		for _, c := range list {
			if onVictim[c.ID] && (c.Node == lc.Node || c.Node == "" || (c.State != api.StateRunning && c.State != api.StateQuotaWait)) {
				return false
			}
		}
		return true
	})
	t.Logf("spawn SIGKILLed: its %d crawlers assigned and started elsewhere after %s (bound %s)", len(onVictim), moved.Round(time.Millisecond), killedSpawnBound)
	if moved > killedSpawnBound+schedulingSlack {
		t.Errorf("moving a killed spawn's crawlers took %s, over %s", moved, killedSpawnBound)
	}

	// More comments than the limit allows: usage ends equal to what is
	// stored, at the limit, the killed spawn's unreported usage included.
	load.expectExactLimit("b", 100)
	expectIncreasingTerms(t, spawns, 0)
}

// waitRole waits until the hub at url reports role (naming leader as the
// leader, when leader is set) and returns how long that took.
func waitRole(t *testing.T, what, url, role, leader string) time.Duration {
	t.Helper()
	return testkit.WaitFor(t, failoverWait, what, func() bool {
		h, ok := hubHealth(url)
		return ok && h.Role == role && (leader == "" || h.Leader == leader)
	})
}

// failoverLimit is the limit of the limited crawler of failoverLoad.
const failoverLimit = 40

// failoverLoad is what the failover tests crawl: six rss crawlers and one
// limited to failoverLimit, of one user, their comments stored in a file
// store shared by the spawns.
type failoverLoad struct {
	t       *testing.T
	client  *api.Client
	feeds   *feedserver.Server
	name    string // prefix of the feeds
	dataDir string
	base    time.Time
	ids     []int64
	limited api.Crawler
}

// newFailoverLoad creates the crawlers, publishes 25 comments for the
// limited one and waits until every crawler runs and those are counted.
func newFailoverLoad(t *testing.T, client *api.Client, feeds *feedserver.Server, feedBase, name, dataDir string) *failoverLoad {
	t.Helper()
	ctx := context.Background()
	l := &failoverLoad{t: t, client: client, feeds: feeds, name: name, dataDir: dataDir, base: time.Now().Add(-time.Hour)}
	u, err := client.CreateUser(ctx, api.UserCreate{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		cr, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{fmt.Sprintf("%s/feeds/%s%d.xml", feedBase, name, i)}})
		if err != nil {
			t.Fatal(err)
		}
		l.ids = append(l.ids, cr.ID)
	}
	l.limited, err = client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{feedBase + "/feeds/" + name + "limit.xml"}, CommentLimit: failoverLimit})
	if err != nil {
		t.Fatal(err)
	}
	l.ids = append(l.ids, l.limited.ID)
	l.publish("a", 25, 0)
	testkit.WaitFor(t, failoverWait, "every crawler running", l.allRunning)
	testkit.WaitFor(t, failoverWait, "the limited crawler's first comments counted", func() bool {
		c, err := client.GetCrawler(ctx, l.limited.ID)
		return err == nil && c.Usage == 25
	})
	return l
}

// publish adds n comments for the limited crawler, guids prefix0…, the
// first published from seconds after the load's base time.
func (l *failoverLoad) publish(prefix string, n, from int) {
	for i := range n {
		l.feeds.Publish(l.name+"limit", feedserver.Item{GUID: fmt.Sprintf("%s%d", prefix, i), Title: "story", Description: "text",
			Published: l.base.Add(time.Duration(from+i) * time.Second)})
	}
}

// allRunning reports whether the leader says every crawler runs on a node.
func (l *failoverLoad) allRunning() bool {
	list, err := l.client.ListCrawlers(context.Background())
	if err != nil || len(list) != len(l.ids) {
		return false
	}
	for _, c := range list {
		if c.State != api.StateRunning || c.Node == "" {
			return false
		}
	}
	return true
}

// expectExactLimit publishes more comments than the limit allows and
// waits until the limited crawler is at its limit with usage equal to
// what is stored; both must be exactly the limit.
func (l *failoverLoad) expectExactLimit(prefix string, from int) {
	l.t.Helper()
	l.publish(prefix, 60, from)
	ctx := context.Background()
	testkit.WaitFor(l.t, failoverWait, "the limited crawler at its limit with usage equal to stored", func() bool {
		c, err := l.client.GetCrawler(ctx, l.limited.ID)
		return err == nil && c.State == api.StateLimitReached && c.Usage == int64(len(storedIn(l.t, l.dataDir, l.limited.ID)))
	})
	c, _ := l.client.GetCrawler(ctx, l.limited.ID)
	stored := len(storedIn(l.t, l.dataDir, l.limited.ID))
	l.t.Logf("limited crawler: usage %d, stored %d, limit %d", c.Usage, stored, failoverLimit)
	if c.Usage != failoverLimit || stored != failoverLimit {
		l.t.Errorf("usage %d, stored %d: want both at the limit of %d", c.Usage, stored, failoverLimit)
	}
}

// expectIncreasingTerms checks that no spawn accepted a lower term after a
// higher one, and that each accepted one above after when after > 0.
func expectIncreasingTerms(t *testing.T, spawns []*proc, after uint64) {
	t.Helper()
	for i, s := range spawns {
		terms := acceptedTerms(s)
		t.Logf("spawn %d accepted terms %v", i+1, terms)
		for j := 1; j < len(terms); j++ {
			if terms[j] < terms[j-1] {
				t.Errorf("spawn %d accepted term %d after term %d", i+1, terms[j], terms[j-1])
			}
		}
		if after > 0 && (len(terms) == 0 || terms[len(terms)-1] <= after) {
			t.Errorf("spawn %d never accepted a term after %d: %v", i+1, after, terms)
		}
	}
}
