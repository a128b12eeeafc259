package spawntest

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehub"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/file"
)

// Seen is what a user sees of a stored comment: the fields the
// conformance tests check against what the service said.
type Seen struct {
	ID          string    `json:"id"`
	Author      string    `json:"author,omitempty"`
	AuthorID    string    `json:"author_id,omitempty"`
	Text        string    `json:"text"`
	URL         string    `json:"url,omitempty"`
	Lang        string    `json:"lang,omitempty"`
	PublishedAt time.Time `json:"published_at"`
	ReplyTo     string    `json:"reply_to,omitempty"`
	ThreadID    string    `json:"thread_id,omitempty"`
	Links       []string  `json:"links,omitempty"`
	RepostOf    string    `json:"repost_of,omitempty"`
	// EditedAt is when the post was last edited, as the service said when
	// it arrived (a post may arrive already edited); zero when never.
	EditedAt time.Time `json:"edited_at,omitzero"`
}

// SeenOf is the part of c a user sees.
func SeenOf(c api.Comment) Seen {
	return Seen{ID: c.ID, Author: c.Author, AuthorID: c.AuthorID, Text: c.Text, URL: c.URL, Lang: c.Lang,
		PublishedAt: c.PublishedAt.UTC(), ReplyTo: c.ReplyTo, ThreadID: c.ThreadID, Links: c.Links, RepostOf: c.RepostOf, EditedAt: c.EditedAt.UTC()}
}

// FileNode is a real spawn node storing into a real file store (the
// embedded default), so a conformance test sees a comment as it lands on
// disk: decode, match and store, the whole spawn path.
type FileNode struct {
	*node.Node
	Store *file.Store
	Dir   string
}

// StartFileNode runs a real spawn node with kind registered as source name,
// storing into a file store in a temporary directory and registered with
// a fake hub, until the test ends. It returns once the node is attached.
func StartFileNode(t *testing.T, name string, kind source.Kind) *FileNode {
	t.Helper()
	dir := t.TempDir()
	st, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{
		HubURL: fakehub.Start(t), Store: st, Sources: source.Registry{name: kind},
		Logger: slog.New(slog.DiscardHandler), OrphanAfter: time.Hour, DetachAfter: time.Hour,
		// What the source reads, as it reads it: no detected language
		// or sentiment (the node's own tests cover those).
		NoSentiment: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx, nodeStopTimeout) }()
	t.Cleanup(func() { cancel(); <-done; st.Close() })
	testkit.WaitFor(t, WaitTimeout, "registration", func() bool { return n.Health(true).State == api.NodeAttached })
	return &FileNode{Node: n, Store: st, Dir: dir}
}

// Lines reads every comment of a crawler from its JSON Lines day files, as
// an operator or another program would, in file order.
func (f *FileNode) Lines(t *testing.T, crawler int64) []api.Comment {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(f.Dir, strconv.FormatInt(crawler, 10), "*.jsonl"))
	slices.Sort(files)
	var out []api.Comment
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			var c api.Comment
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, c)
		}
	}
	return out
}

// WaitSeen waits until a crawler has stored len(want) comments and checks
// that what a user sees of each is exactly want (compared by id; order
// does not matter). It returns the stored comments.
func (f *FileNode) WaitSeen(t *testing.T, crawler int64, want []Seen) []api.Comment {
	t.Helper()
	var got []api.Comment
	testkit.WaitFor(t, WaitTimeout, "stored comments", func() bool {
		got = f.Lines(t, crawler)
		return len(got) >= len(want)
	})
	CompareSeen(t, got, want)
	return got
}

// CompareSeen checks that the comments are exactly want, field by field,
// naming every field that differs.
func CompareSeen(t *testing.T, got []api.Comment, want []Seen) {
	t.Helper()
	byID := map[string]Seen{}
	for _, c := range got {
		byID[c.ID] = SeenOf(c)
	}
	if len(byID) != len(got) {
		t.Errorf("%d comments stored under %d ids", len(got), len(byID))
	}
	for _, w := range want {
		g, ok := byID[w.ID]
		if !ok {
			t.Errorf("comment %s not stored", w.ID)
			continue
		}
		delete(byID, w.ID)
		for _, d := range diffSeen(g, w) {
			t.Errorf("comment %s: %s", w.ID, d)
		}
	}
	for id := range byID {
		t.Errorf("comment %s stored, not expected", id)
	}
}

// diffSeen lists the fields of got that are not want's.
func diffSeen(got, want Seen) []string {
	var out []string
	field := func(name, g, w string) {
		if g != w {
			out = append(out, name+" "+quoteS(g)+", want "+quoteS(w))
		}
	}
	field("author", got.Author, want.Author)
	field("author_id", got.AuthorID, want.AuthorID)
	field("text", got.Text, want.Text)
	field("url", got.URL, want.URL)
	field("lang", got.Lang, want.Lang)
	if !got.PublishedAt.Equal(want.PublishedAt) {
		field("published_at", got.PublishedAt.Format(time.RFC3339Nano), want.PublishedAt.Format(time.RFC3339Nano))
	}
	field("reply_to", got.ReplyTo, want.ReplyTo)
	field("thread_id", got.ThreadID, want.ThreadID)
	field("links", strings.Join(got.Links, " "), strings.Join(want.Links, " "))
	field("repost_of", got.RepostOf, want.RepostOf)
	if !got.EditedAt.Equal(want.EditedAt) {
		field("edited_at", got.EditedAt.Format(time.RFC3339Nano), want.EditedAt.Format(time.RFC3339Nano))
	}
	return out
}

func quoteS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
