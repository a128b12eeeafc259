package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// TestRetractions_LoggedOnceAckedAndHandedToEveryNode has two spawns
// report the same post's delete (both read the whole network): it is
// logged once, each spawn's report is acknowledged in its next poll, a
// report seen again is acknowledged without logging it twice, and each
// poll hands the spawn the log's entries after the one its store applied.
func TestRetractions_LoggedOnceAckedAndHandedToEveryNode(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, b := f.addNode("node-a"), f.addNode("node-b")
	del := api.Retraction{Op: api.RetractDelete, Source: api.SourceBluesky, ID: "at://did:plc:x/app.bsky.feed.post/1", At: time.Now()}
	edit := api.Retraction{Op: api.RetractUpdate, Source: api.SourceBluesky, ID: "at://did:plc:x/app.bsky.feed.post/2", Text: "new", EditedAt: time.Now(), At: time.Now()}
	fromA := []api.Retraction{del, edit}
	fromA[0].Seq, fromA[1].Seq = 1, 2
	fromB := []api.Retraction{del}
	fromB[0].Seq = 7
	f.h.takeRetractions(ctx, a, api.PollResponse{Retractions: fromA})
	f.h.takeRetractions(ctx, b, api.PollResponse{Retractions: fromB})
	// A told again (its acknowledgement lost): acknowledged, not logged.
	f.h.takeRetractions(ctx, a, api.PollResponse{Retractions: fromA[:1]})
	// Nonsense is acknowledged and never logged.
	f.h.takeRetractions(ctx, b, api.PollResponse{Retractions: []api.Retraction{{Seq: 8, Op: "drop-table", Source: "bluesky", ID: "x"}}})

	rows, err := f.st.RetractionsAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].API().ID != del.ID || rows[1].API().Text != "new" {
		t.Fatalf("the log holds %+v, want the delete once and the edit", rows)
	}
	reqA, reqB := api.PollRequest{}, api.PollRequest{}
	f.h.addRetractions(ctx, a, &reqA)
	f.h.addRetractions(ctx, b, &reqB)
	if !slices.Equal(reqA.RetractionAcks, []uint64{1, 2, 1}) || !slices.Equal(reqB.RetractionAcks, []uint64{7, 8}) {
		t.Errorf("acks a %v, b %v", reqA.RetractionAcks, reqB.RetractionAcks)
	}
	if len(reqB.Retractions) != 2 || reqB.Retractions[0].Seq != uint64(rows[0].ID) || reqB.Retractions[1].Seq != uint64(rows[1].ID) {
		t.Errorf("b is handed %+v", reqB.Retractions)
	}
	// b's store applied the first entry: only the second is handed on,
	// and the acknowledgements are not sent twice.
	f.h.takeRetractions(ctx, b, api.PollResponse{RetractionsApplied: uint64(rows[0].ID)})
	reqB = api.PollRequest{}
	f.h.addRetractions(ctx, b, &reqB)
	if len(reqB.Retractions) != 1 || reqB.Retractions[0].Seq != uint64(rows[1].ID) || len(reqB.RetractionAcks) != 0 {
		t.Errorf("after the first applied, b is handed %+v with acks %v", reqB.Retractions, reqB.RetractionAcks)
	}
	// A spawn registering with a store that applied everything gets
	// nothing more; one with a new store, the whole log.
	f.h.takeRetractions(ctx, b, api.PollResponse{RetractionsApplied: uint64(rows[1].ID)})
	reqB = api.PollRequest{}
	f.h.addRetractions(ctx, b, &reqB)
	if len(reqB.Retractions) != 0 {
		t.Errorf("a spawn that applied everything is handed %+v", reqB.Retractions)
	}
	c := f.addNode("node-c")
	c.registeredRetract(api.RegisterRequest{Store: "file:c"})
	reqC := api.PollRequest{}
	f.h.addRetractions(ctx, c, &reqC)
	if len(reqC.Retractions) != 2 {
		t.Errorf("a new store is handed %d entries, want the whole log", len(reqC.Retractions))
	}
}
