package e2e

// These tests run spawns against the three-node Cassandra cluster of
// scripts/cassandra-cluster.sh (BW_TEST_CASSANDRA_CLUSTER) with a keyspace of
// three copies written and read at QUORUM, and stop and start its nodes
// through that script (BW_CASSANDRA_CLUSTER_SCRIPT). They are skipped
// without the cluster, and fail instead when BW_REQUIRE_SERVICES=1 and
// BW_REQUIRE_CLUSTER=1 (make test-cluster sets both). Nothing else uses the
// cluster, so stopping its nodes disturbs no other test.

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// Bounds of the cluster tests' waits: a node of the loaded 2-core test
// machine takes up to a minute to start, and the spawns' drivers take a few
// seconds to notice a node that died or came back.
const (
	nodeStartTimeout = 5 * time.Minute
	outageTimeout    = 2 * time.Minute
)

// cassandraCluster is the test cluster: its hosts and the script that runs
// its nodes.
type cassandraCluster struct {
	t      *testing.T
	hosts  []string
	script string
}

// requireCluster returns the environment variable env, or skips the test
// when it is unset; under BW_REQUIRE_SERVICES=1 with BW_REQUIRE_CLUSTER=1 it
// fails instead, so a run meant to cover the clusters cannot pass by
// skipping them. (BW_REQUIRE_SERVICES alone does not require them: the
// clusters are started only for their own step.)
func requireCluster(t *testing.T, env, start string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("BW_REQUIRE_SERVICES") == "1" && os.Getenv("BW_REQUIRE_CLUSTER") == "1" {
			t.Fatalf("%s is not set (run: %s up, then eval \"$(%s env)\")", env, start, start)
		}
		t.Skipf("%s not set (%s up starts the cluster)", env, start)
	}
	return v
}

func newCassandraCluster(t *testing.T) *cassandraCluster {
	t.Helper()
	hosts := requireCluster(t, "BW_TEST_CASSANDRA_CLUSTER", "scripts/cassandra-cluster.sh")
	script := os.Getenv("BW_CASSANDRA_CLUSTER_SCRIPT")
	if script == "" {
		script = "../scripts/cassandra-cluster.sh"
	}
	cc := &cassandraCluster{t: t, hosts: strings.Split(hosts, ","), script: script}
	// A test that failed half-way may have left a node down.
	cc.run("up")
	return cc
}

// run runs the cluster script with args and fails the test when it fails.
func (cc *cassandraCluster) run(args ...string) {
	cc.t.Helper()
	if err := cc.exec(args...); err != nil {
		cc.t.Fatal(err)
	}
}

// exec runs the cluster script with args; it may be called from any
// goroutine.
func (cc *cassandraCluster) exec(args ...string) error {
	start := time.Now()
	out, err := exec.Command(cc.script, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", cc.script, strings.Join(args, " "), err, out)
	}
	if d := time.Since(start); d > time.Second {
		cc.t.Logf("cassandra-cluster.sh %s took %s", strings.Join(args, " "), d.Round(100*time.Millisecond))
	}
	return nil
}

// uri is the spawns' --store: three copies, QUORUM reads and writes.
func (cc *cassandraCluster) uri(ks string) string {
	return "cassandra://" + strings.Join(cc.hosts, ",") + "/" + ks + "?replication=3&consistency=quorum"
}

// session opens a plain gocql session to the cluster at consistency cl.
func (cc *cassandraCluster) session(cl gocql.Consistency) *gocql.Session {
	cc.t.Helper()
	return cqlSession(cc.t, cl, cc.hosts...)
}

// keyspace names a fresh keyspace and drops it when the test ends, after
// the nodes are up again.
func (cc *cassandraCluster) keyspace() string {
	cc.t.Helper()
	ks := freshKeyspace(cc.t, "bw_cluster_", cc.hosts...)
	// Registered after the drop, so it runs before it.
	cc.t.Cleanup(func() { _ = exec.Command(cc.script, "up").Run() })
	return ks
}

// replication reads the keyspace's replication as Cassandra holds it.
func replication(t *testing.T, s *gocql.Session, ks string) map[string]string {
	t.Helper()
	var r map[string]string
	if err := s.Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", ks).Scan(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// feedLoad publishes items to several feeds, one crawler each, and counts
// them.
type feedLoad struct {
	c        *cluster
	feeds    []string
	crawlers []api.Crawler
	day      time.Time
	n        int // items published per feed
}

func newFeedLoad(c *cluster, prefix string, crawlers int, day time.Time) *feedLoad {
	c.t.Helper()
	l := &feedLoad{c: c, day: day}
	u := c.user(0)
	for i := range crawlers {
		feed := fmt.Sprintf("%s%d", prefix, i)
		l.feeds = append(l.feeds, feed)
		l.crawlers = append(l.crawlers, c.rssCrawler(u.ID, []string{c.FeedURL(feed)}, nil, 0))
	}
	return l
}

// publish adds n items to every feed. A feed serves its newest 50 items,
// so n stays below that.
func (l *feedLoad) publish(n int) {
	for range n {
		for j, feed := range l.feeds {
			l.c.Feeds.Publish(feed, feedItem(fmt.Sprintf("%s-%d", feed, l.n), l.day.Add(time.Duration(l.n*len(l.feeds)+j)*time.Second)))
		}
		l.n++
	}
}

// usage is every crawler's usage as the hub reports it, summed, or -1.
func (l *feedLoad) usage() int64 {
	var sum int64
	for _, cr := range l.crawlers {
		got, err := l.c.Client.GetCrawler(l.c.Ctx, cr.ID)
		if err != nil {
			return -1
		}
		sum += got.Usage
	}
	return sum
}

// rows is every crawler's rows as s reads them, summed.
func (l *feedLoad) rows(s *gocql.Session, ks string) (int, error) {
	sum := 0
	for _, cr := range l.crawlers {
		var n int
		err := s.Query("SELECT COUNT(*) FROM "+ks+".comments WHERE crawler_id = ? AND day = ?", cr.ID, l.day.Format("2006-01-02")).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("count rows of crawler %d: %w", cr.ID, err)
		}
		sum += n
	}
	return sum, nil
}

// waitRows waits until s reads want rows, logging each read that changes
// what it sees (a count or an error), so a timeout shows why.
func (l *feedLoad) waitRows(s *gocql.Session, ks string, want int, timeout time.Duration, what string) time.Duration {
	l.c.t.Helper()
	var last string
	return testkit.WaitFor(l.c.t, timeout, fmt.Sprintf("%s: %d rows", what, want), func() bool {
		n, err := l.rows(s, ks)
		seen := fmt.Sprint(n)
		if err != nil {
			seen = err.Error()
		}
		if seen != last {
			l.c.t.Logf("%s: read %s rows (want %d)", what, seen, want)
			last = seen
		}
		return err == nil && n == want
	})
}

// waitCounted waits until the hub counts every published item and the
// cluster holds exactly that many rows at s's consistency.
func (l *feedLoad) waitCounted(s *gocql.Session, ks string, timeout time.Duration, what string) {
	l.c.t.Helper()
	want := l.n * len(l.feeds)
	took := testkit.WaitFor(l.c.t, timeout, fmt.Sprintf("%s: usage %d", what, want), func() bool { return l.usage() == int64(want) })
	l.waitRows(s, ks, want, timeout, what)
	l.c.t.Logf("%s: %d comments counted and read back (%s)", what, want, took.Round(time.Millisecond))
}

// TestCassandraCluster_NodeLossLosesNothingCounted kills a node (the seed)
// with SIGKILL while two spawns write: with three copies written at QUORUM,
// the spawns keep writing during the outage, every counted comment is read
// back at QUORUM, and once the node is back at ALL.
func TestCassandraCluster_NodeLossLosesNothingCounted(t *testing.T) {
	cc := newCassandraCluster(t)
	ks := cc.keyspace()
	c := newCluster(t, clusterOpts{spawns: 2, store: cc.uri(ks)})
	quorum := cc.session(gocql.Quorum)
	defer quorum.Close()
	if r := replication(t, quorum, ks); r["replication_factor"] != "3" {
		t.Fatalf("keyspace %s replication %v, want a factor of 3", ks, r)
	}
	load := newFeedLoad(c, "nodeloss", 4, time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC))
	load.publish(10)
	load.waitCounted(quorum, ks, outageTimeout, "before the outage")

	// The spawns are writing this burst when the node dies.
	load.publish(20)
	cc.run("kill", "1")
	killed := time.Now()
	load.publish(20)
	load.waitCounted(quorum, ks, outageTimeout, "with node 1 down")
	t.Logf("every comment of the outage counted and read back %s after the kill", time.Since(killed).Round(time.Millisecond))

	cc.run("up", "1")
	load.publish(10)
	load.waitCounted(quorum, ks, outageTimeout, "after node 1 returned")
	// ALL needs every replica, the one that was down included.
	all := cc.session(gocql.All)
	defer all.Close()
	load.waitRows(all, ks, load.n*len(load.feeds), outageTimeout, "at ALL")
	if u, want := load.usage(), int64(load.n*len(load.feeds)); u != want {
		t.Fatalf("usage %d after the node returned, want %d", u, want)
	}
}

// TestCassandraCluster_QuorumLossBacksOff stops two of the three nodes: no
// QUORUM write can succeed, so the spawn reports its store degraded, counts
// nothing and holds its batches (the bounded buffer pushes back on the
// feeds); when the nodes return every comment is written and counted once.
func TestCassandraCluster_QuorumLossBacksOff(t *testing.T) {
	cc := newCassandraCluster(t)
	ks := cc.keyspace()
	c := newCluster(t, clusterOpts{spawns: 1, store: cc.uri(ks)})
	quorum := cc.session(gocql.Quorum)
	defer quorum.Close()
	load := newFeedLoad(c, "quorumloss", 2, time.Date(2026, 6, 2, 8, 0, 0, 0, time.UTC))
	load.publish(5)
	load.waitCounted(quorum, ks, outageTimeout, "before the outage")
	before := load.usage()

	// Both at once: a graceful stop drains and flushes for a few seconds.
	stopped := make(chan error, 1)
	go func() { stopped <- cc.exec("down", "3") }()
	cc.run("down", "2")
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	load.publish(20)
	testkit.WaitFor(t, outageTimeout, "the spawn reports its store degraded", func() bool {
		h, ok := spawnHealth(t, c.Spawns[0])
		return ok && h.Store == "degraded"
	})
	// The spawn keeps retrying while QUORUM is unavailable; nothing of the
	// outage may be counted in the meantime.
	if u := load.usage(); u != before {
		t.Fatalf("usage %d with two of three nodes down, want %d: counted without a quorum", u, before)
	}
	if h, _ := spawnHealth(t, c.Spawns[0]); h.Store != "degraded" {
		t.Fatalf("store %q with two of three nodes down, want degraded", h.Store)
	}

	cc.run("up")
	returned := time.Now()
	load.waitCounted(quorum, ks, nodeStartTimeout, "after nodes 2 and 3 returned")
	t.Logf("every comment of the outage counted %s after the nodes returned", time.Since(returned).Round(time.Millisecond))
	testkit.WaitFor(t, outageTimeout, "the spawn's store ok again", func() bool {
		h, ok := spawnHealth(t, c.Spawns[0])
		return ok && h.Store == "ok"
	})
}
