package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

// namingSource is a chanSource that names authors late.
type namingSource struct {
	*chanSource
	mu   sync.Mutex
	tell func([]source.AuthorName)
}

func (s *namingSource) NameAuthors(fn func([]source.AuthorName)) bool {
	s.mu.Lock()
	s.tell = fn
	s.mu.Unlock()
	return true
}

func (s *namingSource) name(id, name string) {
	s.mu.Lock()
	fn := s.tell
	s.mu.Unlock()
	fn([]source.AuthorName{{AuthorID: id, Author: name}})
}

func TestNode_AuthorNamesLearnedLateAreFilledInAndAmended(t *testing.T) {
	st, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	n, kind := attachedNodeWith(t, st)
	var ds *namingSource
	var dsMu sync.Mutex
	kind.wrap = func(c *chanSource) source.DataSource {
		dsMu.Lock()
		defer dsMu.Unlock()
		ds = &namingSource{chanSource: c}
		return ds
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.names.run(ctx, st) }()
	t.Cleanup(func() { cancel(); <-done })
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}}); err != nil {
		t.Fatal(err)
	}
	pub := time.Now().UTC().Truncate(time.Second)
	item := func(id, author string) source.Item {
		return source.Item{ID: id, Author: author, AuthorID: author, Text: "hello", PublishedAt: pub}
	}
	stored := func() map[string]string {
		cs, err := st.Recent(context.Background(), 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range cs {
			out[c.ID] = c.Author
		}
		return out
	}

	// Stored under the DID, then amended when the name comes.
	kind.send("f", item("p1", "did:plc:alice"))
	testkit.WaitFor(t, waitTimeout, "p1 stored", func() bool { return stored()["p1"] == "did:plc:alice" })
	dsMu.Lock()
	src := ds
	dsMu.Unlock()
	src.name("did:plc:alice", "alice.test")
	testkit.WaitFor(t, waitTimeout, "p1 amended", func() bool { return stored()["p1"] == "alice.test" && n.names.amendedCount() == 1 })

	// A name known before the write goes in with it: no amendment.
	amended := n.names.amendedCount()
	kind.send("f", item("p2", "did:plc:alice"))
	testkit.WaitFor(t, waitTimeout, "p2 stored", func() bool { return stored()["p2"] != "" })
	if got := stored()["p2"]; got != "alice.test" {
		t.Errorf("p2 stored by %q, want the name known before its write", got)
	}
	if n.names.amendedCount() != amended {
		t.Errorf("p2 was amended: %d, want %d", n.names.amendedCount(), amended)
	}
	// Amendments are not new comments: usage counts two, and stays there.
	usage := func() (stored, counted int64) {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, inc := range n.usage.incs {
			counted += inc.Count
		}
		return n.table.subs[1].stored, counted
	}
	testkit.WaitFor(t, waitTimeout, "usage of two comments", func() bool { s, c := usage(); return s == 2 && c == 2 })
	src.name("did:plc:alice", "alice.test") // told again: nothing waits for it
	if s, c := usage(); s != 2 || c != 2 {
		t.Errorf("stored %d, usage %d after the amendments: want 2 and 2", s, c)
	}
	if got := stored(); len(got) != 2 {
		t.Errorf("comments %v", got)
	}
}
