package node

import (
	"errors"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// freeze moves the node's clock and every timestamp it keeps back by d, as
// if it had been stopped (SIGSTOP) for d with nothing of it running: not its
// watchdog, not its handlers.
func freeze(n *Node, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.start = n.start.Add(-d)
	n.attach.lastContact = n.attach.lastContact.Add(-d)
	for _, s := range n.table.subs {
		s.lastPolled = s.lastPolled.Add(-d)
	}
}

// TestNode_FrozenSpawnTakesNoRequestTheHubGaveUpOn freezes a node after
// the hub sent it a poll (the poll waits in its socket buffers, as it does
// for a stopped process) and resumes it with that poll: the poll, whose
// sequence number is the highest the node has seen, must not revive what
// the node ran, nor keep it attached past detach_after.
func TestNode_FrozenSpawnTakesNoRequestTheHubGaveUpOn(t *testing.T) {
	const (
		orphanAfter = 10 * time.Second
		detachAfter = 15 * time.Second
		hubTimeout  = 2 * time.Second // the hub's request timeout
	)
	cases := []struct {
		name   string
		frozen time.Duration
		// What the buffered poll gets (a stale poll is answered, but
		// nothing in it is applied), and the node after it.
		wantErr      error
		wantState    string
		wantRunning  bool
		freshRevives bool // a new poll from the live hub is taken
	}{
		{"past detach_after: detached, nothing runs", 20 * time.Second, ErrNotAttached, api.NodeDetached, false, false},
		{"past orphan_after: subscribers stopped", 12 * time.Second, nil, api.NodeAttached, false, true},
		{"past the hub's timeout only: poll refused, subscribers kept", 3 * time.Second, nil, api.NodeAttached, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, _, _ := attachedNode(t)
			n.mu.Lock()
			n.attach.orphanAfter, n.attach.detachAfter = orphanAfter, detachAfter
			n.mu.Unlock()
			refs := []api.SubscriberRef{{CrawlerID: 1, Version: 1}}
			if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, ValidUntil: n.clock() + hubTimeout.Milliseconds(),
				Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
				t.Fatal(err)
			}
			buffered := api.PollRequest{Epoch: "e1", Seq: 2, Subscribers: refs, ValidUntil: n.clock() + hubTimeout.Milliseconds()}
			freeze(n, tc.frozen)
			n.mu.Lock()
			contact := n.attach.lastContact
			n.mu.Unlock()

			resp, err := n.Poll(buffered)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("buffered poll after %s frozen: err %v, want %v", tc.frozen, err, tc.wantErr)
			}
			n.mu.Lock()
			state, running, lastSeq, lastContact := n.attach.state, n.table.subs[1] != nil, n.attach.lastSeq, n.attach.lastContact
			n.mu.Unlock()
			if state != tc.wantState || running != tc.wantRunning {
				t.Fatalf("after the buffered poll: state %s, subscriber running %v; want %s, %v", state, running, tc.wantState, tc.wantRunning)
			}
			if lastSeq != 1 || (state == api.NodeAttached && !lastContact.Equal(contact)) {
				t.Fatalf("the buffered poll counted as contact: last seq %d, contact moved %s", lastSeq, lastContact.Sub(contact))
			}
			if err == nil && len(resp.Increments) > 0 {
				t.Fatalf("answer %+v", resp)
			}
			if !tc.freshRevives {
				return
			}
			// The hub, alive, polls again: that poll is taken.
			resp, err = n.Poll(api.PollRequest{Epoch: "e1", Seq: 3, Subscribers: refs, ValidUntil: n.clock() + hubTimeout.Milliseconds()})
			if err != nil {
				t.Fatalf("fresh poll after the freeze: %v", err)
			}
			want := api.StateRunning
			if !tc.wantRunning {
				want = api.StateMissing // the hub sends it again
			}
			if got := resp.Subscribers[0].State; got != want {
				t.Fatalf("fresh poll: subscriber %s, want %s", got, want)
			}
		})
	}
}

// TestNode_RequestsPastTheirValidityAreRefused checks the bound on every
// kind of hub request, and that a hub setting none (ValidUntil 0) is served
// as before.
func TestNode_RequestsPastTheirValidityAreRefused(t *testing.T) {
	n, _, _ := attachedNode(t)
	freeze(n, time.Second) // a clock past zero, which means no bound
	past := n.clock() - 1
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, ValidUntil: past, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); !errors.Is(err, ErrStale) {
		t.Fatalf("expired upsert: %v", err)
	}
	if len(n.table.subs) != 0 {
		t.Fatal("an expired upsert started a subscriber")
	}
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 2, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatalf("upsert without a bound: %v", err)
	}
	if err := n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 3, ValidUntil: past, CrawlerIDs: []int64{1}}); !errors.Is(err, ErrStale) {
		t.Fatalf("expired remove: %v", err)
	}
	if _, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: 4, ValidUntil: past}); err != nil {
		t.Fatalf("an expired poll is answered as a stale one: %v", err)
	}
	if len(n.table.subs) != 1 {
		t.Fatal("an expired request removed a subscriber")
	}
	if err := n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 5, ValidUntil: n.clock() + 1000, CrawlerIDs: []int64{1}}); err != nil || len(n.table.subs) != 0 {
		t.Fatalf("remove within its bound: %v, %d subscribers left", err, len(n.table.subs))
	}
}
