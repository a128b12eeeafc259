package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/faultproxy"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// recountTags counts, over stored comments, the comments carrying each
// hashtag (once per comment): the recount the hub's term counts must equal
// for comments whose text is hashtags only.
func recountTags(comments []api.Comment) map[string]int64 {
	out := map[string]int64{}
	for _, c := range comments {
		seen := map[string]bool{}
		for _, f := range strings.Fields(strings.ToLower(c.Text)) {
			if strings.HasPrefix(f, "#") && !seen[f] {
				seen[f] = true
				out[f]++
			}
		}
	}
	return out
}

func termMap(ts []api.TermCount) map[string]int64 {
	out := map[string]int64{}
	for _, t := range ts {
		out[t.Term] = t.Count
	}
	return out
}

// recountAuthors counts stored comments by author.
func recountAuthors(comments []api.Comment) map[string]int64 {
	out := map[string]int64{}
	for _, c := range comments {
		out[c.Author]++
	}
	return out
}

func authorMap(as []api.AuthorCount) map[string]int64 {
	out := map[string]int64{}
	for _, a := range as {
		out[a.Author] = a.Comments
	}
	return out
}

func activityTotal(steps []api.ActivityStep) (comments int64) {
	for _, s := range steps {
		comments += s.Comments
	}
	return comments
}

// TestAnalytics_ExactlyOnceUnderFaults publishes hashtag-only items to
// crawlers while hub↔spawn messages are dropped, duplicated, delayed and
// replayed late, then checks that every crawler's term counts equal a
// recount from its stored comments, its user's terms their sum, its
// activity the usage in SQL, and that the minutes survive a hub restart.
func TestAnalytics_ExactlyOnceUnderFaults(t *testing.T) {
	c := newCluster(t, clusterOpts{spawns: 2, proxied: true})
	u := c.user(0)
	var ids []int64
	for i := range 3 {
		ids = append(ids, c.rssCrawler(u.ID, []string{c.FeedURL(fmt.Sprintf("tags%d", i))}, nil, 0).ID)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "every crawler running on one node", func() bool { return c.eachOnOne(ids, c.Spawns...) })

	faults := faultproxy.Faults{Drop: 0.05, Duplicate: 0.15, Replay: 0.15, ReplayAfter: 3 * clustertest.Fast.Poll, Delay: clustertest.Fast.Poll / 2}
	for _, l := range c.links {
		l.setFaults(faults)
	}
	base := time.Now().Add(-time.Hour)
	deadline := time.Now().Add(3 * time.Second)
	rounds := 0
	for ; time.Now().Before(deadline); rounds++ {
		round := rounds
		for i := range ids {
			c.Feeds.Publish(fmt.Sprintf("tags%d", i), feedserver.Item{
				GUID:        fmt.Sprintf("t%d-%d", i, round),
				Title:       fmt.Sprintf("#Common #crawler%d", i),
				Description: fmt.Sprintf("#r%d #s%d", round%5, round%3),
				Author:      fmt.Sprintf("author%d", round%7),
				Published:   base.Add(time.Duration(round) * time.Second),
			})
		}
		time.Sleep(40 * time.Millisecond) // the publishing pace, not a wait for a condition
	}
	var stats faultproxy.Stats
	for _, l := range c.links {
		s := l.down.Stats()
		stats.Dropped += s.Dropped
		stats.Duplicated += s.Duplicated
		stats.Replayed += s.Replayed
		l.setFaults(faultproxy.Faults{})
	}
	t.Logf("faults: %d answers dropped, %d duplicated, %d replayed late", stats.Dropped, stats.Duplicated, stats.Replayed)
	if stats.Dropped+stats.Duplicated+stats.Replayed < 10 {
		t.Fatalf("too few faults happened to prove anything: %+v", stats)
	}
	for _, id := range ids {
		testkit.WaitFor(t, clustertest.WaitTimeout, fmt.Sprintf("crawler %d stored all %d items", id, rounds), func() bool {
			return len(c.storedComments(id)) == rounds
		})
	}
	c.checkStoredEqualsUsage(ids)

	userWant := map[string]int64{}
	userAuthors := map[string]int64{}
	for _, id := range ids {
		want := recountTags(c.storedComments(id))
		for k, v := range want {
			userWant[k] += v
		}
		var got map[string]int64
		testkit.WaitFor(t, clustertest.WaitTimeout, fmt.Sprintf("crawler %d's terms equal a recount of its stored comments", id), func() bool {
			ts, err := c.Client.CrawlerTerms(c.Ctx, id, api.Window7d, 200)
			if err != nil {
				t.Fatal(err)
			}
			got = termMap(ts.Terms)
			return maps.Equal(got, want)
		})
		usage := c.crawler(id).Usage
		if got["#common"] != usage {
			t.Errorf("crawler %d: #common counted %d, usage %d", id, got["#common"], usage)
		}
		act, err := c.Client.CrawlerActivity(c.Ctx, id, api.Window1h, "1m")
		if err != nil {
			t.Fatal(err)
		}
		if total := activityTotal(act.Steps); total != usage {
			t.Errorf("crawler %d: activity counts %d comments, usage %d", id, total, usage)
		}
		authors := int64(0)
		for _, s := range act.Steps {
			authors = max(authors, s.Authors)
		}
		if authors < 1 || authors > 7 {
			t.Errorf("crawler %d: busiest minute has %d authors, want 1 to 7", id, authors)
		}
		// Top authors: exact, from the same increments, under the same
		// faults.
		wantAuthors := recountAuthors(c.storedComments(id))
		for k, v := range wantAuthors {
			userAuthors[k] += v
		}
		au, err := c.Client.CrawlerAuthors(c.Ctx, id, api.Window7d, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := authorMap(au.Authors); !maps.Equal(got, wantAuthors) || au.Folded != 0 {
			t.Errorf("crawler %d: authors %v (folded %d), want a recount of its stored comments %v", id, got, au.Folded, wantAuthors)
		}
		for i := 1; i < len(au.Authors); i++ {
			if au.Authors[i].Comments > au.Authors[i-1].Comments {
				t.Errorf("crawler %d: authors not most comments first: %+v", id, au.Authors)
			}
		}
		bd, err := c.Client.CrawlerBreakdown(c.Ctx, id, api.Window7d)
		if err != nil {
			t.Fatal(err)
		}
		if bd.Comments != usage || len(bd.Sources) != 1 || bd.Sources[0].Key != "rss" || len(bd.Languages) != 1 || bd.Languages[0].Comments != usage {
			t.Errorf("crawler %d: breakdown %+v, want its %d comments, all rss, all of one language", id, bd, usage)
		}
		sg, err := c.Client.CrawlerSuggestions(c.Ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(sg.Terms) == 0 || sg.Terms[0].Term != "#common" || sg.Terms[0].Count != usage {
			t.Errorf("crawler %d: suggestions %+v, want #common first, seen %d times", id, sg.Terms, usage)
		}
	}
	ut, err := c.Client.UserTerms(c.Ctx, u.ID, api.Window24h, 200)
	if err != nil {
		t.Fatal(err)
	}
	if got := termMap(ut.Terms); !maps.Equal(got, userWant) {
		t.Errorf("user terms %v, want the sum over its crawlers %v", got, userWant)
	}
	ua, err := c.Client.UserAuthors(c.Ctx, u.ID, api.Window24h, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := authorMap(ua.Authors); !maps.Equal(got, userAuthors) {
		t.Errorf("user authors %v, want the sum over its crawlers %v", got, userAuthors)
	}

	// A conversation read through a spawn: rss items start their own.
	stored := c.storedComments(ids[0])
	th, err := c.Client.Thread(c.Ctx, ids[0], stored[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if th.ThreadID != stored[0].ID || len(th.Comments) != 1 || th.Comments[0].ID != stored[0].ID {
		t.Errorf("thread of %s: %+v", stored[0].ID, th)
	}

	// Activity lives in SQL: a new hub still shows the minutes before it.
	before := map[int64][]api.ActivityStep{}
	for _, id := range ids {
		act, err := c.Client.CrawlerActivity(c.Ctx, id, api.Window1h, "1m")
		if err != nil {
			t.Fatal(err)
		}
		before[id] = act.Steps
	}
	if err := c.Hub.Stop(); err != nil {
		t.Fatal(err)
	}
	c.StartHub()
	for _, id := range ids {
		act, err := c.Client.CrawlerActivity(c.Ctx, id, api.Window1h, "1m")
		if err != nil {
			t.Fatal(err)
		}
		// The window moved on by at most a minute: compare the minutes
		// both reads cover.
		old := map[time.Time]api.ActivityStep{}
		for _, s := range before[id] {
			old[s.At] = s
		}
		var kept, total int64
		for _, s := range act.Steps {
			if o, ok := old[s.At]; ok && s.Comments >= o.Comments {
				kept += o.Comments
			}
			total += s.Comments
		}
		if want := activityTotal(before[id]); kept != want || total < want {
			t.Errorf("crawler %d after a hub restart: %d of the %d comments before it still shown", id, kept, want)
		}
	}
}
