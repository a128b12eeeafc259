package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// A user's search merges the searches of the user's crawlers by time:
// each crawler's search is a stream of matches, newest first, read a page
// at a time through a spawn; a page of the user's search takes, again and
// again, the newest head of these streams. A stream whose read pages are
// all taken, and that has more, is read on when what is left of it may be
// newer than every other head: its page's frontier (nothing left is newer)
// tells how far, or, without one, it is read at once.
const (
	// mergeFetches bounds the pages one page of a user's search reads
	// besides the first page of each crawler: a merge waiting on crawlers
	// whose pages hold no match answers with what it has and a cursor.
	mergeFetches = 16
	// mergeBudget is how long a page of a user's search starts reading
	// pages (the pages under way are waited for).
	mergeBudget = 10 * time.Second
	// mergeParallel is how many crawlers' pages are read at once.
	mergeParallel = 8
	// maxLaneSkip bounds a cursor's count of a page's matches already
	// given: no page holds more than the largest limit.
	maxLaneSkip = 100_000
)

// mergeCursor is where a user's search goes on: for each crawler with
// matches left, the cursor of its first page not wholly given, and how
// many of that page's matches were. A crawler not in it is done.
type mergeCursor struct {
	Lanes []laneCursor `json:"l"`
}

type laneCursor struct {
	Crawler int64  `json:"c"`
	Cursor  string `json:"k,omitempty"`
	Skip    int    `json:"s,omitempty"`
}

func (c mergeCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeMergeCursor reads a cursor of a user's search; owned are the
// user's crawlers, in order. A crawler of the cursor the user no longer
// has (removed meanwhile) is left out; a cursor naming one twice, or
// counting nonsense, is refused.
func decodeMergeCursor(s string, owned []int64) (mergeCursor, error) {
	var c mergeCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || len(c.Lanes) == 0 {
		return mergeCursor{}, fmt.Errorf("cursor %q is not one this search gave", s)
	}
	seen := make(map[int64]bool, len(c.Lanes))
	kept := c.Lanes[:0]
	for _, l := range c.Lanes {
		if l.Crawler <= 0 || seen[l.Crawler] || l.Skip < 0 || l.Skip > maxLaneSkip {
			return mergeCursor{}, fmt.Errorf("cursor %q is not one this search gave", s)
		}
		seen[l.Crawler] = true
		if _, ok := slices.BinarySearch(owned, l.Crawler); ok {
			kept = append(kept, l)
		}
	}
	c.Lanes = kept
	return c, nil
}

// pageFetcher reads one page of a crawler's search.
type pageFetcher func(ctx context.Context, crawlerID int64, q api.SearchQuery) (api.SearchPage, error)

// laneItem is a match read and not yet given, with the page it came from
// and its place in that page.
type laneItem struct {
	c     api.Comment
	page  string
	index int
}

// lane is one crawler's stream in a merge.
type lane struct {
	crawler int64
	pending []laneItem
	next    string // the cursor after the pages read ("": none)
	skip    int    // matches of next's page already given
	read    bool   // a page was read (else next is where to start)
	done    bool   // the pages read were the last
	// frontier bounds what is left after the pages read (zero: unknown).
	frontier time.Time
}

// bound is the newest a lane's next match can be: its head, or (with no
// head) its frontier; ok is false when the lane is finished, unknown
// when nothing bounds it (it must be read before anything is given).
func (l *lane) bound() (t time.Time, unknown, ok bool) {
	switch {
	case len(l.pending) > 0:
		return l.pending[0].c.PublishedAt, false, true
	case l.done:
		return time.Time{}, false, false
	case !l.read || l.frontier.IsZero():
		return time.Time{}, true, true
	}
	return l.frontier, false, true
}

// fetch reads the lane's next page, leaving out the matches its cursor
// counts as given (a page may end before them: the next page holds the
// rest).
func (l *lane) fetch(ctx context.Context, q api.SearchQuery, fetch pageFetcher) (int64, error) {
	var scanned int64
	for {
		inner := q
		inner.Cursor = l.next
		page, err := fetch(ctx, l.crawler, inner)
		if err != nil {
			return scanned, err
		}
		scanned += page.Scanned
		l.read = true
		skip := min(l.skip, len(page.Comments))
		for i := skip; i < len(page.Comments); i++ {
			l.pending = append(l.pending, laneItem{c: page.Comments[i], page: l.next, index: i})
		}
		l.skip -= skip
		l.frontier = time.Time{}
		if page.Frontier != nil {
			l.frontier = *page.Frontier
		}
		l.next, l.done = page.NextCursor, page.NextCursor == ""
		if l.done || l.skip == 0 {
			l.skip = 0
			return scanned, nil
		}
	}
}

// cursor is where the lane goes on, or false when it is finished.
func (l *lane) cursor() (laneCursor, bool) {
	if len(l.pending) > 0 {
		return laneCursor{Crawler: l.crawler, Cursor: l.pending[0].page, Skip: l.pending[0].index}, true
	}
	if l.read && l.done {
		return laneCursor{}, false
	}
	return laneCursor{Crawler: l.crawler, Cursor: l.next, Skip: l.skip}, true
}

// mergeSearch reads one page of a search over the crawlers (lanes from
// the cursor, or every crawler with at: nil), newest first across all
// of them.
func mergeSearch(ctx context.Context, crawlers []int64, at *mergeCursor, sq api.SearchQuery, fetch pageFetcher) (api.SearchPage, error) {
	var lanes []*lane
	if at == nil {
		for _, id := range crawlers {
			lanes = append(lanes, &lane{crawler: id})
		}
	} else {
		for _, l := range at.Lanes {
			lanes = append(lanes, &lane{crawler: l.Crawler, next: l.Cursor, skip: l.Skip})
		}
	}
	out := api.SearchPage{Comments: []api.Comment{}}
	deadline := time.Now().Add(mergeBudget)
	extra := 0
	for len(out.Comments) < sq.Limit {
		// The lane whose next match may be the newest: the first with
		// nothing to bound it, else the newest bound (the lower crawler
		// id on a tie).
		var best *lane
		var bestT time.Time
		var unknown []*lane
		for _, l := range lanes {
			t, unk, ok := l.bound()
			switch {
			case !ok:
			case unk:
				unknown = append(unknown, l)
			case best == nil || t.After(bestT):
				best, bestT = l, t
			}
		}
		if len(unknown) > 0 {
			// Read every lane nothing bounds, together.
			if extra >= mergeFetches+len(lanes) || time.Now().After(deadline) {
				break
			}
			extra += len(unknown)
			n, err := fetchAll(ctx, unknown, sq, fetch)
			out.Scanned += n
			if err != nil {
				return api.SearchPage{}, err
			}
			continue
		}
		if best == nil {
			break // every lane is finished
		}
		if len(best.pending) == 0 {
			// Its frontier is the newest bound: read on.
			if extra >= mergeFetches+len(lanes) || time.Now().After(deadline) {
				break
			}
			extra++
			n, err := best.fetch(ctx, sq, fetch)
			out.Scanned += n
			if err != nil {
				return api.SearchPage{}, err
			}
			continue
		}
		out.Comments = append(out.Comments, best.pending[0].c)
		best.pending = best.pending[1:]
	}
	var next mergeCursor
	for _, l := range lanes {
		if c, ok := l.cursor(); ok {
			next.Lanes = append(next.Lanes, c)
		}
	}
	if len(next.Lanes) > 0 {
		out.NextCursor = next.encode()
	}
	return out, nil
}

// fetchAll reads the next page of every lane, mergeParallel at a time.
func fetchAll(ctx context.Context, lanes []*lane, sq api.SearchQuery, fetch pageFetcher) (int64, error) {
	var mu sync.Mutex
	var scanned int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(mergeParallel)
	for _, l := range lanes {
		g.Go(func() error {
			n, err := l.fetch(gctx, sq, fetch)
			mu.Lock()
			scanned += n
			mu.Unlock()
			return err
		})
	}
	return scanned, g.Wait()
}
