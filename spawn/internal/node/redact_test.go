package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/logx"
)

// syncBuffer is a log sink the node's goroutines may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNode_OpenHealthAndLogsRedactCrawlTargets runs a crawler on a feed
// whose URL carries a key, with a failing source that names it in its
// error: the open health document names no target at all (it counts them),
// every log line hides the key, and only the full document (a caller with
// the node token) shows the target whole.
func TestNode_OpenHealthAndLogsRedactCrawlTargets(t *testing.T) {
	var logs syncBuffer
	logger, err := logx.New(&logs, "debug", "text")
	if err != nil {
		t.Fatal(err)
	}
	n, kind := attachedNodeConfig(t, Config{Store: &memStore{}, Logger: logger, NodeToken: "node-token"})
	feed := "https://user:PASSWORD@feeds.example/private?api_key=SECRET"
	sp := spec(1, 1, feed)
	sp.QueryUUID = "5b0f3c52-2f6e-5a4e-9d7b-2a1c0e9f8d61" // as the hub sends it, not derived from the URL
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{sp}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, waitTimeout, "data source", func() bool { return kind.starts(feed) == 1 })
	n.mu.Lock()
	ds := n.table.sources[feed].ds.(*chanSource)
	n.mu.Unlock()
	ds.setErr(errors.New("rss: unable to fetch " + feed + ": 403"))

	// The health document as GET /v1/health writes it: whole for a caller
	// with the node token (full), state and counts for anyone else.
	get := func(full bool) (string, api.SpawnHealth) {
		h := n.Health(full)
		raw, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw), h
	}
	testkit.WaitFor(t, waitTimeout, "the source error in health", func() bool {
		_, h := get(true)
		return len(h.Subscribers) == 1 && strings.Contains(h.Subscribers[0].Error, "403")
	})
	body, h := get(false)
	for _, secret := range []string{"SECRET", "PASSWORD"} {
		if strings.Contains(body, secret) {
			t.Errorf("open health shows %s: %s", secret, body)
		}
	}
	if strings.Contains(body, "feeds.example") || h.DataSources != nil || h.Subscribers != nil {
		t.Errorf("open health names crawl targets: %s", body)
	}
	if h.SubscriberCount != 1 || h.DataSourceCount != 1 {
		t.Errorf("open health counts %d subscribers and %d data sources, want 1 and 1: %s", h.SubscriberCount, h.DataSourceCount, body)
	}
	if body, _ := get(true); !strings.Contains(body, "SECRET") {
		t.Errorf("health with the node token hides the target: %s", body)
	}
	_ = n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 2, CrawlerIDs: []int64{1}})
	testkit.WaitFor(t, waitTimeout, "data source stopped log line", func() bool {
		return strings.Contains(logs.String(), "data source stopped")
	})
	if out := logs.String(); strings.Contains(out, "SECRET") || strings.Contains(out, "PASSWORD") {
		t.Errorf("log carries a secret:\n%s", out)
	}
}
