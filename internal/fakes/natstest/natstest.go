// Package natstest runs a private nats-server process for one test: on its
// own port and store directory, so the test sees only its own messages and
// may stop and start the server without disturbing anyone else (the shared
// server of scripts/nats.sh is never stopped). The binary is Debian's
// nats-server, which scripts/nats.sh installs. It also reads back what a
// JetStream stream holds, on any server.
package natstest

import (
	"bufio"
	"context"
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
	readyTimeout = 20 * time.Second       // from start until it greets clients
	callTimeout  = 5 * time.Second        // one JetStream API call
	readTimeout  = 20 * time.Second       // waiting for a stream's next message
	probeTimeout = 500 * time.Millisecond // one readiness probe
	probeTick    = 10 * time.Millisecond  // between probes
	stopTimeout  = 10 * time.Second       // its exit after a signal
)

// Server is a nats-server process of one test.
type Server struct {
	t         testing.TB
	bin       string
	addr      string
	dir       string
	jetstream bool

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

// Restart starts the server process (again, after Stop: same port, same
// store directory) and waits until it greets clients.
func (s *Server) Restart() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.addr)
	args := []string{"--addr", "127.0.0.1", "--port", port}
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
	deadline := time.Now().Add(readyTimeout)
	for !s.greets() {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.t.Fatalf("nats-server on %s did not greet clients within %s; its log:\n%s", s.addr, readyTimeout, log)
		}
		time.Sleep(probeTick)
	}
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

// connect opens a JetStream client of the server at url; done closes it.
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
