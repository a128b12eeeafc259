package fakehttp

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestServe_ReleasesThenShutsDown serves a handler that blocks until the
// fake is released: the test's end must call release first, or the
// graceful shutdown would wait on the blocked request.
func TestServe_ReleasesThenShutsDown(t *testing.T) {
	var base string
	var released atomic.Bool
	t.Run("serve", func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan struct{})
		base = Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hang" {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				close(started)
				<-release
				return
			}
			io.WriteString(w, "ok")
		}), func() { released.Store(true); close(release) })
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("GET / = %q, want ok", b)
		}
		hung, err := http.Get(base + "/hang")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hung.Body.Close() }) // runs after the server's cleanup
		<-started
	})
	if !released.Load() {
		t.Fatal("release was not called when the test ended")
	}
	if resp, err := http.Get(base + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("%s still answers after the test ended", base)
	}
}

func TestNewMux_AnswersHealth(t *testing.T) {
	base := Serve(t, NewMux(), nil)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "ok\n" {
		t.Fatalf("GET /healthz = %d %q, want 200 \"ok\\n\"", resp.StatusCode, b)
	}
}
