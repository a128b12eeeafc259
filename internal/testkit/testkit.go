// Package testkit holds the few helpers tests across the module share:
// waiting for a condition with a deadline, logging into the test log,
// finding a free loopback port, and finding (or skipping without) the test
// services. Its clustertest package runs a whole
// cluster in-process.
package testkit

import (
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// pollEvery is how often WaitFor checks its condition.
const pollEvery = 10 * time.Millisecond

// WaitFor polls cond until it holds, failing tb after timeout, and returns
// how long it took.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	tb.Helper()
	return WaitForShowing(tb, timeout, what, func() (bool, string) { return cond(), "" })
}

// WaitForShowing is WaitFor for a condition that can say how far it got:
// when it times out, the failure shows what cond last said ("3 of 40
// stored, missing [hn:7 hn:9]").
func WaitForShowing(tb testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	tb.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			if state != "" {
				tb.Fatalf("timed out after %s waiting for %s: %s", timeout, what, state)
			}
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}

// Logger writes to the test log (shown when the test fails or with -v),
// each line prefixed with name. A fuzz target may not log through its
// *testing.F, so anything but a *testing.T gets a logger that discards.
func Logger(tb testing.TB, name string) *slog.Logger {
	t, ok := tb.(*testing.T)
	if !ok {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t, name}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct {
	t    *testing.T
	name string
}

func (w tWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Logf("%s: %s", w.name, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// FreeAddr returns a loopback address nothing listens on: a port the
// kernel just handed out and that was closed again. For a server that must
// know its address before it starts, or a client that must find nothing.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Service returns the address of a test service (PostgreSQL, Cassandra,
// NATS) from the environment variable env, which `scripts/services.sh env`
// sets. When env is unset the test is skipped, or fails under
// BW_REQUIRE_SERVICES=1 so that a run meant to cover the services cannot
// pass by skipping them.
func Service(tb testing.TB, env string) string {
	tb.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
			tb.Fatalf("%s is not set (run: scripts/services.sh up, then eval \"$(scripts/services.sh env)\")", env)
		}
		tb.Skipf("%s not set", env)
	}
	return v
}
