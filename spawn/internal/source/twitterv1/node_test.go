package twitterv1_test

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/twitterserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/twitterv1"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

func twitterSpec(id int64, keywords []string, terms ...string) api.SubscriberSpec {
	return spawntest.Spec(api.SourceTwitter, id, keywords, terms...)
}

// TestNode_TwitterSubscribersShareOneStream runs a real node with the
// twitter kind against the local Twitter: four subscribers, one data source,
// one stream, and each stored comment belongs to exactly the crawlers whose
// terms (and keywords) it matches.
func TestNode_TwitterSubscribersShareOneStream(t *testing.T) {
	creds := twitterv1.Credentials{ConsumerKey: "ck", ConsumerSecret: "cs", AccessToken: "at", AccessSecret: "as"}
	srv, base := twitterserver.Start(t, twitterserver.Options{Credentials: twitterserver.Credentials(creds), KeepAlive: 50 * time.Millisecond})

	kind, err := twitterv1.New(twitterv1.Options{
		Credentials: creds, APIURL: base, StreamURL: base, ReopenDelay: 20 * time.Millisecond,
		Client: netguard.NewClient(netguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, st := spawntest.StartNode(t, api.SourceTwitter, kind)

	specs := []api.SubscriberSpec{
		twitterSpec(1, nil, "golang"),
		twitterSpec(2, nil, "rust"),
		twitterSpec(3, nil, "golang", "rust"),
		twitterSpec(4, nil, "golang release"),
	}
	spawntest.Subscribe(t, n, specs...)
	// Crawler 4's query is golang AND release: Twitter's track reads the
	// words of one term as an AND.
	testkit.WaitFor(t, spawntest.WaitTimeout, "one stream tracking the terms of every query", func() bool {
		tr := srv.OpenTracks()
		return len(tr) == 1 && slices.Equal(tr[0], []string{"golang", "golang release", "rust"})
	})

	id := func(tw twitterserver.Tweet) string { return "tw:" + strconv.FormatInt(tw.ID, 10) }
	g := srv.Publish(twitterserver.Tweet{Text: "golang news"})
	r := srv.Publish(twitterserver.Tweet{Text: "rust news"})
	both := srv.Publish(twitterserver.Tweet{Text: "golang release, rust too"})
	srv.Publish(twitterserver.Tweet{Text: "python news"})

	want := map[int64][]string{
		1: {id(g), id(both)},
		2: {id(r), id(both)},
		3: {id(g), id(r), id(both)},
		4: {id(both)},
	}
	spawntest.ExpectStored(t, st, want)
	h := n.Health(true)
	if len(h.DataSources) != 1 || h.DataSources[0].Key != twitterv1.Key || h.DataSources[0].Subscribers != 4 {
		t.Errorf("data sources %+v, want one %q with 4 subscribers", h.DataSources, twitterv1.Key)
	}
	if c := srv.Streaming(); c != 1 {
		t.Errorf("%d stream connections, want 1", c)
	}

	// An unconfigured spawn refuses twitter subscribers, saying why.
	n2, _ := spawntest.StartNode(t, api.SourceTwitter, twitterv1.Unconfigured())
	resp, err := n2.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: specs[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Error == "" {
		t.Fatalf("unconfigured spawn accepted a twitter subscriber: %+v", resp.Results)
	}
	if e := resp.Results[0].Error; !strings.Contains(e, "twitter credentials not configured on this spawn") {
		t.Errorf("error %q does not say the credentials are missing", e)
	}
}
