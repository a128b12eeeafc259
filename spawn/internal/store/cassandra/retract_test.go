package cassandra

import (
	"context"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/storetest"
)

func TestStore_Retractor(t *testing.T) {
	var uri string
	storetest.CheckRetractor(t, func(t *testing.T, fresh bool) store.Store {
		if fresh {
			s, u := openTest(t)
			uri = u
			return s
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := Open(ctx, uri, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestRetention_RowsExpireWithTheirTTL writes a comment whose retention
// leaves it two seconds, and one kept for good: the first is gone from
// every read and from the indexes once its TTL passes.
func TestRetention_RowsExpireWithTheirTTL(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	short := mkComment(9, "short", time.Now().Add(-time.Hour))
	short.Retention = time.Hour + 2*time.Second
	kept := mkComment(9, "kept", time.Now().Add(-time.Hour))
	if err := s.Write(ctx, []api.Comment{short, kept}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Recent(ctx, 9, 10); len(got) != 2 {
		t.Fatalf("right after the write: %d comments, want 2", len(got))
	}
	testkit.WaitFor(t, 20*time.Second, "the short-lived comment to expire", func() bool {
		got, err := s.Recent(ctx, 9, 10)
		return err == nil && len(got) == 1 && got[0].ID == "kept"
	})
	var n int
	if err := s.session.Query(`SELECT COUNT(*) FROM `+s.cfg.Keyspace+`.comments WHERE comment_id = ?`, "short").Scan(&n); err != nil || n != 0 {
		t.Errorf("the id index still finds the expired comment: %d rows, %v", n, err)
	}
	if _, _, err := s.Thread(ctx, 9, "short"); err == nil {
		t.Error("the expired comment still has a thread")
	}
}
