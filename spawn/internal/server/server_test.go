package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// waitTimeout bounds every wait for the node to get somewhere.
const waitTimeout = 5 * time.Second

// memStore keeps nothing: the handlers under test read no comments.
type memStore struct{}

func (memStore) Write(context.Context, []api.Comment) error                { return nil }
func (memStore) Recent(context.Context, int64, int) ([]api.Comment, error) { return nil, nil }
func (memStore) Close() error                                              { return nil }

// idleKind is a source kind whose data sources emit nothing until stopped.
type idleKind struct {
	mu      sync.Mutex
	started map[string]int
}

func (k *idleKind) Keys(sub source.Sub) ([]string, error) { return sub.Spec.Query, nil }

func (k *idleKind) New(key string) (source.DataSource, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started == nil {
		k.started = map[string]int{}
	}
	k.started[key]++
	return idleSource{}, nil
}

func (k *idleKind) starts(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started[key]
}

type idleSource struct{}

func (idleSource) Run(ctx context.Context, _ source.Emit) { <-ctx.Done() }
func (idleSource) Err() error                             { return nil }
func (idleSource) SetSubscribers([]source.Sub)            {}

// hubAnswering is a hub that answers registrations with epoch "1.e" and
// hour-long orphan and detach times, after hold (when not nil) is closed;
// arrived receives each registration as it arrives.
func hubAnswering(t *testing.T, hold <-chan struct{}, arrived chan<- struct{}) string {
	t.Helper()
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.PathRegister {
			http.NotFound(w, r)
			return
		}
		if arrived != nil {
			arrived <- struct{}{}
		}
		if hold != nil {
			<-hold
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.RegisterResponse{Epoch: "1.e", OrphanAfter: api.Duration(time.Hour), DetachAfter: api.Duration(time.Hour)})
	}))
	t.Cleanup(hub.Close)
	return hub.URL
}

// runNode runs a node registering with hubURL, with one "rss" kind, until
// the test ends, and serves it through a Server with token.
func runNode(t *testing.T, hubURL, token string, kind source.Kind) (*node.Node, *httptest.Server) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := memStore{}
	n, err := node.New(node.Config{HubURL: hubURL, NodeToken: token, Store: st, Sources: source.Registry{"rss": kind}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer((&Server{Node: n, Store: st, NodeToken: token, Logger: logger}).Handler())
	t.Cleanup(srv.Close)
	return n, srv
}

// rssSpec is an rss crawler's subscriber on feed, its query uuid as the
// hub sends it (not derived from the URL).
func rssSpec(id int64, feed string) api.SubscriberSpec {
	return api.SubscriberSpec{CrawlerID: id, UserID: 1, Version: 1, Source: "rss", Query: []string{feed}, QueryUUID: "5b0f3c52-2f6e-5a4e-9d7b-2a1c0e9f8d61"}
}

// call sends a request with a JSON body (nil: none) and the token (empty:
// none) and returns the status and body.
func call(t *testing.T, method, url, token string, in any) (int, string) {
	t.Helper()
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestServer_NodeAPINeedsTheNodeToken calls every route of the node API
// without the token and with a wrong one: each is refused with 401 and
// changes nothing, while the open routes answer anyone.
func TestServer_NodeAPINeedsTheNodeToken(t *testing.T) {
	kind := &idleKind{}
	n, srv := runNode(t, hubAnswering(t, nil, nil), "node-token", kind)
	testkit.WaitFor(t, waitTimeout, "the node attached", func() bool { return n.Health(true).State == api.NodeAttached })
	nodeAPI := []struct {
		method, path string
		body         any
	}{
		{http.MethodPut, api.PathSubscribers, api.SubscribersRequest{Epoch: "1.e", Seq: 1, Subscribers: []api.SubscriberSpec{rssSpec(1, "f")}}},
		{http.MethodPost, api.PathSubscribersRemove, api.RemoveRequest{Epoch: "1.e", Seq: 1, CrawlerIDs: []int64{1}}},
		{http.MethodPost, api.PathPoll, api.PollRequest{Epoch: "1.e", Seq: 1}},
		{http.MethodGet, "/v1/comments?crawler_id=1", nil},
		{http.MethodGet, api.PathNodeExport + "?crawler_id=1", nil},
		{http.MethodGet, api.PathNodeThread + "?crawler_id=1&comment_id=c", nil},
		{http.MethodPost, api.PathRecover, api.RecoverRequest{Epoch: "1.e", NodeID: "other"}},
	}
	for _, tc := range nodeAPI {
		for _, token := range []string{"", "wrong-token"} {
			if code, body := call(t, tc.method, srv.URL+tc.path, token, tc.body); code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: %d %s, want 401", tc.method, tc.path, token, code, body)
			}
		}
	}
	if got := kind.starts("f"); got != 0 || len(n.Health(true).Subscribers) != 0 {
		t.Errorf("refused requests changed the node: %d data source starts, %d subscribers", got, len(n.Health(true).Subscribers))
	}
	for _, path := range []string{"/healthz", api.PathHealth, "/metrics"} {
		if code, body := call(t, http.MethodGet, srv.URL+path, "", nil); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %s, want 200", path, code, body)
		}
	}
}

// TestServer_OpenHealthHoldsStateAndCountsOnly runs fifty crawlers, one of
// them on a feed whose URL carries a key. GET /v1/health without the node
// token, or with a wrong one, says the node's state and counts its
// subscribers and data sources, and names none of them (a busy node's lists
// run to megabytes, and name every crawl target); the hub, with the token,
// gets the whole document.
func TestServer_OpenHealthHoldsStateAndCountsOnly(t *testing.T) {
	kind := &idleKind{}
	n, srv := runNode(t, hubAnswering(t, nil, nil), "node-token", kind)
	testkit.WaitFor(t, waitTimeout, "the node attached", func() bool { return n.Health(true).State == api.NodeAttached })
	const crawlers = 50
	secret := "https://user:PASSWORD@feeds.example/private?api_key=SECRET"
	req := api.SubscribersRequest{Epoch: "1.e", Seq: 1}
	for i := range crawlers {
		feed := fmt.Sprintf("https://feeds.example/%d.xml", i)
		if i == 0 {
			feed = secret
		}
		req.Subscribers = append(req.Subscribers, rssSpec(int64(i+1), feed))
	}
	if code, body := call(t, http.MethodPut, srv.URL+api.PathSubscribers, "node-token", req); code != http.StatusOK {
		t.Fatalf("upsert: %d %s", code, body)
	}
	testkit.WaitFor(t, waitTimeout, "data sources", func() bool { return kind.starts(secret) == 1 })
	for _, token := range []string{"", "wrong-token"} {
		code, body := call(t, http.MethodGet, srv.URL+api.PathHealth, token, nil)
		if code != http.StatusOK {
			t.Fatalf("health with token %q: %d %s", token, code, body)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range doc {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"data_source_count", "node_id", "state", "store", "subscriber_count"}; !slices.Equal(keys, want) {
			t.Errorf("open health (token %q) has %v, want %v: %s", token, keys, want, body)
		}
		if doc["state"] != api.NodeAttached || doc["subscriber_count"] != float64(crawlers) || doc["data_source_count"] != float64(crawlers) {
			t.Errorf("open health (token %q) says %s, want attached with %d subscribers and data sources", token, body, crawlers)
		}
		if strings.Contains(body, "feeds.example") {
			t.Errorf("open health (token %q) names crawl targets: %s", token, body)
		}
	}
	code, body := call(t, http.MethodGet, srv.URL+api.PathHealth, "node-token", nil)
	var h api.SpawnHealth
	if err := json.Unmarshal([]byte(body), &h); code != http.StatusOK || err != nil {
		t.Fatalf("health with the node token: %d %v", code, err)
	}
	if len(h.Subscribers) != crawlers || len(h.DataSources) != crawlers || h.SubscriberCount != crawlers || h.Epoch != "1.e" || h.Hub == "" {
		t.Errorf("health with the node token: %d subscribers, %d data sources, count %d, epoch %q, hub %q",
			len(h.Subscribers), len(h.DataSources), h.SubscriberCount, h.Epoch, h.Hub)
	}
	if !strings.Contains(body, "SECRET") {
		t.Errorf("health with the node token hides the target: %s", body)
	}
}

// TestServer_WholeHealthListsEvenNoSubscribers: the document the hub reads
// has its lists even when they are empty, as the contract shows them.
func TestServer_WholeHealthListsEvenNoSubscribers(t *testing.T) {
	n, srv := runNode(t, hubAnswering(t, nil, nil), "node-token", &idleKind{})
	testkit.WaitFor(t, waitTimeout, "the node attached", func() bool { return n.Health(true).State == api.NodeAttached })
	_, body := call(t, http.MethodGet, srv.URL+api.PathHealth, "node-token", nil)
	if !strings.Contains(body, `"subscribers": []`) || !strings.Contains(body, `"data_sources": []`) {
		t.Errorf("whole health without subscribers: %s", body)
	}
}
