package cluster

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// recoveryHub is a hub on a fresh SQLite database with one crawler, whose
// loops are not running: the test drives registration, loss and recovery.
func recoveryHub(t *testing.T) (*Hub, *sqlstore.Store, int64) {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "hub.db"), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u, err := st.CreateUser(ctx, "customer", 0)
	if err != nil {
		t.Fatal(err)
	}
	q := []string{"https://feeds.example/a.xml"}
	c, err := st.CreateCrawler(ctx, sqlstore.Crawler{UserID: u.ID, Source: api.SourceRSS, Query: q[:1], QueryUUID: query.UUID(api.SourceRSS, q).String(), Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Store: st, Logger: logger, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return h, st, c.ID
}

func register(t *testing.T, h *Hub, id string) {
	t.Helper()
	if _, err := h.Register(api.RegisterRequest{NodeID: id, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
}

func lose(h *Hub, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeNodeLocked(h.nodes[id], "test")
}

func pendingRecoveries(h *Hub, id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.lost.recoveries {
		if r.nodeID == id {
			n++
		}
	}
	return n
}

// TestRecovery_NodeBackUnderItsIDReportsItsOwnUsage: a lost node that
// registers again under its id is the same process, still holding its
// increments; its usage is not read back from the store, where its new
// batches may be half written.
func TestRecovery_NodeBackUnderItsIDReportsItsOwnUsage(t *testing.T) {
	h, _, _ := recoveryHub(t)
	register(t, h, "node-a")
	lose(h, "node-a")
	if n := pendingRecoveries(h, "node-a"); n != 1 {
		t.Fatalf("a lost node has %d recoveries pending, want 1", n)
	}
	register(t, h, "node-a")
	if n := pendingRecoveries(h, "node-a"); n != 0 {
		t.Fatalf("a node back under its id still has %d recoveries pending", n)
	}
}

// TestRecovery_DroppedWhenTheNodeComesBackMeanwhile: the node registers
// again while a live spawn reads its usage back; what was read is not
// applied, since the node reports it itself. Without the return, the same
// answer is applied.
func TestRecovery_DroppedWhenTheNodeComesBackMeanwhile(t *testing.T) {
	for _, comesBack := range []bool{false, true} {
		name := map[bool]string{false: "stays lost", true: "comes back"}[comesBack]
		t.Run(name, func(t *testing.T) {
			h, st, crawlerID := recoveryHub(t)
			reader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req api.RecoverRequest
				if r.URL.Path != api.PathRecover || json.NewDecoder(r.Body).Decode(&req) != nil || req.NodeID != "node-a" {
					http.Error(w, "unexpected request", http.StatusBadRequest)
					return
				}
				if comesBack {
					register(t, h, "node-a")
				}
				_ = json.NewEncoder(w).Encode(api.RecoverResponse{Increments: []api.Increment{
					{NodeID: "node-a", Seq: 1, CrawlerID: crawlerID, Count: 5},
				}})
			}))
			t.Cleanup(reader.Close)
			register(t, h, "node-a")
			lose(h, "node-a")
			ctx := context.Background()
			if err := h.recover(ctx, &node{id: "reader", url: reader.URL}, recovery{nodeID: "node-a"}); err != nil {
				t.Fatal(err)
			}
			seq, err := st.MaxAppliedSeq(ctx, "node-a")
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]uint64{false: 1, true: 0}[comesBack]; seq != want {
				t.Fatalf("node %s: last applied increment %d, want %d", name, seq, want)
			}
		})
	}
}
