package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// TestBlueskyFidelity_HandlesAltTextsAndFromHandle runs bluesky crawlers on
// a spawn reading the local Jetstream (which, as production, names authors
// by DID only) and asking the local AppView for handles:
//   - a query that only an image's alt text matches stores that post;
//   - its comment shows the author's handle (filled in once the AppView
//     answered), with the DID as author_id, through the admin API;
//   - from:handle matches that author's very first post, whose DID the
//     spawn learned from the handle before the post came.
func TestBlueskyFidelity_HandlesAltTextsAndFromHandle(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	av := appview.Start(t)
	av.Set("did:plc:alice4fidelity", "alice.example.test")
	av.Set("did:plc:bob4fidelity", "bob.example.test")
	c := newCluster(t, clusterOpts{})
	c.addSpawnWith(func(cfg *spawnapp.Settings) {
		cfg.Bluesky.JetstreamURL, cfg.Bluesky.AppViewURL = js.URL(), av.URL()
	})
	c.WaitNodes(1)
	u := c.user(0)
	kites, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceBluesky, Query: []string{"kite"}})
	if err != nil {
		t.Fatal(err)
	}
	alices, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceBluesky, Query: []string{"from:alice.example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{kites.ID, alices.ID} {
		testkit.WaitFor(t, clustertest.WaitTimeout, "the crawlers running", func() bool { return c.crawler(id).State == api.StateRunning })
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn connected to Jetstream", func() bool { return js.Conns() == 1 })
	testkit.WaitFor(t, clustertest.WaitTimeout, "alice's handle known to the spawn", func() bool {
		return spawnSample(t, c.Spawns[0].URL(), "bw_spawn_bluesky_handles") >= 1
	})

	first := js.Publish(jetstream.Post{DID: "did:plc:alice4fidelity", Text: "my very first post", Langs: []string{"en"}})
	embed, _ := json.Marshal(map[string]any{"$type": "app.bsky.embed.images", "images": []map[string]any{
		{"alt": "a red kite over the hill", "image": map[string]any{"$type": "blob", "ref": map[string]string{"$link": "bafkreibabalobzn6cd366ukcsjycp4yymjymgfxcv6xczmlgpemzkz3cfa"}, "mimeType": "image/jpeg", "size": 760898}},
	}})
	photo := js.Publish(jetstream.Post{DID: "did:plc:bob4fidelity", Text: "", Embed: embed})
	js.Publish(jetstream.Post{DID: "did:plc:bob4fidelity", Text: "no birds here"})

	recent := func(id int64) []api.Comment {
		cs, err := c.Client.RecentComments(c.Ctx, id, 10)
		if err != nil {
			return nil
		}
		return cs
	}
	var got []api.Comment
	testkit.WaitFor(t, clustertest.WaitTimeout, "the photo stored under bob's handle", func() bool {
		got = recent(kites.ID)
		return len(got) == 1 && got[0].Author == "bob.example.test"
	})
	if cm := got[0]; cm.ID != photo.URI || cm.AuthorID != "did:plc:bob4fidelity" || cm.Text != "a red kite over the hill" ||
		cm.URL != "https://bsky.app/profile/did:plc:bob4fidelity/post/"+photo.URI[len(photo.URI)-13:] {
		t.Errorf("photo comment %+v", cm)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "alice's first post stored", func() bool { got = recent(alices.ID); return len(got) == 1 })
	if cm := got[0]; cm.ID != first.URI || cm.Author != "alice.example.test" || cm.AuthorID != "did:plc:alice4fidelity" {
		t.Errorf("alice's first post %+v, want it matched and stored under her handle", cm)
	}
	if ids := commentIDs(c.storedComments(kites.ID)); !slices.Equal(ids, []string{photo.URI}) {
		t.Errorf("kite crawler stored %v", ids)
	}
	t.Logf("AppView: %d calls for %d actors", av.Calls(), av.Actors())
}

// spawnSample sums the samples of a metric on a spawn's /metrics; -1 when
// there is none.
func spawnSample(t *testing.T, spawnURL, name string) float64 {
	t.Helper()
	resp, err := http.Get(spawnURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		sum, found = sum+f, true
	}
	if !found {
		return -1
	}
	return sum
}

func commentIDs(cs []api.Comment) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}
