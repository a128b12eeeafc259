package node

import (
	"maps"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

func TestBehindCursor(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		item   source.Item
		cursor api.Cursor
		behind bool
	}{
		{"older publication", source.Item{PublishedAt: at.Add(-time.Second)}, api.Cursor{PublishedAt: at}, true},
		{"same publication", source.Item{PublishedAt: at}, api.Cursor{PublishedAt: at}, true},
		{"newer publication", source.Item{PublishedAt: at.Add(time.Second)}, api.Cursor{PublishedAt: at}, false},
		// A post created earlier but logged later is new: positions decide.
		{"logged later, created earlier", source.Item{PublishedAt: at.Add(-time.Hour), Position: 20}, api.Cursor{PublishedAt: at, Position: 10}, false},
		{"logged earlier, created later", source.Item{PublishedAt: at.Add(time.Hour), Position: 5}, api.Cursor{PublishedAt: at, Position: 10}, true},
		{"same position", source.Item{Position: 10}, api.Cursor{Position: 10}, true},
		{"cursor position in the future", source.Item{PublishedAt: at.Add(time.Second), FetchedAt: at, Position: at.UnixMicro()}, api.Cursor{PublishedAt: at, Position: at.Add(10 * 365 * 24 * time.Hour).UnixMicro()}, false},
		{"cursor without a position", source.Item{PublishedAt: at.Add(time.Second), Position: 5}, api.Cursor{PublishedAt: at}, false},
		// A source that numbers its items: its id in the cursor decides,
		// whatever the whole seconds of its published times say.
		{"source id older, same second", source.Item{PublishedAt: at, SourceID: "1500"}, api.Cursor{PublishedAt: at, Sources: map[string]string{"twitter": "1700"}}, true},
		{"source id newer, same second", source.Item{PublishedAt: at, SourceID: "1800"}, api.Cursor{PublishedAt: at, Sources: map[string]string{"twitter": "1700"}}, false},
		{"source id newer by length", source.Item{PublishedAt: at, SourceID: "10000"}, api.Cursor{PublishedAt: at, Sources: map[string]string{"twitter": "9999"}}, false},
		{"same source id", source.Item{SourceID: "1700"}, api.Cursor{Sources: map[string]string{"twitter": "1700"}}, true},
		// Another data source's id says nothing of this one's items.
		{"id of another source", source.Item{PublishedAt: at.Add(time.Second), SourceID: "1"}, api.Cursor{PublishedAt: at, Sources: map[string]string{"mastodon:https://b.example": "1700"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := behindCursor(tc.item, "twitter", &tc.cursor); got != tc.behind {
				t.Fatalf("behindCursor = %v, want %v", got, tc.behind)
			}
		})
	}
}

// TestNode_IncrementsCarryTheNewestSourceIDPerDataSource: the usage a
// spawn reports names, for each data source, the newest item id of the
// comments counted (compared as numbers), which becomes the crawler's
// cursor there; items without one leave it out.
func TestNode_IncrementsCarryTheNewestSourceIDPerDataSource(t *testing.T) {
	n, kind, st := attachedNode(t)
	sp := spec(1, 1, "f")
	sp.Query = []string{"f", "g"} // two data sources
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{sp}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	kind.send("f", source.Item{ID: "a", SourceID: "998", PublishedAt: now}, source.Item{ID: "b", SourceID: "1001", PublishedAt: now}, source.Item{ID: "c", SourceID: "999", PublishedAt: now})
	kind.send("g", source.Item{ID: "d", SourceID: "7", PublishedAt: now}, source.Item{ID: "e", PublishedAt: now})
	testkit.WaitFor(t, waitTimeout, "five comments stored", func() bool { return st.count(1) == 5 })
	var got map[string]string
	testkit.WaitFor(t, waitTimeout, "the increments", func() bool {
		resp, err := n.Poll(api.PollRequest{Epoch: "e1", NodeID: n.ID(), Seq: 2, Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}}})
		if err != nil {
			return false
		}
		got = map[string]string{}
		count := int64(0)
		for _, inc := range resp.Increments {
			count += inc.Count
			for k, v := range inc.Sources {
				got[k] = api.LaterSourceID(got[k], v)
			}
		}
		return count == 5
	})
	if want := map[string]string{"f": "1001", "g": "7"}; !maps.Equal(got, want) {
		t.Fatalf("sources %v, want %v", got, want)
	}
}
