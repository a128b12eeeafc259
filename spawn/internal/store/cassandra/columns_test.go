package cassandra

import (
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// TestFidelityFieldsRoundTrip opens a keyspace of an earlier release (the
// store adds author_id, links, repost_of and unreadable_date) and reads a
// comment's account id, links, repost reference and unreadable date back
// unchanged through Recent, Export and
// Thread; a comment without them reads back without them.
func TestFidelityFieldsRoundTrip(t *testing.T) {
	addr := testAddr(t)
	ks := newKeyspace(t)
	olderSchema(t, ks)
	ctx := ctxT(t)
	s, err := Open(ctx, "cassandra://"+addr+"/"+ks, testLogger(t))
	if err != nil {
		t.Fatalf("open a keyspace of an earlier release: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	pub := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	full := mkComment(6, "tw:2", pub)
	full.AuthorID, full.Links, full.RepostOf = "2244994945", []string{"https://go.dev/blog/", "https://example.com/a?b=c"}, "tw:1"
	full.UnreadableDate = "Seg, 99 Xyz 2018"
	bare := mkComment(6, "tw:3", pub.Add(time.Second))
	bare.ReplyTo, bare.ThreadID = "tw:2", "tw:2"
	if err := s.Write(ctx, []api.Comment{full, bare}); err != nil {
		t.Fatal(err)
	}
	check := func(how string, got []api.Comment) {
		t.Helper()
		if len(got) != 2 {
			t.Fatalf("%s: %d comments, want 2", how, len(got))
		}
		for _, c := range got {
			want := bare
			if c.ID == full.ID {
				want = full
			}
			if c.AuthorID != want.AuthorID || !slices.Equal(c.Links, want.Links) || c.RepostOf != want.RepostOf || c.UnreadableDate != want.UnreadableDate {
				t.Errorf("%s: %s read back author_id %q links %q repost_of %q unreadable_date %q, want %q %q %q %q",
					how, c.ID, c.AuthorID, c.Links, c.RepostOf, c.UnreadableDate, want.AuthorID, want.Links, want.RepostOf, want.UnreadableDate)
			}
			if want.Links == nil && c.Links != nil {
				t.Errorf("%s: %s links %#v, want nil", how, c.ID, c.Links)
			}
		}
	}
	recent, err := s.Recent(ctx, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	check("recent", recent)
	page, err := s.Export(ctx, 6, store.Range{}, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	check("export", page.Comments)
	_, thread, err := s.Thread(ctx, 6, "tw:3")
	if err != nil {
		t.Fatal(err)
	}
	check("thread", thread)
}
