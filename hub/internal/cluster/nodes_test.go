package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// TestHub_RegisterWhileRunStarts registers spawns while the hub's Run
// starts: a spawn may reach the hub's listener before Run has set the
// context it hands to background work. Under -race, any read of that
// context not ordered with Run's write fails the test.
func TestHub_RegisterWhileRunStarts(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlstore.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for round := range 5 {
		h, err := New(Config{Store: st, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		registered := make(chan error, 2)
		for i := range 2 {
			go func() {
				_, err := h.Register(api.RegisterRequest{NodeID: fmt.Sprintf("spawn-%d-%d", round, i), URL: "http://127.0.0.1:1"})
				registered <- err
			}()
		}
		go func() { ran <- h.Run(ctx) }()
		for range 2 {
			if err := <-registered; err != nil {
				t.Fatalf("register: %v", err)
			}
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}
