package node

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// drainHub records the drain messages a node sends.
type drainHub struct {
	mu   sync.Mutex
	msgs []api.DrainRequest
}

func (h *drainHub) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.DrainRequest
		if r.URL.Path != api.PathDrain || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.msgs = append(h.msgs, req)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (h *drainHub) got() []api.DrainRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]api.DrainRequest(nil), h.msgs...)
}

// TestNode_DrainHandsOverThenStops: a draining node says so in its health
// and to the hub at once, keeps running its subscribers until the hub's
// polls leave them out, and returns only when its comments are stored and
// the hub has acknowledged their usage, having told the hub it is done.
func TestNode_DrainHandsOverThenStops(t *testing.T) {
	n, kind, st := attachedNode(t)
	hub := &drainHub{}
	n.mu.Lock()
	n.attach.followed = hub.serve(t)
	n.mu.Unlock()
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Drain(context.Background()) }()
	testkit.WaitFor(t, waitTimeout, "the hub told", func() bool { return len(hub.got()) == 1 })
	if h := n.Health(false); h.State != api.NodeDraining || h.SubscriberCount != 1 {
		t.Fatalf("health state %q with %d subscribers, want draining with its subscriber still running", h.State, h.SubscriberCount)
	}
	// It still runs the subscriber: items keep being stored.
	kind.send("f", source.Item{ID: "a", PublishedAt: time.Now()})
	testkit.WaitFor(t, waitTimeout, "the item stored", func() bool { return st.count(1) == 1 })
	seq := uint64(2)
	poll := func(acks []uint64) api.PollResponse {
		seq++
		resp, err := n.Poll(api.PollRequest{Epoch: "e1", NodeID: n.ID(), Seq: seq, Acks: acks})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// The new node runs it: the hub's poll leaves it out.
	resp := poll(nil)
	if !resp.Draining {
		t.Fatal("the poll answer does not say the node drains")
	}
	select {
	case err := <-done:
		t.Fatalf("drain returned (%v) before its usage was acknowledged", err)
	default:
	}
	var acks []uint64
	testkit.WaitFor(t, waitTimeout, "the usage reported", func() bool {
		for _, inc := range poll(nil).Increments {
			acks = append(acks, inc.Seq)
		}
		return len(acks) > 0
	})
	poll(acks)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("drain did not return once everything was handed over")
	}
	if msgs := hub.got(); len(msgs) != 2 || msgs[0].Done || !msgs[1].Done || msgs[1].NodeID != n.ID() {
		t.Fatalf("messages to the hub %+v, want draining then done", msgs)
	}
}

// TestNode_DrainCutShortByItsBudget: a drain whose context ends first
// returns ErrDrainIncomplete and tells the hub nothing is done.
func TestNode_DrainCutShortByItsBudget(t *testing.T) {
	n, _, _ := attachedNode(t)
	hub := &drainHub{}
	n.mu.Lock()
	n.attach.followed = hub.serve(t)
	n.mu.Unlock()
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := n.Drain(ctx); !errors.Is(err, ErrDrainIncomplete) {
		t.Fatalf("Drain = %v, want ErrDrainIncomplete", err)
	}
	for _, m := range hub.got() {
		if m.Done {
			t.Fatalf("the hub was told the drain is done: %+v", hub.got())
		}
	}
}

// TestNode_HubDrainsIt: a poll that says the hub drains the node (bwctl
// node drain) makes its health say draining, without stopping anything.
func TestNode_HubDrainsIt(t *testing.T) {
	n, _, _ := attachedNode(t)
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Poll(api.PollRequest{Epoch: "e1", NodeID: n.ID(), Seq: 2, Drain: true, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}}}); err != nil {
		t.Fatal(err)
	}
	if h := n.Health(false); h.State != api.NodeDraining || h.SubscriberCount != 1 {
		t.Fatalf("health %q with %d subscribers, want draining, still running its subscriber", h.State, h.SubscriberCount)
	}
}
