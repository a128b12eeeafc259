package reddit

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/reddit"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

const (
	wait     = 10 * time.Second
	clientID = "p-jcoLKBynTLew"
	secret   = "gko_LXELoV07ZBNUXrvWZfzE3aI"
)

func formatDecimal(n int64) string { return strconv.FormatInt(n, 10) }

func idOf(t *testing.T, fullname string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(fullname[3:], 36, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func startReddit(t *testing.T, opts fake.Options) *fake.Server {
	if opts.ClientID == "" {
		opts.ClientID, opts.ClientSecret = clientID, secret
	}
	if opts.Allowance == 0 {
		// Reddit's window spreads the requests left over what is left of
		// it (600 s, 1000 requests: 0.6 s apart); these tests' spawns
		// poll faster, within a window that allows it.
		opts.Allowance, opts.Window = 1_000_000, time.Second
	}
	return fake.Start(t, opts)
}

// fastOptions are the kind's options against a local Reddit, with short,
// scaled timers. Call it after starting the server: its connections are
// closed before the server stops.
func fastOptions(t *testing.T, url string) Options {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return Options{
		ClientID: clientID, ClientSecret: secret, UserAgent: goodUA, APIURL: url, AuthURL: url,
		Client:            &http.Client{Timeout: wait, Transport: tr},
		RequestsPerMinute: 6000,
		MinInterval:       20 * time.Millisecond, StartInterval: 20 * time.Millisecond, MaxInterval: 80 * time.Millisecond,
		Recheck: 50 * time.Millisecond, RecheckFor: time.Hour,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond, AuthBackoff: 50 * time.Millisecond,
		RateLimitWait: 100 * time.Millisecond, Logger: testkit.Logger(t, "reddit"),
	}
}

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

// run starts the data source of key until the test ends and waits for its
// first poll.
func run(t *testing.T, k *Kind, key string, specs ...api.SubscriberSpec) (*Source, *spawntest.Recorder, *retractionLog) {
	t.Helper()
	ds, err := k.New(key)
	if err != nil {
		t.Fatal(err)
	}
	src := ds.(*Source)
	log := &retractionLog{}
	src.Retractions(log.add)
	src.SetSubscribers(spawntest.Subs(t, specs...))
	rec := &spawntest.Recorder{}
	spawntest.Run(t, src, rec.Emit)
	testkit.WaitFor(t, wait, "first poll", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.polled
	})
	return src, rec, log
}

func newKind(t *testing.T, opts Options) *Kind {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func itemIDs(items []source.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func TestPoll_NewListingStartsNowThenMissesNothing(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	post := rd.Post(fake.PostSpec{Subreddit: "golang", Author: "a", Title: "thread"})
	before := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "old", Body: "before the crawler", Link: post})
	k := newKind(t, fastOptions(t, rd.URL()))
	_, rec, _ := run(t, k, key("golang", listingComments))

	// A burst of two and a half pages between two polls.
	burst := make([]fake.CommentSpec, 250)
	for i := range burst {
		burst[i] = fake.CommentSpec{Subreddit: "golang", Author: "gopher", Body: "c" + strconv.Itoa(i), Link: post}
	}
	var want []string
	for _, name := range rd.Comments(burst...) {
		want = append(want, IDPrefix+name)
	}
	testkit.WaitFor(t, wait, "the burst", func() bool { return len(rec.All()) >= len(want) })
	if got := itemIDs(rec.All()); !slices.Equal(got, want) {
		t.Errorf("handed over %d things (first %v), want the %d new ones once each, oldest first", len(got), got[:min(3, len(got))], len(want))
	}
	if rec.Count(IDPrefix+before) != 0 {
		t.Error("a comment from before the listing started was handed over")
	}
	paged := 0
	for _, r := range rd.Requests() {
		if strings.Contains(r.Query, "after=") {
			paged++
		}
		if r.Path == "/r/golang/comments" && !strings.Contains(r.Query, "raw_json=1") {
			t.Errorf("a listing read without raw_json=1: %s", r.Query)
		}
	}
	if paged < 2 {
		t.Errorf("%d pages read back with after=, want at least 2", paged)
	}
}

func TestPoll_RawJSONKeepsTheTextAsWritten(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	_, rec, _ := run(t, k, key("golang", listingComments))
	body := "> quoted\n\nif a < b && b > c { fmt.Println(\"&amp; stays\") }"
	name := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: body, Link: "t3_abc"})
	testkit.WaitFor(t, wait, "the comment", func() bool { return rec.Has(IDPrefix + name) })
	if it, _ := rec.ByID(IDPrefix + name); it.Text != body {
		t.Errorf("text %q, want %q", it.Text, body)
	}
}

func TestPoll_DeletedNewestThingChangesNothing(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	_, rec, _ := run(t, k, key("golang", listingComments))
	first := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "one", Link: "t3_abc"})
	testkit.WaitFor(t, wait, "the first", func() bool { return rec.Has(IDPrefix + first) })
	rd.Delete(first) // a before= anchor on it would now read nothing
	second := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "b", Body: "two", Link: "t3_abc"})
	testkit.WaitFor(t, wait, "the second", func() bool { return rec.Has(IDPrefix + second) })
}

func TestPoll_MovedCrawlerReadsBackToItsCursor(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	var names []string
	for i := range 30 {
		names = append(names, rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "c" + strconv.Itoa(i), Link: "t3_abc"}))
	}
	k := newKind(t, fastOptions(t, rd.URL()))
	kc := key("golang", listingComments)
	spec := cursorSpec(5, kc, idOf(t, names[9]), "subreddit:golang")
	_, rec, _ := run(t, k, kc, spec)
	var want []string
	for _, n := range names[10:] {
		want = append(want, IDPrefix+n)
	}
	testkit.WaitFor(t, wait, "the gap", func() bool { return len(rec.All()) >= len(want) })
	if got := itemIDs(rec.All()); !slices.Equal(got, want) {
		t.Errorf("handed over %v, want %v", got, want)
	}
}

func TestPoll_CursorArrivingLaterIsFilledForItsQuery(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	kc := key("golang", listingComments)
	other := spawntest.Spec(Name, 1, nil, "subreddit:golang")
	src, rec, _ := run(t, k, kc, other)
	var names []string
	for i := range 5 {
		names = append(names, rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "c" + strconv.Itoa(i), Link: "t3_abc"}))
	}
	testkit.WaitFor(t, wait, "live things", func() bool { return len(rec.All()) == 5 })
	moved := cursorSpec(2, kc, idOf(t, names[1]), "subreddit:golang iterators")
	src.SetSubscribers(spawntest.Subs(t, other, moved))
	testkit.WaitFor(t, wait, "the gap", func() bool { return len(rec.All()) == 8 })
	for _, it := range rec.All()[5:] {
		if it.QueryUUID != moved.QueryUUID {
			t.Errorf("gap thing %s for query %q, want %q", it.ID, it.QueryUUID, moved.QueryUUID)
		}
	}
	if got := itemIDs(rec.All()[5:]); !slices.Equal(got, []string{IDPrefix + names[2], IDPrefix + names[3], IDPrefix + names[4]}) {
		t.Errorf("gap %v", got)
	}
}

func TestPoll_ListingFasterThanItsReachIsCounted(t *testing.T) {
	rd := startReddit(t, fake.Options{ListingCap: 250})
	opts := fastOptions(t, rd.URL())
	opts.MaxPages = 2
	opts.MinInterval, opts.StartInterval, opts.MaxInterval = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	k := newKind(t, opts)
	src, rec, _ := run(t, k, key("golang", listingComments))
	first := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "seen", Link: "t3_abc"})
	testkit.WaitFor(t, wait, "a first thing", func() bool { return rec.Has(IDPrefix + first) })
	for i := range 400 {
		rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "c" + strconv.Itoa(i), Link: "t3_abc"})
	}
	testkit.WaitFor(t, wait, "the pages reached", func() bool { return len(rec.All()) >= 1+2*pageSize })
	if n := src.stats.overruns.Load(); n != 1 {
		t.Errorf("%d overruns counted, want 1", n)
	}
	if got := len(rec.All()); got != 1+2*pageSize {
		t.Errorf("handed over %d, want the first and the %d the pages reached", got, 2*pageSize)
	}
}

func TestRecheck_DeletedRemovedAndEditedAreTakenBack(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	_, rec, log := run(t, k, key("golang", listingComments))
	del := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "to delete", Link: "t3_abc"})
	rem := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "b", Body: "to remove", Link: "t3_abc"})
	edit := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "c", Body: "to edit", Link: "t3_abc"})
	keep := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "d", Body: "kept", Link: "t3_abc"})
	testkit.WaitFor(t, wait, "things", func() bool { return len(rec.All()) == 4 })
	rd.Delete(del)
	rd.Remove(rem)
	rd.Edit(edit, "edited: https://go.dev/")
	testkit.WaitFor(t, wait, "retractions", func() bool {
		_, a := log.find(api.RetractDelete, IDPrefix+del)
		_, b := log.find(api.RetractDelete, IDPrefix+rem)
		_, c := log.find(api.RetractUpdate, IDPrefix+edit)
		return a && b && c
	})
	up, _ := log.find(api.RetractUpdate, IDPrefix+edit)
	if up.Text != "edited: https://go.dev/" || !slices.Equal(up.Links, []string{"https://go.dev/"}) || up.EditedAt.IsZero() || up.Source != Name {
		t.Errorf("update %+v", up)
	}
	if _, ok := log.find(api.RetractDelete, IDPrefix+keep); ok {
		t.Error("a kept comment was taken back")
	}
	info := 0
	for _, r := range rd.Requests() {
		if strings.HasPrefix(r.Path, "/api/info") {
			info++
			if !strings.Contains(r.Query, "raw_json=1") {
				t.Errorf("/api/info read without raw_json=1")
			}
		}
	}
	if info == 0 {
		t.Error("nothing was re-checked through /api/info")
	}
}

func TestCredentials_WrongSecretFailsTheCrawlersSayingSo(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	opts := fastOptions(t, rd.URL())
	opts.ClientSecret = "not-the-secret"
	k := newKind(t, opts)
	ds, err := k.New(key("golang", listingComments))
	if err != nil {
		t.Fatal(err)
	}
	rec := &spawntest.Recorder{}
	spawntest.Run(t, ds, rec.Emit)
	testkit.WaitFor(t, wait, "the refusal", func() bool { return ds.Err() != nil })
	err = ds.Err()
	if !errors.Is(err, ErrCredentialsRefused) || errors.Is(err, source.ErrDegraded) {
		t.Errorf("err %v: want a lasting ErrCredentialsRefused", err)
	}
	for _, want := range []string{"401", "BW_REDDIT_CLIENT_SECRET"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	tokens := 0
	for _, r := range rd.Requests() {
		if r.Path == "/api/v1/access_token" {
			tokens++
		}
	}
	if tokens == 0 {
		t.Error("no token request")
	}
}

func TestCredentials_ExpiredTokenIsReplaced(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	src, rec, _ := run(t, k, key("golang", listingComments))
	rd.ExpireTokens()
	name := rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "after expiry", Link: "t3_abc"})
	testkit.WaitFor(t, wait, "the comment", func() bool { return rec.Has(IDPrefix + name) })
	if src.Err() != nil {
		t.Errorf("err %v after a replaced token", src.Err())
	}
}

func TestBudget_TheSpawnStaysWithinItsRequestsPerMinute(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	opts := fastOptions(t, rd.URL())
	opts.RequestsPerMinute = 600 // ten a second, the test's "minute" is a second
	opts.MinInterval, opts.StartInterval, opts.MaxInterval = time.Millisecond, time.Millisecond, time.Millisecond
	k := newKind(t, opts)
	for _, sub := range []string{"golang", "rust", "python", "java"} {
		for _, l := range []string{listingComments, listingNew} {
			run(t, k, key(sub, l))
		}
	}
	testkit.WaitFor(t, wait, "three seconds of polling", func() bool { return len(rd.Requests()) >= 30 })
	// Turns are at least 100 ms apart: ten span 900 ms at the least, so
	// no 900 ms hold more than ten however late each arrives (up to a
	// turn late, on a loaded machine), while eleven a second would put
	// eleven there.
	if got := rd.MaxInWindow(900 * time.Millisecond); got > 10 {
		t.Errorf("%d requests within 900 ms, want at most 10", got)
	}
	if got := rd.MaxInWindow(time.Second); got < 8 {
		t.Errorf("only %d requests within a second: the budget is not used", got)
	}
}

func TestBudget_HonoursRatelimitHeaders(t *testing.T) {
	// Reddit's window, scaled: 12 requests in 1.5 s, while the spawn would
	// send 100 a second.
	rd := startReddit(t, fake.Options{Allowance: 12, Window: 1500 * time.Millisecond})
	opts := fastOptions(t, rd.URL())
	opts.MinInterval, opts.StartInterval, opts.MaxInterval = time.Millisecond, time.Millisecond, time.Millisecond
	k := newKind(t, opts)
	run(t, k, key("golang", listingComments))
	run(t, k, key("golang", listingNew))
	testkit.WaitFor(t, wait, "three windows", func() bool { return len(rd.Requests()) >= 36 })
	for _, r := range rd.Requests() {
		if r.Status == http.StatusTooManyRequests {
			t.Fatalf("a request at %s got 429: the headers were not honoured", r.At.Format(time.StampMilli))
		}
	}
}

func TestBudget_429StopsEveryRequestUntilRetryAfter(t *testing.T) {
	k := newKind(t, fastOptions(t, "http://127.0.0.1:1"))
	b := k.client.budget
	h := http.Header{}
	h.Set("Retry-After", "1")
	b.observe(h, http.StatusTooManyRequests)
	start := time.Now()
	if err := b.take(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("a request went out %s after a 429 with retry-after 1", waited)
	}
}
