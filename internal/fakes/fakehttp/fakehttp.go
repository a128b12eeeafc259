// Package fakehttp gives the fake servers of internal/fakes one life cycle:
// listen on a free loopback port, serve, hand out the base URL, and shut
// down gracefully when the test ends. Each fake keeps only its protocol.
package fakehttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// Timeouts of a fake server.
const (
	// readHeaderTimeout bounds how long a client may take to send its
	// request headers.
	readHeaderTimeout = 5 * time.Second
	// shutdownTimeout bounds the graceful shutdown at the end of a test;
	// requests still running after it are cut.
	shutdownTimeout = 5 * time.Second
)

// TB is the part of testing.TB a fake server needs. Taking it rather than
// testing.TB keeps package testing out of binaries that link a fake, such
// as cmd/feedserver.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// NewMux returns a mux that already answers GET /healthz with 200, as
// every fake does; the fake adds its own routes.
func NewMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	return mux
}

// Serve serves h on 127.0.0.1 at a free port until the test ends, and
// returns the server's base URL ("http://127.0.0.1:port"). At the end it
// first calls release, when not nil, then shuts the server down: release
// is the fake's own Close, which ends its streams and hung requests so the
// graceful shutdown does not wait for them.
func Serve(tb TB, h http.Handler, release func()) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("fakehttp: unable to listen: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		if release != nil {
			release()
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			tb.Errorf("fakehttp: serve on %s: %v", ln.Addr(), err)
		}
	})
	return "http://" + ln.Addr().String()
}
