package hackernews

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/hackernews"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// fastOptions are the source's options against a local server, with
// short, scaled timers.
func fastOptions(t *testing.T, url string) Options {
	return Options{
		APIURL: url, SearchURL: url,
		Client:       &http.Client{Timeout: wait, Transport: &http.Transport{MaxIdleConnsPerHost: 32}},
		PollInterval: 20 * time.Millisecond, UpdatesInterval: 40 * time.Millisecond, UpdateRecheck: time.Millisecond,
		RequestsPerSecond: 1000, Concurrency: 8,
		NullRetryMin: 10 * time.Millisecond, NullRetryMax: 40 * time.Millisecond, NullGiveUp: 300 * time.Millisecond,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		Logger: testkit.Logger(t, "hackernews"),
	}
}

// retractionLog collects what a source takes back.
type retractionLog struct {
	mu  sync.Mutex
	all []api.Retraction
}

func (l *retractionLog) add(rs []api.Retraction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, rs...)
}

func (l *retractionLog) find(op, id string) (api.Retraction, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.all {
		if r.Op == op && r.ID == id {
			return r, true
		}
	}
	return api.Retraction{}, false
}

// start runs the source until the test ends and waits until its walk has
// read maxitem.
func start(t *testing.T, opts Options, specs ...api.SubscriberSpec) (*Source, *spawntest.Recorder, *retractionLog) {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := k.New(Key)
	if err != nil {
		t.Fatal(err)
	}
	src := ds.(*Source)
	log := &retractionLog{}
	src.Retractions(log.add)
	src.SetSubscribers(spawntest.Subs(t, specs...))
	rec := &spawntest.Recorder{}
	spawntest.Run(t, src, rec.Emit)
	testkit.WaitFor(t, wait, "walk start", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.startID > 0
	})
	return src, rec, log
}

func hnID(id int64) string { return commentID(id) }

func ids(items []source.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func skipped(src *Source, reason string) int64 {
	src.stats.mu.Lock()
	defer src.stats.mu.Unlock()
	return src.stats.skipped[reason]
}

func TestWalk_HandsOverEveryNewItemInOrderWithItsThread(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	old := hn.Add(fake.Item{Type: "story", By: "pg", Title: "Old story", URL: fake.URLOf("https://old.example/")})[0]
	_, rec, _ := start(t, fastOptions(t, hn.URL()))

	story := hn.Add(fake.Item{Type: "story", By: "a", Title: "New story", Text: "body"})[0]
	c1 := hn.Add(fake.Item{Type: "comment", By: "b", Parent: story, Text: "first"})[0]
	c2 := hn.Add(fake.Item{Type: "comment", By: "c", Parent: c1, Text: "reply"})[0]
	c3 := hn.Add(fake.Item{Type: "comment", By: "d", Parent: old, Text: "on an old story"})[0]
	want := []string{hnID(story), hnID(c1), hnID(c2), hnID(c3)}
	testkit.WaitFor(t, wait, "four items", func() bool { return len(rec.All()) >= 4 })
	got := rec.All()
	if !slices.Equal(ids(got), want) {
		t.Fatalf("handed over %v, want %v", ids(got), want)
	}
	threads := map[string][2]string{
		hnID(story): {"", ""},
		hnID(c1):    {hnID(story), hnID(story)},
		hnID(c2):    {hnID(c1), hnID(story)},
		hnID(c3):    {hnID(old), hnID(old)}, // the old story is read to find it
	}
	for _, it := range got {
		if w := threads[it.ID]; it.ReplyTo != w[0] || it.ThreadID != w[1] {
			t.Errorf("%s: reply_to %q thread_id %q, want %q %q", it.ID, it.ReplyTo, it.ThreadID, w[0], w[1])
		}
		if it.QueryUUID != "" {
			t.Errorf("%s: live item for query %q", it.ID, it.QueryUUID)
		}
	}
	if n := hn.ItemRequests(old); n != 1 {
		t.Errorf("old story read %d times, want once (then remembered)", n)
	}
}

func TestWalk_NullItemIsRetriedAndHoldsTheLaterOnesBack(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	opts := fastOptions(t, hn.URL())
	opts.NullGiveUp = wait
	_, rec, _ := start(t, opts)

	first := hn.Add(fake.Item{Type: "story", By: "a", Title: "slow to show"})[0]
	hn.NullFor(first, 4)
	second := hn.Add(fake.Item{Type: "story", By: "b", Title: "right behind"})[0]
	testkit.WaitFor(t, wait, "both items", func() bool { return rec.Has(hnID(first), hnID(second)) })
	if got := ids(rec.All()); !slices.Equal(got, []string{hnID(first), hnID(second)}) {
		t.Errorf("handed over %v: the null item must come first", got)
	}
	if n := hn.ItemRequests(first); n < 5 {
		t.Errorf("null item read %d times, want its 4 nulls and a read", n)
	}
}

func TestWalk_ItemNullForGoodIsPassedAfterGiveUp(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	src, rec, _ := start(t, fastOptions(t, hn.URL()))

	lost := hn.Add(fake.Item{Type: "story", By: "a", Title: "never readable"})[0]
	hn.NullFor(lost, -1)
	next := hn.Add(fake.Item{Type: "story", By: "b", Title: "after it"})[0]
	took := testkit.WaitFor(t, wait, "the item after", func() bool { return rec.Has(hnID(next)) })
	if rec.Count(hnID(lost)) != 0 {
		t.Error("a null item was handed over")
	}
	if took < 250*time.Millisecond {
		t.Errorf("the walk passed the null item after %s, before NullGiveUp", took)
	}
	if n := skipped(src, reasonNull); n != 1 {
		t.Errorf("null items skipped %d, want 1", n)
	}
}

func TestWalk_DeletedAndDeadItemsAreNotHandedOver(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	src, rec, _ := start(t, fastOptions(t, hn.URL()))
	story := hn.Add(fake.Item{Type: "story", By: "a", Title: "s"})[0]
	gone := hn.Add(fake.Item{Type: "comment", By: "b", Parent: story, Text: "soon gone"})[0]
	hn.Delete(gone)
	dead := hn.Add(fake.Item{Type: "comment", By: "c", Parent: story, Text: "[flagged]", Dead: true})[0]
	after := hn.Add(fake.Item{Type: "comment", By: "d", Parent: gone, Text: "reply to a deleted one"})[0]
	testkit.WaitFor(t, wait, "the last item", func() bool { return rec.Has(hnID(after)) })
	if rec.Count(hnID(gone))+rec.Count(hnID(dead)) != 0 {
		t.Errorf("handed over %v", ids(rec.All()))
	}
	if it, _ := rec.ByID(hnID(after)); it.ThreadID != hnID(story) {
		t.Errorf("reply under a deleted comment: thread %q, want %q", it.ThreadID, hnID(story))
	}
	if skipped(src, reasonDeleted) != 1 || skipped(src, reasonDead) != 1 {
		t.Errorf("skipped deleted %d dead %d, want 1 and 1", skipped(src, reasonDeleted), skipped(src, reasonDead))
	}
}

func TestUpdates_DeletionsDeadItemsAndEditsAreTakenBack(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	_, rec, log := start(t, fastOptions(t, hn.URL()))
	story := hn.Add(fake.Item{Type: "story", By: "a", Title: "s"})[0]
	del := hn.Add(fake.Item{Type: "comment", By: "b", Parent: story, Text: "to delete"})[0]
	kill := hn.Add(fake.Item{Type: "comment", By: "c", Parent: story, Text: "to kill"})[0]
	edit := hn.Add(fake.Item{Type: "comment", By: "d", Parent: story, Text: "to edit"})[0]
	same := hn.Add(fake.Item{Type: "comment", By: "e", Parent: story, Text: "gets a reply only"})[0]
	testkit.WaitFor(t, wait, "items", func() bool { return rec.Has(hnID(del), hnID(kill), hnID(edit), hnID(same)) })

	hn.Delete(del)
	hn.Kill(kill)
	hn.Edit(edit, `edited, see <a href="https:&#x2F;&#x2F;x.example&#x2F;">https:&#x2F;&#x2F;x.example&#x2F;</a>`)
	hn.Add(fake.Item{Type: "comment", By: "f", Parent: same, Text: "a reply changes the parent"})
	testkit.WaitFor(t, wait, "retractions", func() bool {
		_, a := log.find(api.RetractDelete, hnID(del))
		_, b := log.find(api.RetractDelete, hnID(kill))
		_, c := log.find(api.RetractUpdate, hnID(edit))
		return a && b && c
	})
	up, _ := log.find(api.RetractUpdate, hnID(edit))
	if up.Text != "edited, see https://x.example/" || !slices.Equal(up.Links, []string{"https://x.example/"}) ||
		up.Source != Name || up.EditedAt.IsZero() {
		t.Errorf("update %+v", up)
	}
	// The parent that only got a reply changed nothing a comment shows.
	testkit.WaitFor(t, wait, "the parent read again", func() bool { return hn.ItemRequests(same) >= 2 })
	if r, ok := log.find(api.RetractUpdate, hnID(same)); ok {
		t.Errorf("a reply made an update: %+v", r)
	}
}

// cursorSpec is a subscriber moved here whose crawler stored up to id.
func cursorSpec(crawler, id int64, at time.Time, words ...string) api.SubscriberSpec {
	spec := spawntest.Spec(Name, crawler, nil, words...)
	spec.Cursor = &api.Cursor{PublishedAt: at, Sources: map[string]string{Key: strconv.FormatInt(id, 10)}}
	return spec
}

func TestGap_ShortGapIsWalkedForItsQuery(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	base := time.Now().Add(-time.Hour).Unix()
	var before []int64
	for i := range 12 {
		before = append(before, hn.Add(fake.Item{Type: "story", By: "a", Title: "missed " + strconv.Itoa(i), Time: base + int64(i)})[0])
	}
	spec := cursorSpec(7, before[4], time.Unix(base+4, 0), "missed")
	opts := fastOptions(t, hn.URL())
	src, rec, _ := start(t, opts, spec)

	want := make([]string, 0, 7)
	for _, id := range before[5:] {
		want = append(want, hnID(id))
	}
	testkit.WaitFor(t, wait, "the gap", func() bool { return rec.Has(want...) })
	for _, it := range rec.All() {
		if it.QueryUUID != spec.QueryUUID {
			t.Errorf("%s handed over for query %q, want %q", it.ID, it.QueryUUID, spec.QueryUUID)
		}
	}
	if got := ids(rec.All()); !slices.Equal(got, want) {
		t.Errorf("gap handed over %v, want %v (in order, nothing at or before the cursor)", got, want)
	}
	if hn.Requests(fake.EndpointSearch) != 0 {
		t.Error("a short gap used the search API")
	}
	if src.stats.gapsFilled.Load() != 1 || src.stats.gapItems.Load() != 7 {
		t.Errorf("gaps %d items %d, want 1 and 7", src.stats.gapsFilled.Load(), src.stats.gapItems.Load())
	}
}

func TestGap_LongGapIsReadFromTheSearchAPI(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	base := time.Now().Add(-2 * time.Hour).Unix()
	story := hn.Add(fake.Item{Type: "story", By: "a", Title: "root", Time: base})[0]
	var comments []int64
	for i := range 30 {
		comments = append(comments, hn.Add(fake.Item{Type: "comment", By: "b", Parent: story, Text: "c" + strconv.Itoa(i), Time: base + 1 + int64(i)})[0])
	}
	spec := cursorSpec(8, story, time.Unix(base, 0), "c1")
	opts := fastOptions(t, hn.URL())
	opts.MaxWalkGap = 10
	_, rec, _ := start(t, opts, spec)
	want := make([]string, len(comments))
	for i, id := range comments {
		want[i] = hnID(id)
	}
	testkit.WaitFor(t, wait, "the gap", func() bool { return rec.Has(want...) })
	if got := ids(rec.All()); !slices.Equal(got, want) {
		t.Errorf("gap handed over %v, want %v", got, want)
	}
	if hn.Requests(fake.EndpointSearch) == 0 {
		t.Error("a long gap did not use the search API")
	}
	for _, it := range rec.All() {
		if it.ThreadID != hnID(story) || it.ReplyTo != hnID(story) || it.QueryUUID != spec.QueryUUID {
			t.Errorf("%s: thread %q reply %q query %q", it.ID, it.ThreadID, it.ReplyTo, it.QueryUUID)
		}
	}
}

func TestGap_SearchReadsPastTheThousandHitsOfOneQuery(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	base := time.Now().Add(-3 * time.Hour).Unix()
	const n = 2500
	items := make([]fake.Item, n)
	for i := range items {
		// Several items a second, so pages end within a second.
		items[i] = fake.Item{Type: "story", By: "a", Title: "s", Time: base + int64(i/3)}
	}
	added := hn.Add(items...)
	spec := cursorSpec(9, added[0]-1, time.Unix(base, 0), "s")
	opts := fastOptions(t, hn.URL())
	opts.MaxWalkGap = 10
	src, rec, _ := start(t, opts, spec)
	testkit.WaitFor(t, wait, "the gap", func() bool { return src.stats.gapsFilled.Load() == 1 })
	if got := len(rec.All()); got != n {
		t.Errorf("gap handed over %d items, want %d", got, n)
	}
	if r := hn.Requests(fake.EndpointSearch); r < 3 {
		t.Errorf("%d search requests for %d hits, want at least 3 pages", r, n)
	}
}

func TestWalk_FarBehindCatchesUpFromTheSearchAPI(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	opts := fastOptions(t, hn.URL())
	opts.MaxWalkGap = 40
	src, rec, _ := start(t, opts)
	hn.Unavailable(fake.EndpointMaxItem, 1<<30)
	testkit.WaitFor(t, wait, "the walk to miss maxitem", func() bool { return src.Err() != nil })
	items := make([]fake.Item, 100)
	for i := range items {
		items[i] = fake.Item{Type: "story", By: "a", Title: "while away"}
	}
	added := hn.Add(items...)
	hn.Unavailable(fake.EndpointMaxItem, 0)
	testkit.WaitFor(t, wait, "every item", func() bool { return len(rec.All()) >= len(added) })
	if got := len(rec.All()); got != len(added) {
		t.Errorf("handed over %d items, want %d once each", got, len(added))
	}
	if hn.Requests(fake.EndpointSearch) == 0 {
		t.Error("the walk did not read its gap from the search API")
	}
	// Only the last quarter of MaxWalkGap and the rest after the cut are
	// read one by one.
	if n := hn.ItemRequests(added[0]); n != 0 {
		t.Errorf("the first missed item was read %d times from the item API", n)
	}
	testkit.WaitFor(t, wait, "healthy", func() bool { return src.Err() == nil })
}

func TestWalk_KeepsToItsRequestRate(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	opts := fastOptions(t, hn.URL())
	opts.RequestsPerSecond = 25
	_, rec, _ := start(t, opts)
	items := make([]fake.Item, 60)
	for i := range items {
		items[i] = fake.Item{Type: "story", By: "a", Title: "burst"}
	}
	hn.Add(items...)
	testkit.WaitFor(t, wait, "the burst", func() bool { return len(rec.All()) == len(items) })
	// Requests start at least 40 ms apart: 25 in any second, and one more
	// when the second starts on a request.
	if got := hn.MaxPerSecond(); got > 26 {
		t.Errorf("%d requests within one second, want at most 26", got)
	}
}

// TestGap_ArrivingWhileTheWalkRunsIsFilledUpToIt: a crawler moved to a
// spawn whose walk already runs gets, for its query, every item after its
// cursor up to what the walk knew when it arrived (the walk hands it the
// later ones): walked, not searched.
func TestGap_ArrivingWhileTheWalkRunsIsFilledUpToIt(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	src, rec, _ := start(t, fastOptions(t, hn.URL()))
	var walked []int64
	for i := range 8 {
		walked = append(walked, hn.Add(fake.Item{Type: "story", By: "a", Title: "moved " + strconv.Itoa(i)})[0])
	}
	testkit.WaitFor(t, wait, "the live walk", func() bool { return rec.Has(hnID(walked[7])) })
	spec := cursorSpec(9, walked[2], time.Now(), "moved")
	src.SetSubscribers(spawntest.Subs(t, spec))
	var want []string
	for _, id := range walked[3:] {
		want = append(want, hnID(id))
	}
	testkit.WaitFor(t, wait, "the gap", func() bool { return len(rec.All()) >= len(walked)+len(want) })
	gap := rec.All()[len(walked):]
	if got := ids(gap); !slices.Equal(got, want) {
		t.Errorf("gap %v, want %v", got, want)
	}
	for _, it := range gap {
		if it.QueryUUID != spec.QueryUUID {
			t.Errorf("%s for query %q, want %q", it.ID, it.QueryUUID, spec.QueryUUID)
		}
	}
	if hn.Requests(fake.EndpointSearch) != 0 {
		t.Error("a short gap used the search API")
	}
}

// TestGap_NewCrawlerIsWalkedFromItsCreation: a cursor naming no item but a
// time (the hub hands a new crawler its creation time) arriving while the
// walk runs is walked from the first item the walk read at that time, not
// searched (the search index lags behind the site).
func TestGap_NewCrawlerIsWalkedFromItsCreation(t *testing.T) {
	hn := fake.Start(t, fake.Options{})
	src, rec, _ := start(t, fastOptions(t, hn.URL()))
	base := time.Now().Add(-time.Hour).Unix()
	var walked []int64
	for i := range 6 {
		walked = append(walked, hn.Add(fake.Item{Type: "story", By: "a", Title: "new " + strconv.Itoa(i), Time: base + 10*int64(i)})[0])
	}
	testkit.WaitFor(t, wait, "the live walk", func() bool { return rec.Has(hnID(walked[5])) })
	spec := spawntest.Spec(Name, 10, nil, "new")
	spec.Cursor = &api.Cursor{PublishedAt: time.Unix(base+25, 0)}
	src.SetSubscribers(spawntest.Subs(t, spec))
	want := []string{hnID(walked[3]), hnID(walked[4]), hnID(walked[5])}
	testkit.WaitFor(t, wait, "the gap", func() bool { return len(rec.All()) >= len(walked)+len(want) })
	if got := ids(rec.All()[len(walked):]); !slices.Equal(got, want) {
		t.Errorf("gap %v, want %v", got, want)
	}
	if hn.Requests(fake.EndpointSearch) != 0 {
		t.Error("the gap of a walk that reaches back to it used the search API")
	}
}
