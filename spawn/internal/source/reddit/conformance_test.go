package reddit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/reddit"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

func readLines(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, slices.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordedThing is a thing as Reddit sent it (testdata/SOURCES.md) and
// what a user must see of it (read off the payload by testdata/expected.py,
// not by this package).
type recordedThing struct {
	raw       json.RawMessage
	name      string
	subreddit string
	kind      string
	seen      spawntest.Seen
}

func readThings(t *testing.T) []recordedThing {
	t.Helper()
	payloads, expected := readLines(t, "things.jsonl"), readLines(t, "expected-things.jsonl")
	if len(payloads) != len(expected) || len(payloads) == 0 {
		t.Fatalf("%d things, %d expectations", len(payloads), len(expected))
	}
	out := make([]recordedThing, len(payloads))
	for i := range payloads {
		var p struct {
			Thing json.RawMessage `json:"thing"`
		}
		var e struct {
			Seen      spawntest.Seen `json:"seen"`
			Subreddit string         `json:"subreddit"`
			Kind      string         `json:"kind"`
		}
		var head struct {
			Data struct {
				Name string `json:"name"`
			} `json:"data"`
		}
		if json.Unmarshal(payloads[i], &p) != nil || json.Unmarshal(expected[i], &e) != nil || json.Unmarshal(p.Thing, &head) != nil {
			t.Fatalf("line %d unreadable", i+1)
		}
		if e.Seen.ID != IDPrefix+head.Data.Name {
			t.Fatalf("line %d: payload %s, expectation %s", i+1, head.Data.Name, e.Seen.ID)
		}
		out[i] = recordedThing{raw: p.Thing, name: head.Data.Name, subreddit: e.Subreddit, kind: e.Kind, seen: e.Seen}
	}
	return out
}

func comment(it source.Item) api.Comment {
	return api.Comment{ID: it.ID, Author: it.Author, AuthorID: it.AuthorID, Text: it.Text, URL: it.URL, Lang: it.Lang,
		PublishedAt: it.PublishedAt, ReplyTo: it.ReplyTo, ThreadID: it.ThreadID, Links: it.Links, RepostOf: it.RepostOf}
}

// TestConformance_RecordedThingsThroughTheirListings serves recorded
// comments and posts (2016 to 2023: Markdown links, quotes, `&` in titles,
// link posts with `&` in their URLs, comments from before Reddit sent their
// permalink) as new things of their subreddits' listings, polls them as a
// spawn does, and compares every field a user sees of what each becomes.
func TestConformance_RecordedThingsThroughTheirListings(t *testing.T) {
	things := readThings(t)
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	groups := map[string][]recordedThing{}
	for _, th := range things {
		listing := listingComments
		if th.kind == kindPost {
			listing = listingNew
		}
		k := key(th.subreddit, listing)
		groups[k] = append(groups[k], th)
	}
	recs := map[string]*spawntest.Recorder{}
	for k2 := range groups {
		_, rec, _ := run(t, k, k2)
		recs[k2] = rec
	}
	for k2, g := range groups {
		// A listing holds things newest first: add them oldest first.
		slices.SortFunc(g, func(a, b recordedThing) int { return cmpID(idOf(t, a.name), idOf(t, b.name)) })
		for _, th := range g {
			if _, err := rd.AddThing(th.raw); err != nil {
				t.Fatal(err)
			}
		}
		rec := recs[k2]
		testkit.WaitFor(t, wait, k2, func() bool { return len(rec.All()) >= len(g) })
		var got []api.Comment
		var want []spawntest.Seen
		for _, it := range rec.All() {
			got = append(got, comment(it))
		}
		for _, th := range g {
			want = append(want, th.seen)
		}
		spawntest.CompareSeen(t, got, want)
	}
}

// TestConformance_RecordedDeletionsAreTakenBack re-checks things Reddit
// answered on /api/info after their author deleted them or a moderator
// removed them (a post deleted, a comment whose author deleted the
// account, a post removed, a comment deleted) and expects each taken back.
func TestConformance_RecordedDeletionsAreTakenBack(t *testing.T) {
	payloads, expected := readLines(t, "info.jsonl"), readLines(t, "expected-info.jsonl")
	if len(payloads) != len(expected) || len(payloads) == 0 {
		t.Fatalf("%d things, %d expectations", len(payloads), len(expected))
	}
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	for i := range payloads {
		var p struct {
			Thing json.RawMessage `json:"thing"`
		}
		var e struct {
			ID        string `json:"id"`
			TakenBack bool   `json:"taken_back"`
		}
		var head struct {
			Kind string `json:"kind"`
			Data struct {
				Name      string `json:"name"`
				Subreddit string `json:"subreddit"`
			} `json:"data"`
		}
		if json.Unmarshal(payloads[i], &p) != nil || json.Unmarshal(expected[i], &e) != nil || json.Unmarshal(p.Thing, &head) != nil {
			t.Fatalf("line %d unreadable", i+1)
		}
		if _, err := rd.AddThing(p.Thing); err != nil {
			t.Fatal(err)
		}
		listing := listingComments
		if head.Kind == kindPost {
			listing = listingNew
		}
		ds, err := k.New(key(sanitizeSub(head.Data.Subreddit), listing))
		if err != nil {
			t.Fatal(err)
		}
		src := ds.(*Source)
		log := &retractionLog{}
		src.Retractions(log.add)
		src.book.add(head.Data.Name, time.Now().Add(-time.Hour), 1, 0)
		if err := src.recheck(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, took := log.find(api.RetractDelete, e.ID)
		if took != e.TakenBack {
			t.Errorf("%s: taken back %v, want %v", e.ID, took, e.TakenBack)
		}
	}
}

// sanitizeSub is a subreddit name as a key takes it.
func sanitizeSub(s string) string {
	if subredditName.MatchString(s) {
		return s
	}
	return "test"
}

// TestConformance_RecordedThingsThroughASpawn serves the recorded things in
// their subreddits' listings and runs crawlers on a real spawn node (file
// store) whose queries name subreddits: the spawn matches each thing's
// subreddit (its field) and words, as for any crawler, and each crawler
// stores exactly the things of its subreddits that its query matches,
// every field a user sees as read off the payload. The crawlers arrive
// with a cursor older than the things, as a new crawler's creation time
// is, so the listings' first polls read them back.
func TestConformance_RecordedThingsThroughASpawn(t *testing.T) {
	things := readThings(t)
	rd := startReddit(t, fake.Options{})
	slices.SortFunc(things, func(a, b recordedThing) int {
		if a.kind != b.kind {
			return strings.Compare(a.kind, b.kind)
		}
		return cmpID(idOf(t, a.name), idOf(t, b.name))
	})
	for _, th := range things {
		if _, err := rd.AddThing(th.raw); err != nil {
			t.Fatal(err)
		}
	}
	node := spawntest.StartFileNode(t, Name, newKind(t, fastOptions(t, rd.URL())))
	words := regexp.MustCompile(`[a-z0-9]+`)
	crawlers := []struct {
		query string
		wants func(recordedThing) bool
	}{
		{"subreddit:askreddit", func(th recordedThing) bool { return th.subreddit == "askreddit" }},
		{"subreddit:oculus OR subreddit:spiderbro OR subreddit:SFBayJobs OR subreddit:whowouldwin", func(th recordedThing) bool {
			return slices.Contains([]string{"oculus", "spiderbro", "sfbayjobs", "whowouldwin"}, th.subreddit)
		}},
		{"(subreddit:askreddit great) OR subreddit:test", func(th recordedThing) bool {
			return th.subreddit == "test" || th.subreddit == "askreddit" && slices.Contains(words.FindAllString(strings.ToLower(th.seen.Text), -1), "great")
		}},
		{"subreddit:test -subreddit:askreddit", func(th recordedThing) bool { return th.subreddit == "test" }},
	}
	since := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	var specs []api.SubscriberSpec
	for i, c := range crawlers {
		spec := spawntest.Spec(Name, int64(i+1), nil, c.query)
		spec.Cursor = &api.Cursor{PublishedAt: since}
		specs = append(specs, spec)
	}
	spawntest.Subscribe(t, node.Node, specs...)
	total := 0
	for i, c := range crawlers {
		var want []spawntest.Seen
		for _, th := range things {
			if c.wants(th) {
				want = append(want, th.seen)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%q: no recorded thing to store", c.query)
		}
		t.Run(c.query, func(t *testing.T) { node.WaitSeen(t, int64(i+1), want) })
		total += len(want)
	}
	t.Logf("%d things through %d crawlers on a spawn: %d stored and compared", len(things), len(crawlers), total)
}
