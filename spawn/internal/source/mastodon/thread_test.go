package mastodon

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// TestSource_RepliesInABurstKeepTheirThreadsWithinTheRateLimit posts a
// burst of replies whose parents the stream never carried, more than the
// look-ups a second allow at once and more than the instance's rate limit
// allows in one window: every reply is handed over naming its parent and
// thread, in the order the instance sent them, and the instance never had
// to refuse a call.
func TestSource_RepliesInABurstKeepTheirThreadsWithinTheRateLimit(t *testing.T) {
	srv := startServer(t, fake.Options{RateLimit: 8, RatePeriod: 300 * time.Millisecond})
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	const burst = 30
	roots := make([]fake.Status, burst)
	replies := make([]fake.Status, burst)
	for n := range burst {
		roots[n] = srv.Remember(fake.Status{Acct: "alice", Content: fmt.Sprintf("<p>root %d</p>", n)})
	}
	for n := range burst {
		replies[n] = srv.Post(fake.Status{Acct: "bob", Content: fmt.Sprintf("<p>#golang reply %d</p>", n), Tags: []string{"golang"}, InReplyToID: roots[n].ID})
	}
	testkit.WaitFor(t, waitDeadline, "every reply handed over", func() bool { return len(rec.All()) >= burst })
	lost := 0
	for n, it := range rec.All() {
		if it.ID != replies[n].URI {
			t.Fatalf("item %d is %s, want %s: the instance's order", n, it.ID, replies[n].URI)
		}
		if it.ReplyTo != roots[n].URI || it.ThreadID != roots[n].URI {
			lost++
		}
	}
	if lost > 0 || srv.Throttled() > 0 {
		t.Fatalf("%d of %d replies lost reply_to or thread_id; the instance refused %d calls (stats %+v)", lost, burst, srv.Throttled(), ds.Stats())
	}
}

// spendCalls makes n REST calls with the source's token, as another client
// of the same account would, spending the instance's window.
func spendCalls(t *testing.T, srv *fake.Server, n int) {
	t.Helper()
	for range n {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/api/v1/accounts/verify_credentials", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// TestSource_ReplyBeforeItsParentIsLinkedWhenTheParentArrives delivers a
// reply before its parent while the instance's rate limit allows no
// look-up: the reply waits, and names its parent once the parent arrives,
// without asking the instance.
func TestSource_ReplyBeforeItsParentIsLinkedWhenTheParentArrives(t *testing.T) {
	srv := startServer(t, fake.Options{RateLimit: 2, RatePeriod: 200 * 365 * 24 * time.Hour})
	spendCalls(t, srv, 2)
	ds, rec := start(t, testOptions(t, srv.URL()), spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	parent := srv.Remember(fake.Status{Acct: "alice", Content: "<p>#golang parent</p>", Tags: []string{"golang"}})
	reply := srv.Post(fake.Status{Acct: "bob", Content: "<p>#golang reply</p>", Tags: []string{"golang"}, InReplyToID: parent.ID})
	if err := srv.Deliver(parent.ID); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, waitDeadline, "both handed over", func() bool { return rec.Has(reply.URI, parent.URI) })
	it, _ := rec.ByID(reply.URI)
	if it.ReplyTo != parent.URI || it.ThreadID != parent.URI {
		t.Fatalf("reply_to %q thread_id %q, want the parent %s", it.ReplyTo, it.ThreadID, parent.URI)
	}
	// The source learns the window is spent from the first look-up's 429.
	if s := ds.Stats(); s.Resolved != 0 || srv.Throttled() > 1 {
		t.Fatalf("stats %+v, %d calls refused: want no look-up answered, at most one refused", s, srv.Throttled())
	}
}

// TestSource_ReplyWaitsAtMostReplyWait delivers a reply whose parent
// never arrives while no look-up is allowed: it is handed over without
// reply_to once ReplyWait has passed, the statuses after it follow in
// order, and one deleted while waiting is never handed over.
func TestSource_ReplyWaitsAtMostReplyWait(t *testing.T) {
	srv := startServer(t, fake.Options{RateLimit: 2, RatePeriod: 200 * 365 * 24 * time.Hour})
	spendCalls(t, srv, 2)
	opts := testOptions(t, srv.URL())
	opts.ReplyWait = 300 * time.Millisecond
	ds, rec := start(t, opts, spec(1, "#golang"))
	subscribed(t, srv, "hashtag:golang")
	parent := srv.Remember(fake.Status{Acct: "alice", Content: "<p>parent</p>"})
	reply := srv.Post(fake.Status{Acct: "bob", Content: "<p>#golang reply</p>", Tags: []string{"golang"}, InReplyToID: parent.ID})
	gone := srv.Post(fake.Status{Acct: "carol", Content: "<p>#golang gone</p>", Tags: []string{"golang"}})
	after := srv.Post(fake.Status{Acct: "dave", Content: "<p>#golang after</p>", Tags: []string{"golang"}})
	srv.Delete(gone)
	started := time.Now()
	testkit.WaitFor(t, waitDeadline, "the reply and the status after it", func() bool { return rec.Has(reply.URI, after.URI) })
	if waited := time.Since(started); waited > opts.ReplyWait+2*time.Second {
		t.Fatalf("handed over after %v, want about %v", waited, opts.ReplyWait)
	}
	var ids []string
	for _, it := range rec.All() {
		ids = append(ids, it.ID)
	}
	if !slices.Equal(ids, []string{reply.URI, after.URI}) {
		t.Fatalf("handed over %v, want the reply then the status after it (the deleted one never)", ids)
	}
	if it, _ := rec.ByID(reply.URI); it.ReplyTo != "" || it.ThreadID != "" || ds.Stats().Unresolved != 1 {
		t.Fatalf("reply_to %q thread_id %q, unresolved %d: want none, one", it.ReplyTo, it.ThreadID, ds.Stats().Unresolved)
	}
}
