package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	hnfake "github.com/blackwidow-crawl/blackwidow/internal/fakes/hackernews"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// Hacker News end to end: the built hub and spawns as processes, at
// default timings, walking a local Hacker News (internal/fakes/hackernews).

// hnPublisher adds items to the local Hacker News at a steady pace, a
// story and then comments under it, each saying one of its words, and
// remembers each item's id, word and time.
type hnPublisher struct {
	srv   *hnfake.Server
	mu    sync.Mutex
	items []hnPublished
	quit  chan struct{}
	done  chan struct{}
}

type hnPublished struct {
	id   int64
	word string
	at   time.Time
}

func publishHN(srv *hnfake.Server, every time.Duration, words ...string) *hnPublisher {
	p := &hnPublisher{srv: srv, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		var story int64
		for i := 0; ; i++ {
			select {
			case <-p.quit:
				return
			case <-t.C:
			}
			word := words[i%len(words)]
			text := fmt.Sprintf("%s number %d", word, i)
			var id int64
			if i%4 == 0 {
				id = srv.Add(hnfake.Item{Type: "story", By: "poster" + strconv.Itoa(i%3), Title: text})[0]
				story = id
			} else {
				id = srv.Add(hnfake.Item{Type: "comment", By: "replier" + strconv.Itoa(i%5), Parent: story, Text: "<p>" + text})[0]
			}
			p.mu.Lock()
			p.items = append(p.items, hnPublished{id: id, word: word, at: time.Now()})
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *hnPublisher) halt() {
	close(p.quit)
	<-p.done
}

// matching lists the comment ids of the items saying one of words.
func (p *hnPublisher) matching(words ...string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, it := range p.items {
		if slices.Contains(words, it.word) {
			out = append(out, "hn:"+strconv.FormatInt(it.id, 10))
		}
	}
	return out
}

// after lists the items published after t saying one of words.
func (p *hnPublisher) after(t time.Time, words ...string) []hnPublished {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []hnPublished
	for _, it := range p.items {
		if it.at.After(t) && slices.Contains(words, it.word) {
			out = append(out, it)
		}
	}
	return out
}

// TestHackerNews_KilledSpawnLosesNothingAndDeletionsAreRemoved: two
// spawns walk a local Hacker News for hackernews crawlers while stories
// and comments keep coming; the spawn running the first crawler is
// SIGKILLed. The crawlers it ran move to the other spawn with their
// cursors (the newest item each stored), which fills each one's gap:
// every crawler stores every item its query matches exactly once, before,
// during and after the kill. An item deleted at Hacker News afterwards is
// read again from updates.json and removed from the store.
func TestHackerNews_KilledSpawnLosesNothingAndDeletionsAreRemoved(t *testing.T) {
	hn := hnfake.Start(t, hnfake.Options{})
	f := startFleet(t)
	flags := []string{"--hackernews-api-url", hn.URL(), "--hackernews-search-url", hn.URL(), "--bluesky=false"}
	f.spawn(flags...)
	f.spawn(flags...)
	u := f.user()
	crawlers := []struct {
		words []string
		c     api.Crawler
	}{{words: []string{"alpha"}}, {words: []string{"beta", "gamma"}}, {words: []string{"alpha", "gamma"}}, {words: []string{"delta"}}}
	for i := range crawlers {
		crawlers[i].c = f.crawler(u.ID, "hackernews", strings.Join(crawlers[i].words, " OR "))
	}
	testkit.WaitFor(t, noGapsWait, "every crawler running", func() bool {
		for _, c := range crawlers {
			if cr, err := f.client.GetCrawler(f.ctx, c.c.ID); err != nil || cr.State != api.StateRunning {
				return false
			}
		}
		return true
	})
	pub := publishHN(hn, 150*time.Millisecond, "alpha", "beta", "gamma", "delta", "epsilon")
	halted := false
	defer func() {
		if !halted {
			pub.halt()
		}
	}()
	testkit.WaitFor(t, noGapsWait, "items stored for every crawler", func() bool {
		for _, c := range crawlers {
			if len(storedIn(t, f.dataDir, c.c.ID)) < 3 {
				return false
			}
		}
		return true
	})

	first, err := f.client.GetCrawler(f.ctx, crawlers[0].c.ID)
	if err != nil || first.Node == "" {
		t.Fatalf("crawler %+v: %v", first, err)
	}
	if err := f.byNode(first.Node).cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	moved := testkit.WaitFor(t, noGapsWait, "the killed spawn's crawlers running on the other spawn", func() bool {
		for _, c := range crawlers {
			cr, err := f.client.GetCrawler(f.ctx, c.c.ID)
			if err != nil || cr.State != api.StateRunning || cr.Node == first.Node || cr.Node == "" {
				return false
			}
		}
		return true
	})
	// Items keep coming after the move, and reach the moved crawler live.
	testkit.WaitFor(t, noGapsWait, "items after the move stored for the moved crawler", func() bool {
		late := pub.after(killed.Add(moved+time.Second), crawlers[0].words...)
		if len(late) < 3 {
			return false
		}
		stored := commentIDs(storedIn(t, f.dataDir, crawlers[0].c.ID))
		return slices.Contains(stored, "hn:"+strconv.FormatInt(late[2].id, 10))
	})
	pub.halt()
	halted = true

	for _, c := range crawlers {
		want := pub.matching(c.words...)
		var missing, extra []string
		var twice int
		testkit.WaitForShowing(t, noGapsWait, fmt.Sprintf("crawler %d (%s) storing every matching item once", c.c.ID, strings.Join(c.words, " OR ")), func() (bool, string) {
			missing, extra, twice = f.storedOnce(c.c.ID, want)
			return len(missing) == 0, missingSummary(missing, len(want))
		})
		if len(extra) > 0 || twice > 0 {
			t.Errorf("crawler %d: %d items it does not match stored (%v), %d stored twice", c.c.ID, len(extra), extra, twice)
		}
		t.Logf("crawler %d (%s): %d matching items stored, each once", c.c.ID, strings.Join(c.words, " OR "), len(want))
	}
	t.Logf("spawn SIGKILLed: crawlers running on the other spawn after %s; %d items published in all, %d search requests",
		moved.Round(time.Millisecond), len(pub.matching("alpha", "beta", "gamma", "delta", "epsilon")), hn.Requests(hnfake.EndpointSearch))

	// A deletion: an item the surviving spawn walked and handed over, no
	// longer listed in updates.json (the publisher moved past it) and so
	// not read since: deleted, it is listed again, read, and removed.
	var gone int64
	for _, it := range pub.after(killed.Add(moved), crawlers[0].words...) {
		if hn.ItemRequests(it.id) == 1 {
			gone = it.id
			break
		}
	}
	if gone == 0 {
		t.Fatal("no item of the moved crawler read only once since the move: the publisher did not move updates.json past any")
	}
	goneID := "hn:" + strconv.FormatInt(gone, 10)
	hn.Delete(gone)
	took := testkit.WaitFor(t, noGapsWait, "the deleted item removed from every crawler's store", func() bool {
		for _, c := range crawlers {
			if slices.Contains(commentIDs(storedIn(t, f.dataDir, c.c.ID)), goneID) {
				return false
			}
		}
		return true
	})
	t.Logf("item %s deleted at Hacker News: removed from the store %s later (updates.json is read every 30 s)", goneID, took.Round(time.Millisecond))
}
