package leader

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// TestElector_StandbyDeposesALeaderMostSpawnsCannotReach: two hubs on one
// database, three known spawns. One spawn's complaint about the renewing
// leader changes nothing; a second one (most of the three) makes the
// standby take the leadership over; the old leader finds the row taken at
// its next renewal and stops leading; the new term grants only a lease
// after the old leader last renewed.
func TestElector_StandbyDeposesALeaderMostSpawnsCannotReach(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const lease = 600 * time.Millisecond
	elector := func(url string) *Elector {
		return New(Config{Store: store, URL: url, Lease: lease, Renew: lease / 3, Logger: slog.New(slog.DiscardHandler)})
	}
	a, b := elector("http://a"), elector("http://b")
	first, won, err := a.TryLead(ctx)
	if err != nil || !won {
		t.Fatalf("the first hub did not lead: %v", err)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		if err := store.RememberNode(ctx, id, "http://"+id); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var aLost bool
	var bTerm *Term
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = a.Run(ctx, &first, func(lctx context.Context, t Term) error {
			<-lctx.Done()
			mu.Lock()
			aLost = aLost || ctx.Err() == nil
			mu.Unlock()
			return nil // and stand by
		})
	}()
	go func() {
		defer wg.Done()
		_ = b.Run(ctx, nil, func(lctx context.Context, t Term) error {
			mu.Lock()
			bTerm = &t
			mu.Unlock()
			<-lctx.Done()
			return nil
		})
	}()
	bLeads := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return bTerm != nil
	}

	if err := store.Complain(ctx, "n1", first.Number, "http://a"); err != nil {
		t.Fatal(err)
	}
	// One of three: the standby watches several leases and stays standing by.
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(lease / 12) {
		if bLeads() {
			t.Fatal("the standby took over on one complaint of three spawns")
		}
	}
	// A detached spawn repeats its complaint with every registration
	// attempt; complaints older than complaintWindow leases lapse.
	complained := time.Now()
	for _, id := range []string{"n1", "n2"} {
		if err := store.Complain(ctx, id, first.Number, "http://a"); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*lease, "the standby leads", bLeads)
	testkit.WaitFor(t, 10*lease, "the deposed leader stops leading", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return aLost
	})
	mu.Lock()
	got := *bTerm
	mu.Unlock()
	if got.Number != first.Number+1 || got.Lapsed {
		t.Errorf("new term %+v, want term %d not lapsed", got, first.Number+1)
	}
	// The old leader renewed at most a renew interval before the
	// complaint that tipped the count; its leases end by a lease after that.
	if got.NotBefore.Before(complained.Add(-lease/3)) || got.NotBefore.After(time.Now().Add(lease)) {
		t.Errorf("grants from %s: want about a lease after the old leader's last renewal (complaint at %s)", got.NotBefore.Format(time.StampMilli), complained.Format(time.StampMilli))
	}
	testkit.WaitFor(t, 10*lease, "the old leader standing by under the new one", func() bool {
		url, self := a.Leader()
		return !self && url == "http://b"
	})
	cancel()
	wg.Wait()
}

// TestElector_WatchTellsWhenLeadingChanges: a hub alone on its database
// leads from TryLead on; a watcher sees it lead, then sees the channel
// close when the hub stops, and finds it standing by.
func TestElector_WatchTellsWhenLeadingChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := New(Config{Store: store, URL: "http://a", Alone: true, Logger: slog.New(slog.DiscardHandler)})
	leading, changed := e.Watch()
	if leading || e.Leading() {
		t.Fatal("the hub leads before any election")
	}
	first, won, err := e.TryLead(ctx)
	if err != nil || !won {
		t.Fatalf("a hub alone on its database did not lead: %v", err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("winning the leadership did not close the watched channel")
	}
	leading, changed = e.Watch()
	if !leading || !e.Leading() {
		t.Fatal("the hub that won does not lead")
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(runCtx, &first, func(lctx context.Context, _ Term) error { <-lctx.Done(); return nil })
	}()
	stop()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("stopping the leader did not close the watched channel")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if leading, _ := e.Watch(); leading || e.Leading() {
		t.Fatal("the stopped hub still leads")
	}
}

func TestTerm_GrantsFrom(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(6 * time.Second)
	for _, tc := range []struct {
		name string
		term Term
		want time.Time
	}{
		{"a resigned leader or a restart keeps the restart rule", Term{Number: 3}, time.Time{}},
		{"a lapsed leader's leases have all expired", Term{Number: 3, Lapsed: true}, now},
		{"a deposed leader's leases end by NotBefore", Term{Number: 3, NotBefore: later}, later},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.term.GrantsFrom(now); !got.Equal(tc.want) {
				t.Fatalf("GrantsFrom = %v, want %v", got, tc.want)
			}
		})
	}
}
