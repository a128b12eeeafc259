package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/google/uuid"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// cassandraAddr is the test Cassandra (scripts/services.sh), or a skip.
func cassandraAddr(t *testing.T) string {
	t.Helper()
	return testkit.Service(t, "BW_TEST_CASSANDRA")
}

// cqlSession opens a plain gocql session to hosts at consistency cl, so the
// test reads what the spawns wrote without going through the spawn's own
// store code. A query is retried twice, as a node the test restarted may
// still be coming back.
func cqlSession(t *testing.T, cl gocql.Consistency, hosts ...string) *gocql.Session {
	t.Helper()
	c := gocql.NewCluster(hosts...)
	c.ProtoVersion = 4
	c.Consistency = cl
	c.Timeout = cqlTimeout
	c.ConnectTimeout = cqlTimeout
	c.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 2}
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connect to Cassandra at %s: %v", strings.Join(hosts, ","), err)
	}
	return s
}

// cqlTimeout bounds a connection and a query of the tests' own sessions; a
// Cassandra node on the loaded test machine may take seconds to answer.
const cqlTimeout = 10 * time.Second

// freshKeyspace names a keyspace no other test uses, prefix and eight hex
// digits, and drops it on hosts when the test ends.
func freshKeyspace(t *testing.T, prefix string, hosts ...string) string {
	t.Helper()
	ks := prefix + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	t.Cleanup(func() {
		s := cqlSession(t, gocql.Quorum, hosts...)
		defer s.Close()
		if err := s.Query("DROP KEYSPACE IF EXISTS " + ks).Exec(); err != nil {
			t.Logf("drop keyspace %s: %v", ks, err)
		}
	})
	return ks
}

// rowsFor counts a crawler's rows across the days the test wrote.
func rowsFor(t *testing.T, s *gocql.Session, ks string, crawlerID int64, days ...time.Time) int {
	t.Helper()
	total := 0
	for _, d := range days {
		var n int
		if err := s.Query("SELECT COUNT(*) FROM "+ks+".comments WHERE crawler_id = ? AND day = ?", crawlerID, d.UTC().Format("2006-01-02")).Scan(&n); err != nil {
			return -1
		}
		total += n
	}
	return total
}

func TestCassandra_SpawnWritesAreReadBack(t *testing.T) {
	addr := cassandraAddr(t)
	ks := freshKeyspace(t, "bw_e2e_", addr)
	c := newCluster(t, clusterOpts{spawns: 2, store: "cassandra://" + addr + "/" + ks})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("cass")}, nil, 0)
	day := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		c.Feeds.Publish("cass", feedItem(fmt.Sprintf("c-%d", i), day.Add(time.Duration(i)*time.Minute)))
	}
	s := cqlSession(t, gocql.Quorum, addr)
	defer s.Close()
	testkit.WaitFor(t, clustertest.WaitTimeout, "10 rows in Cassandra", func() bool { return rowsFor(t, s, ks, cr.ID, day) == 10 })
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage 10", func() bool { return c.crawler(cr.ID).Usage == 10 })

	// The crawler moves to the other spawn; its comments are delivered
	// again there only past the cursor, and an overwrite of the same item
	// keeps one row.
	if err := c.Spawns[0].Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Spawns[1].Stop(); err != nil {
		t.Fatal(err)
	}
	c.addSpawn()
	testkit.WaitFor(t, clustertest.WaitTimeout, "crawler running on the new spawn", func() bool { return c.crawler(cr.ID).State == api.StateRunning })
	c.Feeds.Publish("cass", feedItem("c-new", day.Add(time.Hour)))
	testkit.WaitFor(t, clustertest.WaitTimeout, "11 rows", func() bool { return rowsFor(t, s, ks, cr.ID, day) == 11 })
	recent, err := c.Client.RecentComments(c.Ctx, cr.ID, 3)
	if err != nil || len(recent) != 3 || recent[0].ID != "c-new" {
		t.Fatalf("recent through the hub: %v %+v", err, recent)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage 11", func() bool { return c.crawler(cr.ID).Usage == 11 })
	if n := rowsFor(t, s, ks, cr.ID, day); n != 11 {
		t.Fatalf("%d rows, want 11", n)
	}
}

// TestCassandra_OutageLosesNothingCounted stops the shared Cassandra while a
// spawn writes, so it runs only when asked (make test runs it alone, after
// the other packages).
func TestCassandra_OutageLosesNothingCounted(t *testing.T) {
	if os.Getenv("BW_CASSANDRA_OUTAGE_TEST") != "1" {
		t.Skip("stops the shared Cassandra; set BW_CASSANDRA_OUTAGE_TEST=1 (make test does, in its own step)")
	}
	addr := cassandraAddr(t)
	ks := freshKeyspace(t, "bw_e2e_", addr)
	c := newCluster(t, clusterOpts{spawns: 1, store: "cassandra://" + addr + "/" + ks})
	u := c.user(0)
	cr := c.rssCrawler(u.ID, []string{c.FeedURL("outage")}, nil, 0)
	day := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	c.Feeds.Publish("outage", feedItem("before", day))
	s := cqlSession(t, gocql.Quorum, addr)
	testkit.WaitFor(t, clustertest.WaitTimeout, "first row", func() bool { return rowsFor(t, s, ks, cr.ID, day) == 1 })
	s.Close()

	script := func(verb string) {
		t.Helper()
		cmd := exec.Command("../scripts/cassandra.sh", verb)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cassandra.sh %s: %v\n%s", verb, err, out)
		}
	}
	script("stop")
	t.Cleanup(func() { _ = exec.Command("../scripts/cassandra.sh", "up").Run() })
	for i := range 20 {
		c.Feeds.Publish("outage", feedItem(fmt.Sprintf("during-%d", i), day.Add(time.Duration(i+1)*time.Second)))
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "spawn reports the store degraded", func() bool {
		h, ok := spawnHealth(t, c.Spawns[0])
		return ok && h.Store == "degraded"
	})
	script("up")
	restarted := time.Now()
	s = cqlSession(t, gocql.Quorum, addr)
	defer s.Close()
	testkit.WaitFor(t, clustertest.WaitTimeout, "all 21 comments in Cassandra", func() bool { return rowsFor(t, s, ks, cr.ID, day) == 21 })
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage equals rows", func() bool { return c.crawler(cr.ID).Usage == 21 })
	t.Logf("every counted comment written %s after Cassandra came back", time.Since(restarted).Round(time.Millisecond))
}
