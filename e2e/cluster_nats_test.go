package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit/clustertest"
)

// Timings of the test's NATS cluster.
const (
	natsReadyTimeout = 30 * time.Second // until every server greets and JetStream has a meta leader
	natsCallTimeout  = 5 * time.Second  // one JetStream API call
	natsProbeTimeout = 500 * time.Millisecond
	natsStopTimeout  = 10 * time.Second
)

// natsCluster is a three-server JetStream cluster of one test, on free
// loopback ports with its own store directories: the test may kill and
// restart its servers without disturbing anyone (the shared server of
// scripts/nats.sh is never touched).
type natsCluster struct {
	t       *testing.T
	bin     string
	servers []*natsNode
}

// natsNode is one server of a natsCluster.
type natsNode struct {
	name    string
	client  string // host:port for clients
	cluster string // host:port for routes
	dir     string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// startNatsCluster starts three clustered servers with JetStream and waits
// until JetStream answers on each. It is gated like natstest: skipped
// without BW_TEST_NATS (which says nats-server is installed), failing
// instead under BW_REQUIRE_SERVICES=1.
func startNatsCluster(t *testing.T) *natsCluster {
	t.Helper()
	testkit.Service(t, "BW_TEST_NATS")
	nc := &natsCluster{t: t, bin: natsBinary(t)}
	for i := range 3 {
		nc.servers = append(nc.servers, &natsNode{
			name:    fmt.Sprintf("bw-n%d", i+1),
			client:  testkit.FreeAddr(t),
			cluster: testkit.FreeAddr(t),
			dir:     t.TempDir(),
		})
	}
	t.Cleanup(func() {
		for _, s := range nc.servers {
			nc.stop(s, syscall.SIGKILL)
		}
	})
	for _, s := range nc.servers {
		nc.start(s)
	}
	for _, s := range nc.servers {
		nc.waitReady(s)
	}
	return nc
}

// natsBinary finds nats-server the way natstest does: BW_NATS_SERVER, the
// PATH, or Debian's place.
func natsBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("BW_NATS_SERVER"); b != "" {
		return b
	}
	if b, err := exec.LookPath("nats-server"); err == nil {
		return b
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	t.Fatal("nats-server not found (run: scripts/nats.sh up, or set BW_NATS_SERVER)")
	return ""
}

// URL lists every server, with the stream's replicas: the spawns' --queue.
func (nc *natsCluster) URL() string { return nc.urls() + "?replicas=3" }

func (nc *natsCluster) urls() string {
	var urls []string
	for _, s := range nc.servers {
		urls = append(urls, "nats://"+s.client)
	}
	return strings.Join(urls, ",")
}

// start starts server s (again, after a stop: same ports and store).
func (nc *natsCluster) start(s *natsNode) {
	nc.t.Helper()
	host, port, _ := net.SplitHostPort(s.client)
	var routes []string
	for _, o := range nc.servers {
		if o != s {
			routes = append(routes, "nats://"+o.cluster)
		}
	}
	args := []string{
		"--addr", host, "--port", port, "--server_name", s.name,
		"--cluster_name", "bw-test", "--cluster", "nats://" + s.cluster, "--routes", strings.Join(routes, ","),
		"--jetstream", "--store_dir", filepath.Join(s.dir, "js"),
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		nc.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(nc.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		nc.t.Fatalf("start nats-server %s: %v", s.name, err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
}

// waitReady waits until s greets clients and answers a JetStream request
// (which needs the cluster's meta leader).
func (nc *natsCluster) waitReady(s *natsNode) {
	nc.t.Helper()
	testkit.WaitFor(nc.t, natsReadyTimeout, "nats-server "+s.name+" with jetstream", func() bool {
		if !greets(s.client) {
			return false
		}
		conn, err := nats.Connect("nats://"+s.client, nats.Timeout(natsProbeTimeout), nats.NoReconnect())
		if err != nil {
			return false
		}
		defer conn.Close()
		js, err := jetstream.New(conn)
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), natsCallTimeout)
		defer cancel()
		_, err = js.AccountInfo(ctx)
		return err == nil
	})
}

// greets is true when a NATS server at addr sends its INFO line.
func greets(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, natsProbeTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(natsProbeTimeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "INFO")
}

// stop ends server s with sig and waits for it to exit.
func (nc *natsCluster) stop(s *natsNode, sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(natsStopTimeout):
		_ = cmd.Process.Kill()
		<-done
	}
}

// streamInfo reads a stream's info from the cluster.
func (nc *natsCluster) streamInfo(name string) (*jetstream.StreamInfo, error) {
	conn, err := nats.Connect(nc.urls(), nats.Timeout(natsProbeTimeout))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsCallTimeout)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return st.Info(ctx)
}

// node is the server named name.
func (nc *natsCluster) node(name string) *natsNode {
	nc.t.Helper()
	for _, s := range nc.servers {
		if s.name == name {
			return s
		}
	}
	nc.t.Fatalf("no server %q in the cluster", name)
	return nil
}

// TestNatsCluster_ServerLossPublishesEachCommentOnce kills the leader of the
// comment stream (three replicas) with SIGKILL while two spawns publish: the
// other two servers keep the stream writable, the spawns carry on, and the
// stream holds every counted comment exactly once by its Nats-Msg-Id, the
// batches re-sent after the kill dropped as duplicates (the new leader
// knows the ids its predecessor stored).
func TestNatsCluster_ServerLossPublishesEachCommentOnce(t *testing.T) {
	nc := startNatsCluster(t)
	c := newCluster(t, clusterOpts{})
	c.queueSpawn(nc.URL())
	c.queueSpawn(nc.URL())
	c.WaitNodes(2)

	info, err := nc.streamInfo(commentStream)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream %s: %d replicas, cluster %+v; want 3 replicas on 3 servers", commentStream, info.Config.Replicas, info.Cluster)
	}
	load := newFeedLoad(c, "natsloss", 4, time.Now().Add(-time.Hour).Truncate(time.Second))
	load.publish(10)
	waitUsage(t, load, clustertest.WaitTimeout, "before the outage")

	// The spawns are publishing this burst when the stream's leader dies.
	load.publish(20)
	leader := nc.node(info.Cluster.Leader)
	nc.stop(leader, syscall.SIGKILL)
	killed := time.Now()
	load.publish(10)
	waitUsage(t, load, outageTimeout, fmt.Sprintf("with %s (the stream leader) down", leader.name))
	t.Logf("every comment of the outage counted %s after the kill", time.Since(killed).Round(time.Millisecond))

	nc.start(leader)
	nc.waitReady(leader)
	load.publish(10)
	waitUsage(t, load, outageTimeout, leader.name+" back")
	testkit.WaitFor(t, outageTimeout, leader.name+" current in the stream again", func() bool {
		info, err := nc.streamInfo(commentStream)
		if err != nil || info.Cluster == nil {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if r.Name == leader.name {
				return r.Current && !r.Offline
			}
		}
		return info.Cluster.Leader == leader.name
	})

	want := load.n * len(load.feeds)
	byID := nc.messageIDs(commentStream)
	for id, seqs := range byID {
		if len(seqs) > 1 {
			t.Errorf("Nats-Msg-Id %s stored %d times, at sequences %v", id, len(seqs), seqs)
		}
	}
	for _, cr := range load.crawlers {
		stored := c.storedIDs(cr.ID)
		pub := map[string]bool{}
		for id := range byID {
			if crawler, comment, _ := strings.Cut(id, ":"); crawler == fmt.Sprint(cr.ID) {
				pub[comment] = true
			}
		}
		sameIDs(t, fmt.Sprintf("crawler %d", cr.ID), stored, pub)
	}
	if len(byID) != want {
		t.Fatalf("stream holds %d distinct comments, want the %d counted", len(byID), want)
	}
	t.Logf("%d comments in the stream, each once", len(byID))
}

// messageIDs reads every message of a stream by its sequence (a direct get
// from the stream's leader, so no consumer's redelivery can add or hide
// one) and returns the sequences at which each Nats-Msg-Id is stored. It
// checks each message's subject and id against its comment.
func (nc *natsCluster) messageIDs(stream string) map[string][]uint64 {
	nc.t.Helper()
	conn, err := nats.Connect(nc.urls())
	if err != nil {
		nc.t.Fatal(err)
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		nc.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsReadyTimeout)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		nc.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		nc.t.Fatal(err)
	}
	out := map[string][]uint64{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			nc.t.Fatalf("read %s sequence %d: %v", stream, seq, err)
		}
		var cm api.Comment
		if err := json.Unmarshal(m.Data, &cm); err != nil {
			nc.t.Fatalf("sequence %d on %s is not a comment: %v", seq, m.Subject, err)
		}
		id := m.Header.Get(jetstream.MsgIDHeader)
		if want := fmt.Sprintf("%d:%s", cm.CrawlerID, cm.ID); id != want {
			nc.t.Fatalf("comment %s has Nats-Msg-Id %q, want %q", cm.ID, id, want)
		}
		if want := fmt.Sprintf("comments.%d", cm.CrawlerID); m.Subject != want {
			nc.t.Fatalf("comment %s of crawler %d published on %s, want %s", cm.ID, cm.CrawlerID, m.Subject, want)
		}
		out[id] = append(out[id], seq)
	}
	return out
}

// waitUsage waits until the hub counts every item load published.
func waitUsage(t *testing.T, load *feedLoad, timeout time.Duration, what string) {
	t.Helper()
	want := int64(load.n * len(load.feeds))
	took := testkit.WaitFor(t, timeout, fmt.Sprintf("%s: usage %d", what, want), func() bool { return load.usage() == want })
	t.Logf("%s: %d comments counted (%s)", what, want, took.Round(time.Millisecond))
}
