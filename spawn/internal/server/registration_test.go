package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// TestServer_RequestDuringRegistrationWaitsForIt sends the node its
// subscribers while its registration answer is still on the way, as a hub
// reloading on the join does: the request waits for the registration and
// succeeds, instead of being refused as "not attached".
func TestServer_RequestDuringRegistrationWaitsForIt(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	hubURL := hubAnswering(t, release, arrived)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	n, srv := runNode(t, hubURL, "", &idleKind{})
	select {
	case <-arrived:
	case <-time.After(waitTimeout):
		t.Fatal("the node did not register")
	}
	got := make(chan int, 1)
	go func() {
		body, _ := json.Marshal(api.SubscribersRequest{Epoch: "1.e", Seq: 1, Subscribers: []api.SubscriberSpec{rssSpec(1, "f")}})
		req, _ := http.NewRequest(http.MethodPut, srv.URL+api.PathSubscribers, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	// The request reaches the node while the registration is held: it is
	// still unanswered.
	if st := n.Health(true).State; st != api.NodeRegistering {
		t.Fatalf("node %s while its registration is held, want %s", st, api.NodeRegistering)
	}
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
