package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// TestNode_RequestDuringRegistrationWaitsForIt sends the node its
// subscribers while its registration answer is still on the way, as a hub
// reloading on the join does: the request waits for the registration and
// succeeds, instead of being refused as "not attached".
func TestNode_RequestDuringRegistrationWaitsForIt(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.PathRegister {
			http.NotFound(w, r)
			return
		}
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.RegisterResponse{Epoch: "1.e", OrphanAfter: api.Duration(time.Hour), DetachAfter: api.Duration(time.Hour)})
	}))
	t.Cleanup(hub.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	n, err := New(Config{HubURL: hub.URL, Store: &memStore{}, Sources: source.Registry{"rss": newChanKind()},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-arrived:
	case <-time.After(waitTimeout):
		t.Fatal("the node did not register")
	}
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(srv.Close)
	got := make(chan int, 1)
	go func() {
		body, _ := json.Marshal(api.SubscribersRequest{Epoch: "1.e", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}})
		req, _ := http.NewRequest(http.MethodPut, srv.URL+api.PathSubscribers, bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	// The request reaches the node before the registration answers: it is
	// still unanswered while the registration is held.
	testkit.WaitFor(t, waitTimeout, "the request waiting", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.attach.registering != nil
	})
	select {
	case code := <-got:
		t.Fatalf("answered %d before the registration did", code)
	case <-time.After(50 * time.Millisecond): // the request is in flight meanwhile
	}
	close(release)
	select {
	case code := <-got:
		if code != http.StatusOK {
			t.Fatalf("subscribers sent during registration: status %d, want 200", code)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no answer")
	}
	if len(n.Health(true).Subscribers) != 1 {
		t.Fatal("the subscriber sent during registration is not running")
	}
}
