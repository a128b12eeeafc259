package bluesky

import (
	"slices"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// Posts as people write them reach a crawler through a real node and a
// real file store: words end at curly apostrophes, dashes, quotes and
// ideographs; exclusions hold across them; invisible characters are
// ignored in matching and kept in the stored text.
func TestNode_WordsAsPeopleWriteThem(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{StepBack: -1})
	k, err := New(testOptions(t, js.URL()))
	if err != nil {
		t.Fatal(err)
	}
	fn := spawntest.StartFileNode(t, api.SourceBluesky, k)
	spawntest.Subscribe(t, fn.Node, spawntest.Spec(api.SourceBluesky, 1, nil, "golang -java"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	var want []string
	for _, text := range []string{"golang’s generics", "«golang» — fast", "学习golang。", "go\u200blang at last"} {
		want = append(want, js.Publish(jetstream.Post{DID: "did:plc:alice", Text: text}).URI)
	}
	for _, text := range []string{"golang java’s", "golang java—again", "golang java\u00a0bad", "golangé"} {
		js.Publish(jetstream.Post{DID: "did:plc:alice", Text: text})
	}
	last := js.Publish(jetstream.Post{DID: "did:plc:alice", Text: "golang, the end"}).URI
	want = append(want, last)
	var got []api.Comment
	testkit.WaitFor(t, waitTimeout, "the last post stored", func() bool {
		got = fn.Lines(t, 1)
		return slices.ContainsFunc(got, func(c api.Comment) bool { return c.ID == last })
	})
	var ids []string
	for _, c := range got {
		ids = append(ids, c.ID)
		if c.ID == want[3] && c.Text != "go\u200blang at last" {
			t.Errorf("stored text %q, want it as written", c.Text)
		}
	}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("stored %q, want %q", ids, want)
	}
}
