// Package natstest runs a private nats-server process for one test: on its
// own port and store directory, so the test sees only its own messages and
// may stop and start the server without disturbing anyone else (the shared
// server of scripts/nats.sh is never stopped). The binary is Debian's
// nats-server, which scripts/nats.sh installs. A test may also start a
// JetStream cluster of such servers and kill its members. It also reads
// back what a JetStream stream holds, on any server.
package natstest

import (
	"bufio"
	"context"
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

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// Timings of a test server.
const (
	readyTimeout = 20 * time.Second // from start until it greets clients
	// clusterReadyTimeout is from a cluster member's start until JetStream
	// answers on it, which needs the cluster's meta leader.
	clusterReadyTimeout = 30 * time.Second
	callTimeout         = 5 * time.Second        // one JetStream API call
	readTimeout         = 20 * time.Second       // waiting for a stream's next message
	probeTimeout        = 500 * time.Millisecond // one readiness probe
	probeTick           = 10 * time.Millisecond  // between probes
	stopTimeout         = 10 * time.Second       // its exit after a signal
)

// Server is a nats-server process of one test.
type Server struct {
	t         testing.TB
	bin       string
	addr      string
	dir       string
	jetstream bool

	// Only for a member of a Cluster (else empty): its name, its host:port
	// for routes and the other members' route URLs.
	name    string
	cluster string
	routes  []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a private server, with JetStream when jetstream is set, and
// kills it when the test ends. It is gated like the shared server: the test
// is skipped when BW_TEST_NATS is unset, and fails instead under
// BW_REQUIRE_SERVICES=1.
func Start(t testing.TB, jetstream bool) *Server {
	t.Helper()
	testkit.Service(t, "BW_TEST_NATS")
	s := &Server{t: t, bin: binary(t), addr: testkit.FreeAddr(t), dir: t.TempDir(), jetstream: jetstream}
	s.Restart()
	t.Cleanup(func() { s.Stop(syscall.SIGKILL) })
	return s
}

// Cluster is a JetStream cluster of one test: servers on free loopback
// ports with their own store directories, which the test may kill and
// restart without disturbing anyone.
type Cluster struct {
	Servers []*Server
}

// StartCluster starts n clustered servers with JetStream, named bw-n1 to
// bw-nn, waits until JetStream answers on each and kills them when the
// test ends. It is gated like Start.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	testkit.Service(t, "BW_TEST_NATS")
	bin := binary(t)
	c := &Cluster{}
	for i := range n {
		c.Servers = append(c.Servers, &Server{t: t, bin: bin, addr: testkit.FreeAddr(t), dir: t.TempDir(), jetstream: true,
			name: fmt.Sprintf("bw-n%d", i+1), cluster: testkit.FreeAddr(t)})
	}
	for _, s := range c.Servers {
		for _, o := range c.Servers {
			if o != s {
				s.routes = append(s.routes, "nats://"+o.cluster)
			}
		}
	}
	t.Cleanup(func() {
		for _, s := range c.Servers {
			s.Stop(syscall.SIGKILL)
		}
	})
	// A member waits for the others to elect a meta leader, so all start
	// before any is waited for.
	for _, s := range c.Servers {
		s.start()
	}
	for _, s := range c.Servers {
		s.waitReady()
	}
	return c
}

// URLs lists every member's client URL, comma-separated as nats.Connect
// takes them.
func (c *Cluster) URLs() string {
	urls := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		urls = append(urls, s.URL())
	}
	return strings.Join(urls, ",")
}

// Server is the member named name (as JetStream names a stream's leader
// and replicas), or nil.
func (c *Cluster) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.name == name {
			return s
		}
	}
	return nil
}

// binary finds the nats-server binary: BW_NATS_SERVER, the PATH, or
// Debian's place, which is often not on the PATH.
func binary(t testing.TB) string {
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

// URL is the server's client URL. It stays the same across restarts.
func (s *Server) URL() string { return "nats://" + s.addr }

// Name is a cluster member's server name; empty for a lone server.
func (s *Server) Name() string { return s.name }

// Restart starts the server process (again, after Stop: same port, same
// store directory) and waits until it greets clients, and for a cluster
// member until JetStream answers on it.
func (s *Server) Restart() {
	s.t.Helper()
	s.start()
	s.waitReady()
}

// start starts the server process.
func (s *Server) start() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.addr)
	args := []string{"--addr", "127.0.0.1", "--port", port}
	if s.name != "" {
		args = append(args, "--server_name", s.name, "--cluster_name", "bw-test",
			"--cluster", "nats://"+s.cluster, "--routes", strings.Join(s.routes, ","))
	}
	if s.jetstream {
		args = append(args, "--jetstream", "--store_dir", filepath.Join(s.dir, "js"))
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
}

// waitReady waits until the server greets clients; a cluster member must
// also answer a JetStream request.
func (s *Server) waitReady() {
	s.t.Helper()
	timeout, ready := readyTimeout, s.greets
	if s.name != "" {
		timeout, ready = clusterReadyTimeout, func() bool { return s.greets() && s.answersJetStream() }
	}
	deadline := time.Now().Add(timeout)
	for !ready() {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.t.Fatalf("nats-server on %s was not ready within %s; its log:\n%s", s.addr, timeout, log)
		}
		time.Sleep(probeTick)
	}
}

// answersJetStream is true when the server answers a JetStream account
// request, which a cluster member can only after a meta leader is elected.
func (s *Server) answersJetStream() bool {
	nc, err := nats.Connect(s.URL(), nats.Timeout(probeTimeout), nats.NoReconnect())
	if err != nil {
		return false
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err == nil
}

// greets is true when the server sends its INFO line (with JetStream ready,
// when asked for).
func (s *Server) greets() bool {
	c, err := net.DialTimeout("tcp", s.addr, probeTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(probeTimeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "INFO") {
		return false
	}
	return !s.jetstream || strings.Contains(line, `"jetstream":true`)
}

// Stop ends the server with sig (SIGTERM for a graceful stop, SIGKILL for a
// crash) and waits for it to exit; it kills it if a graceful stop takes too
// long. Stopping a stopped server does nothing.
func (s *Server) Stop(sig syscall.Signal) {
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
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-done
	}
}

// StreamMsgs is the number of messages a JetStream stream of the server at
// url holds.
func StreamMsgs(t testing.TB, url, stream string) uint64 {
	t.Helper()
	js, done := connect(t, url)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return s.CachedInfo().State.Msgs
}

// ReadStream replays every message of a JetStream stream, oldest first, as
// a consumer that joins late would.
func ReadStream(t testing.TB, url, stream string) []jetstream.Msg {
	t.Helper()
	n := StreamMsgs(t, url, stream)
	js, done := connect(t, url)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for uint64(len(out)) < n {
		m, err := cons.Next(jetstream.FetchMaxWait(readTimeout))
		if err != nil {
			t.Fatalf("read %s after %d of %d messages: %v", stream, len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// StreamInfo reads a stream's info from the servers at urls (one URL or
// several, comma-separated). It returns the error rather than failing the
// test, so a test can wait for a cluster to settle.
func StreamInfo(urls, stream string) (*jetstream.StreamInfo, error) {
	nc, err := nats.Connect(urls, nats.Timeout(probeTimeout))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	return st.Info(ctx)
}

// StreamBySeq reads every message a stream holds by its sequence, oldest
// first: a direct get from the stream's leader, so, unlike ReadStream, no
// consumer's redelivery can add or hide one.
func StreamBySeq(t testing.TB, urls, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	js, done := connect(t, urls)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("read %s sequence %d: %v", stream, seq, err)
		}
		out = append(out, m)
	}
	return out
}

// connect opens a JetStream client of the server(s) at url; done closes it.
func connect(t testing.TB, url string) (js jetstream.JetStream, done func()) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	js, err = jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return js, nc.Close
}
