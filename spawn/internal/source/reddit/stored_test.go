package reddit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/reddit"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// TestStored_GoneThingsAreReported hands the kind the ids of stored things,
// as the hub's compliance loop does through the spawn: those their author
// deleted or a moderator removed since are reported gone, the others (and
// ids Reddit does not know, or of another kind) are not; 100 ids go in one
// /api/info request.
func TestStored_GoneThingsAreReported(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	k := newKind(t, fastOptions(t, rd.URL()))
	post := rd.Post(fake.PostSpec{Subreddit: "golang", Author: "op", Title: "a thread", Selftext: "body"})
	var ids []string
	for i := range 150 {
		ids = append(ids, IDPrefix+rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "c" + strconv.Itoa(i), Link: post}))
	}
	ids = append(ids, IDPrefix+post, IDPrefix+"t1_zzzzzzz", "tw:12345", IDPrefix+"t5_2qh1i")
	deleted, removed := strings.TrimPrefix(ids[3], IDPrefix), strings.TrimPrefix(ids[140], IDPrefix)
	rd.Delete(deleted)
	rd.Remove(removed)
	rd.Remove(post)

	checked, err := k.Recheck(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{IDPrefix + deleted, IDPrefix + removed, IDPrefix + post}
	if got := slices.Collect(maps.Keys(checked.Gone)); !sameSet(got, want) || checked.Status != StoredComplete {
		t.Errorf("gone %v (%s), want %v", got, checked.Status, want)
	}
	info := 0
	for _, r := range rd.Requests() {
		if r.Path == infoPath {
			info++
			if n := strings.Count(r.Query, "t1_") + strings.Count(r.Query, "t3_"); n > maxInfoIDs {
				t.Errorf("one request asked for %d things", n)
			}
		}
	}
	if info != 2 {
		t.Errorf("%d /api/info requests for 152 things, want 2", info)
	}
}

// TestStored_OneRunReadsTheNewestStoredMax: with more stored things than
// one run reads, it reads the newest (half comments, half posts, a share
// one kind leaves going to the other), says so, and leaves the rest.
func TestStored_OneRunReadsTheNewestStoredMax(t *testing.T) {
	rd := startReddit(t, fake.Options{})
	opts := fastOptions(t, rd.URL())
	opts.StoredMax = 4
	k := newKind(t, opts)
	post := rd.Post(fake.PostSpec{Subreddit: "golang", Author: "op", Title: "thread"})
	var comments []string
	for i := range 6 {
		comments = append(comments, rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: fmt.Sprint(i), Link: post}))
	}
	for _, c := range comments {
		rd.Delete(c)
	}
	ids := []string{IDPrefix + post}
	for _, c := range comments {
		ids = append(ids, IDPrefix+c)
	}
	slices.Reverse(ids) // the order of the store's export says nothing
	checked, err := k.Recheck(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{IDPrefix + comments[3], IDPrefix + comments[4], IDPrefix + comments[5]}
	if got := slices.Collect(maps.Keys(checked.Gone)); !sameSet(got, want) || checked.Status != StoredPartial {
		t.Errorf("gone %v (%s), want the 3 newest comments %v, partial", got, checked.Status, want)
	}
	asked := ""
	for _, r := range rd.Requests() {
		if r.Path == infoPath {
			asked += r.Query
		}
	}
	if !strings.Contains(asked, post) || strings.Contains(asked, comments[2]) {
		t.Errorf("asked %s: want the post and the 3 newest comments only", asked)
	}
}

func TestStored_NewestNamesSharesTheBound(t *testing.T) {
	ids := func(kind string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, IDPrefix+kind+"_"+strconv.FormatInt(int64(1000+i), 36))
		}
		return out
	}
	cases := []struct {
		comments, posts, limit, wantC, wantP int
	}{
		{comments: 10, posts: 10, limit: 6, wantC: 3, wantP: 3},
		{comments: 10, posts: 1, limit: 6, wantC: 5, wantP: 1},
		{comments: 1, posts: 10, limit: 6, wantC: 1, wantP: 5},
		{comments: 2, posts: 2, limit: 6, wantC: 2, wantP: 2},
		{comments: 7, posts: 0, limit: 6, wantC: 6, wantP: 0},
	}
	for _, c := range cases {
		all := append(ids(kindComment, c.comments), ids(kindPost, c.posts)...)
		all = append(all, all[0], "tw:1", IDPrefix+"t2_abc", IDPrefix+"t1_")
		names, skipped := newestNames(all, c.limit)
		gotC, gotP := 0, 0
		for _, n := range names {
			if strings.HasPrefix(n, kindComment) {
				gotC++
			} else {
				gotP++
			}
		}
		if gotC != c.wantC || gotP != c.wantP || skipped != c.comments+c.posts-c.wantC-c.wantP {
			t.Errorf("%+v: %d comments, %d posts, %d left out", c, gotC, gotP, skipped)
		}
		if c.comments > c.wantC && c.wantC > 0 && names[0] != strings.TrimPrefix(ids(kindComment, c.comments)[c.comments-1], IDPrefix) {
			t.Errorf("%+v: first %s, want the newest comment", c, names[0])
		}
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// clock is a settable time for the local Reddit's creation times.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// TestPoll_CursorWithoutAThingReadsBackToItsTime: a subscriber whose
// cursor names no thing of the listing but a time (a new crawler's
// creation, or a crawler that stored nothing from this listing) has what
// was created since read back: on the listing's first poll, and for its
// query alone when the listing already runs.
func TestPoll_CursorWithoutAThingReadsBackToItsTime(t *testing.T) {
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	clk := &clock{t: base}
	rd := startReddit(t, fake.Options{Now: clk.now})
	k := newKind(t, fastOptions(t, rd.URL()))
	kc := key("golang", listingComments)
	add := func(at time.Time, n int) []string {
		clk.set(at)
		var out []string
		for i := range n {
			out = append(out, IDPrefix+rd.Comment(fake.CommentSpec{Subreddit: "golang", Author: "a", Body: "c" + strconv.Itoa(i), Link: "t3_abc"}))
		}
		return out
	}
	old := add(base, 3)
	recent := add(base.Add(10*time.Minute), 3)
	created := base.Add(5 * time.Minute) // the crawler was created between
	first := cursorSpec(1, "reddit:other:comments", 1, "subreddit:golang")
	first.Cursor.PublishedAt = created
	src, rec, _ := run(t, k, kc, first)
	testkit.WaitFor(t, wait, "the things since the crawler's creation", func() bool { return len(rec.All()) >= len(recent) })
	if got := itemIDs(rec.All()); !slices.Equal(got, recent) {
		t.Fatalf("first poll handed over %v, want %v (not the older %v)", got, recent, old)
	}

	// The listing runs; then a crawler arrives whose cursor is a time
	// after the things so far: what came since is read back for it.
	later := add(base.Add(20*time.Minute), 2)
	testkit.WaitFor(t, wait, "live things", func() bool { return len(rec.All()) == len(recent)+len(later) })
	arriving := cursorSpec(2, "reddit:other:comments", 1, "subreddit:golang iterators")
	arriving.Cursor.PublishedAt = base.Add(15 * time.Minute)
	src.SetSubscribers(spawntest.Subs(t, first, arriving))
	testkit.WaitFor(t, wait, "the arriving crawler's gap", func() bool { return len(rec.All()) >= len(recent)+2*len(later) })
	gap := rec.All()[len(recent)+len(later):]
	if got := itemIDs(gap); !slices.Equal(got, later) {
		t.Errorf("gap %v, want %v", got, later)
	}
	for _, it := range gap {
		if it.QueryUUID != arriving.QueryUUID {
			t.Errorf("gap thing %s for query %q, want %q", it.ID, it.QueryUUID, arriving.QueryUUID)
		}
	}
}
