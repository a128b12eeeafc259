package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// fakeCrawler is a crawler's search as a spawn answers it: its matches
// newest first, a page at a time, read among comments that do not match:
// gaps[i] pages of those (each stopped at the spawn's read bound, empty
// with a cursor) lie before match i. frontier tells whether its pages
// carry one.
type fakeCrawler struct {
	matches  []api.Comment
	gaps     map[int]int
	frontier bool
	reads    int
}

// page reads from a cursor "match:gaps passed".
func (f *fakeCrawler) page(q api.SearchQuery) (api.SearchPage, error) {
	f.reads++
	at, passed := 0, 0
	if q.Cursor != "" {
		if _, err := fmt.Sscanf(q.Cursor, "%d:%d", &at, &passed); err != nil || at < 0 || at > len(f.matches) || passed < 0 {
			return api.SearchPage{}, fmt.Errorf("bad cursor %q", q.Cursor)
		}
	}
	var page api.SearchPage
	end := at
	if passed < f.gaps[at] {
		page.NextCursor = fmt.Sprintf("%d:%d", at, passed+1)
	} else {
		for end < len(f.matches) && end-at < q.Limit && (end == at || f.gaps[end] == 0) {
			end++
		}
		page.Comments = slices.Clone(f.matches[at:end])
		if end < len(f.matches) {
			page.NextCursor = fmt.Sprintf("%d:0", end)
		}
	}
	page.Scanned = int64(len(page.Comments) + 1)
	if page.NextCursor != "" && f.frontier {
		t := f.matches[end].PublishedAt
		page.Frontier = &t
	}
	return page, nil
}

// fakeCrawlers are n crawlers whose matches interleave in time (each
// crawler's comments spread over the same hours), a quarter of their
// matches after pages that hold none, half the crawlers' pages with a
// frontier.
func fakeCrawlers(seed int64, n int) (map[int64]*fakeCrawler, []int64, []api.Comment) {
	rnd := rand.New(rand.NewSource(seed))
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	crawlers := map[int64]*fakeCrawler{}
	var ids []int64
	var all []api.Comment
	used := map[int64]bool{}
	for i := range n {
		id := int64(10 + 7*i)
		ids = append(ids, id)
		f := &fakeCrawler{gaps: map[int]int{}, frontier: i%2 == 0}
		count := rnd.Intn(40)
		for range count {
			ms := rnd.Int63n(int64(48 * time.Hour / time.Millisecond))
			for used[ms] {
				ms++
			}
			used[ms] = true
			f.matches = append(f.matches, api.Comment{ID: fmt.Sprintf("c%d-%d", id, ms), CrawlerID: id,
				PublishedAt: base.Add(time.Duration(ms) * time.Millisecond)})
		}
		slices.SortFunc(f.matches, func(a, b api.Comment) int { return b.PublishedAt.Compare(a.PublishedAt) })
		for at := range f.matches {
			if rnd.Intn(4) == 0 {
				f.gaps[at] = 1 + rnd.Intn(3)
			}
		}
		crawlers[id] = f
		all = append(all, f.matches...)
	}
	slices.SortFunc(all, func(a, b api.Comment) int { return b.PublishedAt.Compare(a.PublishedAt) })
	return crawlers, ids, all
}

func fetchFrom(crawlers map[int64]*fakeCrawler) pageFetcher {
	return func(_ context.Context, id int64, q api.SearchQuery) (api.SearchPage, error) {
		f, ok := crawlers[id]
		if !ok {
			return api.SearchPage{}, errors.New("unknown crawler")
		}
		return f.page(q)
	}
}

// TestMergeSearch_NewestFirstAcrossCrawlers pages through a search over
// crawlers whose comments interleave in time: every comment comes once,
// all of them newest first across the crawlers (not one crawler after
// another), whatever the page size and however the crawlers' pages are
// cut.
func TestMergeSearch_NewestFirstAcrossCrawlers(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		for _, limit := range []int{1, 3, 20} {
			crawlers, ids, want := fakeCrawlers(seed, 1+int(seed)%6)
			var got []api.Comment
			var at *mergeCursor
			for pages := 0; ; pages++ {
				if pages > 10*len(want)+100 {
					t.Fatalf("seed %d limit %d: no end after %d pages", seed, limit, pages)
				}
				page, err := mergeSearch(context.Background(), ids, at, api.SearchQuery{ExportQuery: api.ExportQuery{Limit: limit}}, fetchFrom(crawlers))
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Comments) > limit {
					t.Fatalf("seed %d: a page of %d for limit %d", seed, len(page.Comments), limit)
				}
				got = append(got, page.Comments...)
				if page.NextCursor == "" {
					break
				}
				c, err := decodeMergeCursor(page.NextCursor, ids)
				if err != nil {
					t.Fatalf("seed %d: the search's own cursor refused: %v", seed, err)
				}
				at = &c
			}
			if len(got) != len(want) {
				t.Fatalf("seed %d limit %d: %d comments, want %d", seed, limit, len(got), len(want))
			}
			for i := range want {
				if got[i].ID != want[i].ID {
					t.Fatalf("seed %d limit %d: comment %d is %s (%s), want %s (%s)", seed, limit, i,
						got[i].ID, got[i].PublishedAt, want[i].ID, want[i].PublishedAt)
				}
			}
		}
	}
}

// TestMergeSearch_FirstPageInterleaves: the first page of two crawlers
// whose comments alternate in time holds both crawlers' newest, not the
// first crawler's alone.
func TestMergeSearch_FirstPageInterleaves(t *testing.T) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a, b := &fakeCrawler{frontier: true}, &fakeCrawler{frontier: true}
	for i := range 10 {
		a.matches = append(a.matches, api.Comment{ID: "a" + strconv.Itoa(i), CrawlerID: 1, PublishedAt: base.Add(-time.Duration(2*i) * time.Minute)})
		b.matches = append(b.matches, api.Comment{ID: "b" + strconv.Itoa(i), CrawlerID: 2, PublishedAt: base.Add(-time.Duration(2*i+1) * time.Minute)})
	}
	page, err := mergeSearch(context.Background(), []int64{1, 2}, nil, api.SearchQuery{ExportQuery: api.ExportQuery{Limit: 4}},
		fetchFrom(map[int64]*fakeCrawler{1: a, 2: b}))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range page.Comments {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"a0", "b0", "a1", "b1"}) || page.NextCursor == "" {
		t.Fatalf("first page %v (next %q), want [a0 b0 a1 b1] and a cursor", ids, page.NextCursor)
	}
}

// TestMergeSearch_StopsAtItsBound: crawlers whose pages hold no match
// (a rare word, each page stopped at the spawn's read bound) do not keep
// one page of the user's search reading: it answers with a cursor after a
// bounded number of reads, and the next page goes on from there.
func TestMergeSearch_StopsAtItsBound(t *testing.T) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeCrawler{gaps: map[int]int{0: 1000}}
	f.matches = []api.Comment{{ID: "needle", CrawlerID: 1, PublishedAt: base}}
	crawlers := map[int64]*fakeCrawler{1: f}
	q := api.SearchQuery{ExportQuery: api.ExportQuery{Limit: 5}}
	page, err := mergeSearch(context.Background(), []int64{1}, nil, q, fetchFrom(crawlers))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Comments) != 0 || page.NextCursor == "" {
		t.Fatalf("page %d comments, next %q: want none and a cursor", len(page.Comments), page.NextCursor)
	}
	if f.reads > mergeFetches+1 {
		t.Fatalf("one page read %d pages, bound %d", f.reads, mergeFetches+1)
	}
	// The next page goes on where this one stopped.
	c, err := decodeMergeCursor(page.NextCursor, []int64{1})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("0:%d", f.reads); len(c.Lanes) != 1 || c.Lanes[0].Cursor != want {
		t.Fatalf("cursor %+v, want the crawler's %q", c.Lanes, want)
	}
}

// TestDecodeMergeCursor refuses a cursor it did not give, and leaves out
// a crawler the user no longer has (nor ever had: a forged cursor reads
// no other user's crawler).
func TestDecodeMergeCursor(t *testing.T) {
	owned := []int64{3, 5, 9}
	for _, bad := range []string{"", "x", mergeCursor{}.encode(),
		mergeCursor{Lanes: []laneCursor{{Crawler: 3}, {Crawler: 3}}}.encode(),
		mergeCursor{Lanes: []laneCursor{{Crawler: -1}}}.encode(),
		mergeCursor{Lanes: []laneCursor{{Crawler: 3, Skip: -1}}}.encode(),
		mergeCursor{Lanes: []laneCursor{{Crawler: 3, Skip: maxLaneSkip + 1}}}.encode(),
	} {
		if _, err := decodeMergeCursor(bad, owned); err == nil {
			t.Errorf("cursor %q accepted", bad)
		}
	}
	c, err := decodeMergeCursor(mergeCursor{Lanes: []laneCursor{{Crawler: 5, Cursor: "k", Skip: 2}, {Crawler: 7}, {Crawler: 9}}}.encode(), owned)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Lanes, []laneCursor{{Crawler: 5, Cursor: "k", Skip: 2}, {Crawler: 9}}) {
		t.Fatalf("lanes %+v", c.Lanes)
	}
}
