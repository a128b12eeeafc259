package hackernews

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/hackernews"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// recorded is one recorded payload of testdata and what a user must see of
// it (testdata/SOURCES.md; the expectations are read off the payloads by
// testdata/expected.py, not by this package).
type recorded struct {
	raw   json.RawMessage
	id    int64
	seen  *spawntest.Seen // nil: not kept (skip says why)
	skip  string
	match string
}

func readRecorded(t *testing.T, payloads, expected, field string) []recorded {
	t.Helper()
	lines := func(name string) [][]byte {
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
	ps, es := lines(payloads), lines(expected)
	if len(ps) != len(es) || len(ps) == 0 {
		t.Fatalf("%s: %d payloads, %d expectations", payloads, len(ps), len(es))
	}
	out := make([]recorded, len(ps))
	for i := range ps {
		var p map[string]json.RawMessage
		var e struct {
			Seen  *spawntest.Seen `json:"seen"`
			ID    string          `json:"id"`
			Skip  string          `json:"skip"`
			Match string          `json:"match"`
		}
		if err := json.Unmarshal(ps[i], &p); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(es[i], &e); err != nil {
			t.Fatal(err)
		}
		var head struct {
			ID       json.Number `json:"id"`
			ObjectID string      `json:"objectID"`
		}
		if err := json.Unmarshal(p[field], &head); err != nil {
			t.Fatal(err)
		}
		idText := head.ObjectID
		if idText == "" {
			idText = head.ID.String()
		}
		id, ok := parseID(idText)
		if !ok {
			t.Fatalf("payload %d: id %q", i, idText)
		}
		want := IDPrefix + idText
		if (e.Seen != nil && e.Seen.ID != want) || (e.Seen == nil && e.ID != want) {
			t.Fatalf("payload %d (%s) and its expectation do not match", i, want)
		}
		out[i] = recorded{raw: p[field], id: id, seen: e.Seen, skip: e.Skip, match: e.Match}
	}
	return out
}

// query is a query matching every kept sample.
func query(samples []recorded) string {
	var words []string
	for _, s := range samples {
		if s.seen != nil && !slices.Contains(words, s.match) {
			words = append(words, s.match)
		}
	}
	return strings.Join(words, " OR ")
}

func seenOf(it source.Item) spawntest.Seen {
	return spawntest.SeenOf(api.Comment{ID: it.ID, Author: it.Author, AuthorID: it.AuthorID, Text: it.Text, URL: it.URL,
		Lang: it.Lang, PublishedAt: it.PublishedAt, ReplyTo: it.ReplyTo, ThreadID: it.ThreadID, Links: it.Links, RepostOf: it.RepostOf})
}

// TestConformance_RecordedItemsThroughASpawn walks recorded Hacker News
// items (a story's thread as the API answered it, a deleted and a dead
// comment among them) into a real spawn's file store: a crawler moved
// here with a cursor just before the thread's comments has its gap walked,
// and every field a user sees of each stored comment is what the payload
// says.
func TestConformance_RecordedItemsThroughASpawn(t *testing.T) {
	samples := readRecorded(t, "items.jsonl", "expected-items.jsonl", "item")
	hn := fake.Start(t, fake.Options{})
	for _, s := range samples {
		if _, err := hn.AddRaw(s.raw); err != nil {
			t.Fatal(err)
		}
	}
	const first, last = 47366582, 47367734 // the thread's recorded comments
	var want []spawntest.Seen
	var inRange []recorded
	for _, s := range samples {
		if s.id < first || s.id > last {
			continue
		}
		inRange = append(inRange, s)
		if s.seen != nil {
			want = append(want, *s.seen)
		}
	}
	if len(want) < 10 || len(inRange) == len(want) {
		t.Fatalf("%d comments to keep of %d: the thread should keep most and skip some", len(want), len(inRange))
	}
	// Hacker News's ids are dense: the ids between the recorded ones are
	// other people's comments, which the crawler's query does not match.
	var others []fake.Item
	for id := int64(first); id <= last; id++ {
		if !slices.ContainsFunc(inRange, func(s recorded) bool { return s.id == id }) {
			others = append(others, fake.Item{ID: id, Type: "comment", By: "someone", Parent: 47336100, Text: "zzz", Time: 1773419570})
		}
	}
	hn.Add(others...)
	opts := fastOptions(t, hn.URL())
	opts.RequestsPerSecond, opts.Concurrency, opts.Window = 20000, 16, 512
	kind, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	node := spawntest.StartFileNode(t, Name, kind)
	spec := spawntest.Spec(Name, 1, nil, query(inRange))
	spec.Cursor = &api.Cursor{PublishedAt: time.Unix(1773419000, 0).UTC(), Sources: map[string]string{Key: "47366581"}}
	spawntest.Subscribe(t, node.Node, spec)
	node.WaitSeen(t, 1, want)
}

// TestConformance_RecordedItemsMapping hands every recorded item (the API
// documentation's examples of each type, and the recorded thread) over
// through the walk's own path, parents read from the local server, and
// compares what a user sees of each.
func TestConformance_RecordedItemsMapping(t *testing.T) {
	samples := readRecorded(t, "items.jsonl", "expected-items.jsonl", "item")
	hn := fake.Start(t, fake.Options{})
	for _, s := range samples {
		if _, err := hn.AddRaw(s.raw); err != nil {
			t.Fatal(err)
		}
	}
	k, err := New(fastOptions(t, hn.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := k.New(Key)
	src := ds.(*Source)
	rec := &spawntest.Recorder{}
	wrong := 0
	for _, s := range samples {
		w, err := decodeItem(s.raw)
		if err != nil || w == nil {
			t.Fatalf("%d: %v", s.id, err)
		}
		before := len(rec.All())
		if err := src.hand(context.Background(), []*wireItem{w}, "", rec.Emit); err != nil {
			t.Fatal(err)
		}
		got := rec.All()[before:]
		if s.seen == nil {
			if len(got) != 0 {
				t.Errorf("%d (%s) handed over", s.id, s.skip)
				wrong++
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%d: %d items handed over", s.id, len(got))
			wrong++
			continue
		}
		spawntest.CompareSeen(t, []api.Comment{comment(got[0])}, []spawntest.Seen{*s.seen})
	}
	if wrong > 0 || t.Failed() {
		t.Errorf("%d of %d recorded items wrong", wrong, len(samples))
	}
}

func comment(it source.Item) api.Comment {
	return api.Comment{ID: it.ID, Author: it.Author, AuthorID: it.AuthorID, Text: it.Text, URL: it.URL, Lang: it.Lang,
		PublishedAt: it.PublishedAt, ReplyTo: it.ReplyTo, ThreadID: it.ThreadID, Links: it.Links, RepostOf: it.RepostOf}
}

// TestConformance_RecordedSearchHitsThroughASpawn fills a long gap from
// recorded search hits (comments with entities and a link, front-page
// stories) into a real spawn's file store and compares every field.
func TestConformance_RecordedSearchHitsThroughASpawn(t *testing.T) {
	samples := readRecorded(t, "hits.jsonl", "expected-hits.jsonl", "hit")
	hn := fake.Start(t, fake.Options{})
	var want []spawntest.Seen
	newest := int64(0)
	for _, s := range samples {
		if err := hn.AddHit(s.raw); err != nil {
			t.Fatal(err)
		}
		want = append(want, *s.seen)
		newest = max(newest, s.id)
	}
	hn.SetMaxItem(newest + 1)
	kind, err := New(fastOptions(t, hn.URL()))
	if err != nil {
		t.Fatal(err)
	}
	node := spawntest.StartFileNode(t, Name, kind)
	spec := spawntest.Spec(Name, 1, nil, query(samples))
	spec.Cursor = &api.Cursor{PublishedAt: time.Date(2022, 2, 4, 1, 0, 0, 0, time.UTC), Sources: map[string]string{Key: "30000000"}}
	spawntest.Subscribe(t, node.Node, spec)
	node.WaitSeen(t, 1, want)
	if hn.Requests(fake.EndpointSearch) == 0 {
		t.Error("the gap was not read from the search API")
	}
}

// TestPolling_SizedToTheRecordedItemRate measures the item rate from the
// recorded payloads (ids are handed out in time order from one counter, so
// ids per second between two items is the site's item rate) and checks
// the defaults against it, four times over for a busy hour: one poll's new
// ids fit the read-ahead window, and the request rate keeps the walk far
// ahead (docs/sources/hackernews.md, "Item rate").
func TestPolling_SizedToTheRecordedItemRate(t *testing.T) {
	samples := readRecorded(t, "items.jsonl", "expected-items.jsonl", "item")
	type point struct{ id, at int64 }
	var pts []point
	for _, s := range samples {
		var w struct {
			ID   int64 `json:"id"`
			Time int64 `json:"time"`
		}
		if err := json.Unmarshal(s.raw, &w); err != nil {
			t.Fatal(err)
		}
		pts = append(pts, point{w.ID, w.Time})
	}
	rate := func(a, b point) float64 { return float64(b.id-a.id) / float64(b.at-a.at) }
	slices.SortFunc(pts, func(a, b point) int { return cmpInt(a.id, b.id) })
	// The recorded thread's comments: the last span of ids recorded within
	// one afternoon.
	var thread []point
	for _, p := range pts {
		if p.id >= 47366582 {
			thread = append(thread, p)
		}
	}
	recent := rate(thread[0], thread[len(thread)-1])
	longRun := rate(pts[1], pts[len(pts)-1]) // 2008 to 2026
	t.Logf("items a second: %.3f over %d recorded ids of 2026-03-13 (%d s); %.3f on average from 2008 to 2026",
		recent, thread[len(thread)-1].id-thread[0].id, thread[len(thread)-1].at-thread[0].at, longRun)
	if recent < 0.05 || recent > 2 || longRun > recent {
		t.Fatalf("implausible rates %.3f and %.3f: the recorded data is not what it should be", recent, longRun)
	}
	const busy = 4 // a busy hour against the afternoon measured
	perPoll := recent * busy * DefaultPollInterval.Seconds()
	if perPoll > DefaultWindow {
		t.Errorf("a poll finds %.1f new ids at a busy hour, more than the window of %d", perPoll, DefaultWindow)
	}
	if need := recent * busy * 10; DefaultRequestsPerSecond < need {
		t.Errorf("%d requests a second is not ten times a busy hour's %.2f items a second", DefaultRequestsPerSecond, recent*busy)
	}
}
