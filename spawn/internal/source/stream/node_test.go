package stream_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/stream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

func streamSpec(id int64, keywords []string, terms ...string) api.SubscriberSpec {
	return spawntest.Spec(api.SourceStream, id, keywords, terms...)
}

// startNode runs a node with one source kind registered as "stream".
func startNode(t *testing.T, kind source.Kind) (*node.Node, *spawntest.MemStore) {
	t.Helper()
	return spawntest.StartNode(t, api.SourceStream, kind)
}

// TestNode_StreamSubscribersShareOneConnection runs a real node with the
// stream kind against the local stream service: subscribers of the same
// query share a subscription, every subscription rides one connection, and
// each stored comment belongs to exactly the crawlers of the query it was
// delivered for.
func TestNode_StreamSubscribersShareOneConnection(t *testing.T) {
	srv, base := streamserver.Start(t, streamserver.Options{Username: "u", APIKey: "k", TickInterval: 50 * time.Millisecond})
	kind, err := stream.New(stream.Options{
		URL: base, Username: "u", APIKey: "k",
		Client: netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, st := startNode(t, kind)
	specs := []api.SubscriberSpec{
		streamSpec(1, nil, "golang"),
		streamSpec(2, nil, "golang"),
		streamSpec(3, nil, "golang", "rust"),
		streamSpec(4, nil, "golang release"),
	}
	spawntest.Subscribe(t, n, specs...)
	// Three queries: golang (crawlers 1 and 2), golang OR rust, and
	// golang AND release.
	testkit.WaitFor(t, spawntest.WaitTimeout, "three subscriptions on one connection", func() bool {
		subs := srv.Subscriptions()
		return len(subs) == 1 && len(subs[0]) == 3
	})

	id := func(it streamserver.Interaction) string { return "ds:" + it.ID }
	g := srv.Publish(streamserver.Interaction{Content: "golang news"})
	r := srv.Publish(streamserver.Interaction{Content: "rust news"})
	rel := srv.Publish(streamserver.Interaction{Content: "golang release"})
	srv.Publish(streamserver.Interaction{Content: "python news"})

	// Crawlers 1 and 2 share the query "golang"; 3 and 4 have their own.
	want := map[int64][]string{
		1: {id(g), id(rel)},
		2: {id(g), id(rel)},
		3: {id(g), id(r), id(rel)},
		4: {id(rel)},
	}
	spawntest.ExpectStored(t, st, want)
	h := n.Health(true)
	if len(h.DataSources) != 1 || h.DataSources[0].Key != stream.Key || h.DataSources[0].Subscribers != 4 {
		t.Errorf("data sources %+v, want one %q with 4 subscribers", h.DataSources, stream.Key)
	}
	if c := srv.Connections(); c != 1 {
		t.Errorf("%d connections, want 1", c)
	}
	var billed int64
	for _, v := range srv.Billing() {
		billed += v
	}
	if billed != 6 { // golang: g, rel; golang+rust: g, r, rel; golang release (filter "release"): rel
		t.Errorf("%d items billed, want 6", billed)
	}

	// Removing the last subscriber of a query unsubscribes its hash on the
	// live connection.
	if err := n.Remove(api.RemoveRequest{Epoch: "e1", Seq: 2, CrawlerIDs: []int64{3}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, spawntest.WaitTimeout, "two subscriptions left", func() bool {
		subs := srv.Subscriptions()
		return len(subs) == 1 && len(subs[0]) == 2
	})
	if c := srv.Connections(); c != 1 {
		t.Errorf("%d connections after a removal, want 1", c)
	}
}

// TestNode_StreamQueryErrorStaysWithItsSubscribers: the service refuses
// one query's filter. Its subscribers fail with the reason; a subscriber of
// another query on the same connection shows no error and keeps receiving.
func TestNode_StreamQueryErrorStaysWithItsSubscribers(t *testing.T) {
	srv, base := streamserver.Start(t, streamserver.Options{Username: "u", APIKey: "k", TickInterval: 50 * time.Millisecond})
	srv.RefuseCSDL("forbidden")
	kind, err := stream.New(stream.Options{
		URL: base, Username: "u", APIKey: "k",
		Client: netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, st := startNode(t, kind)
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{
		streamSpec(1, nil, "golang"), streamSpec(2, nil, "forbidden"),
	}}); err != nil {
		t.Fatal(err)
	}
	subscriber := func(id int64) api.HealthSubscriber {
		for _, s := range n.Health(true).Subscribers {
			if s.CrawlerID == id {
				return s
			}
		}
		t.Fatalf("crawler %d is not a subscriber", id)
		return api.HealthSubscriber{}
	}
	testkit.WaitFor(t, spawntest.WaitTimeout, "the refused query's subscriber failed with the reason", func() bool {
		s := subscriber(2)
		return s.State == api.StateFailed && strings.Contains(s.Error, "filter refused")
	})
	testkit.WaitFor(t, spawntest.WaitTimeout, "the good query subscribed", func() bool {
		subs := srv.Subscriptions()
		return len(subs) == 1 && len(subs[0]) == 1
	})
	g := srv.Publish(streamserver.Interaction{Content: "golang news"})
	spawntest.ExpectStored(t, st, map[int64][]string{1: {"ds:" + g.ID}})
	if s := subscriber(1); s.Error != "" || s.State != api.StateRunning {
		t.Fatalf("subscriber of the good query: state %s, error %q; want running with no error", s.State, s.Error)
	}
	// The data source as a whole still reports every query's error.
	if h := n.Health(true); len(h.DataSources) != 1 || !strings.Contains(h.DataSources[0].Error, "filter refused") {
		t.Fatalf("data sources %+v, want the refused query's error", h.DataSources)
	}
}

func TestNode_UnconfiguredStreamSaysWhy(t *testing.T) {
	n, _ := startNode(t, stream.Unconfigured())
	resp, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{streamSpec(1, nil, "x")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || !strings.Contains(resp.Results[0].Error, "stream endpoint and API key not configured on this spawn") {
		t.Errorf("results %+v", resp.Results)
	}
}
