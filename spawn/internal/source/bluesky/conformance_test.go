package bluesky

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// corpus lists the recorded events (testdata/SOURCES.md), oldest first:
// replayed in one stream, they go forward in time as a stream does (a post
// far behind what the stream has reached is a replay the source skips).
var corpus = []string{"docs_posts.jsonl", "repo_car_posts.jsonl", "jetstream_golden_v1.jsonl", "jetstream_expected_v1.jsonl"}

// readLines reads a JSON Lines file of testdata.
func readLines(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		out = append(out, l)
	}
	return out
}

// readJSON decodes a JSON file of testdata into v.
func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// TestConformance_RecordedPostsAsAUserSeesThem replays every event of the
// recorded corpus through the local Jetstream into a real spawn node
// storing into a real file store, with a local AppView that knows most of
// the authors (testdata/appview_profiles.json: one unknown to it, one whose
// handle does not verify), and checks each stored post field by field
// against testdata/conformance_expected.json, worked out from the payloads
// apart from this code. The query names every author's DID, so it matches
// every post through author_id.
func TestConformance_RecordedPostsAsAUserSeesThem(t *testing.T) {
	var want []spawntest.Seen
	readJSON(t, "conformance_expected.json", &want)
	var profiles map[string]string
	readJSON(t, "appview_profiles.json", &profiles)

	js := jetstream.Start(t, jetstream.Options{ReplayWindow: 100 * 365 * 24 * time.Hour})
	av := appview.Start(t)
	for did, handle := range profiles {
		av.Set(did, handle)
	}
	k, err := New(Options{JetstreamURL: js.URL(), AppViewURL: av.URL(), LookupLinger: 20 * time.Millisecond, Logger: testkit.Logger(t, "bluesky")})
	if err != nil {
		t.Fatal(err)
	}
	fn := spawntest.StartFileNode(t, api.SourceBluesky, k)
	var dids []string
	for _, w := range want {
		if !slices.Contains(dids, w.AuthorID) {
			dids = append(dids, w.AuthorID)
		}
	}
	spawntest.Subscribe(t, fn.Node, spawntest.Spec(api.SourceBluesky, 1, nil, "from:"+strings.Join(dids, " OR from:")))
	testkit.WaitFor(t, spawntest.WaitTimeout, "the connection", func() bool { return js.Conns() == 1 })

	events := 0
	for _, name := range corpus {
		lines := readLines(t, name)
		events += len(lines)
		if err := js.Replay(lines); err != nil {
			t.Fatal(err)
		}
	}
	// Every post is stored at once, some under their DID, then amended
	// when the AppView has told their author's handle.
	var got []api.Comment
	settled := func() bool {
		got = fn.Lines(t, 1)
		if len(got) < len(want) {
			return false
		}
		authors := map[string]string{}
		for _, c := range got {
			authors[c.ID] = c.Author
		}
		for _, w := range want {
			if authors[w.ID] != w.Author {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(spawntest.WaitTimeout); !settled() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if t.Failed() || len(got) != len(want) {
		for _, c := range got {
			t.Logf("line %s %s", c.ID, c.Author)
		}
	}
	spawntest.CompareSeen(t, got, want)
	t.Logf("%d recorded events read, %d posts stored, %d fields checked; %d AppView calls for %d DIDs",
		events, len(want), 10*len(want), av.Calls(), len(dids))
}
