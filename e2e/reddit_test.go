package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	redditfake "github.com/blackwidow-crawl/blackwidow/internal/fakes/reddit"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// Reddit end to end: the built hub and three spawns as processes, at
// default timings, sharing one Reddit app against a local Reddit
// (internal/fakes/reddit).

// redditWait bounds the waits of these tests: at the budget's 90 requests
// a minute, one round of 52 listings takes 35 s.
const redditWait = 3 * time.Minute

const (
	redditClientID = "p-jcoLKBynTLew"
	redditSecret   = "gko_LXELoV07ZBNUXrvWZfzE3aI"
	redditUA       = "linux:dev.blackwidow.e2e:v1.0.0 (by /u/blackwidow_dev)"
)

// spawnEnv starts a spawn as spawn does, with env added to the fleet's.
func (f *fleet) spawnEnv(env []string, extra ...string) *proc {
	f.t.Helper()
	args := append([]string{"--hub", f.hubURL, "--store", "file://" + f.dataDir, "--allow-targets", "127.0.0.0/8"}, extra...)
	p := startProc(f.t, append(slices.Clone(f.env), env...), filepath.Join(f.bin, "spawn"), args...)
	f.spawns = append(f.spawns, p)
	testkit.WaitFor(f.t, noGapsWait, "the spawn registered", func() bool {
		id := nodeIDOf(p)
		nodes, err := f.client.ListNodes(f.ctx)
		return err == nil && id != "" && slices.ContainsFunc(nodes, func(n api.Node) bool { return n.ID == id })
	})
	return p
}

// redditPublisher comments in turn in its subreddits, each comment saying
// one of its words, and remembers each one's fullname, subreddit and word.
type redditPublisher struct {
	mu       sync.Mutex
	comments []redditComment
	quit     chan struct{}
	done     chan struct{}
}

type redditComment struct {
	name, sub, word string
	at              time.Time
}

func publishReddit(srv *redditfake.Server, every time.Duration, posts map[string]string, subs, words []string) *redditPublisher {
	p := &redditPublisher{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.quit:
				return
			case <-t.C:
			}
			sub, word := subs[i%len(subs)], words[i%len(words)]
			name := srv.Comment(redditfake.CommentSpec{Subreddit: sub, Author: fmt.Sprintf("redditor%d", i%7),
				Body: fmt.Sprintf("%s & more, number %d", word, i), Link: posts[sub]})
			p.mu.Lock()
			p.comments = append(p.comments, redditComment{name: name, sub: sub, word: word, at: time.Now()})
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *redditPublisher) halt() {
	close(p.quit)
	<-p.done
}

// matching lists the comment ids of the comments in one of subs saying
// one of words (any word when words is empty).
func (p *redditPublisher) matching(subs, words []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.comments {
		if slices.Contains(subs, c.sub) && (len(words) == 0 || slices.Contains(words, c.word)) {
			out = append(out, "reddit:"+c.name)
		}
	}
	return out
}

func (p *redditPublisher) after(t time.Time) []redditComment {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []redditComment
	for _, c := range p.comments {
		if c.at.After(t) {
			out = append(out, c)
		}
	}
	return out
}

// TestReddit_FleetKeepsToTheBudgetLosesNothingAndRemovesDeletions runs
// three spawns sharing one Reddit app (BW_REDDIT_CLIENT_ID and
// BW_REDDIT_CLIENT_SECRET_FILE) against a local Reddit:
//
//   - a query that does not name its subreddits is refused;
//   - every reddit crawler runs on the one spawn holding the kind, which
//     polls 26 subreddits (52 listings) for them while comments keep
//     coming in two;
//   - that spawn is SIGKILLed: the crawlers move together to one
//     survivor, which reads each gap back from the crawlers' cursors, and
//     every crawler stores every comment its query matches exactly once;
//   - a comment deleted at Reddit after it was stored on the killed spawn
//     is found by the hub's compliance check, which the survivor runs
//     through /api/info, and removed;
//   - over the whole run, the fleet sent Reddit at most 100 requests in
//     any minute, all with the app's User-Agent.
func TestReddit_FleetKeepsToTheBudgetLosesNothingAndRemovesDeletions(t *testing.T) {
	rd := redditfake.Start(t, redditfake.Options{ClientID: redditClientID, ClientSecret: redditSecret})
	secretFile := filepath.Join(t.TempDir(), "reddit-secret")
	if err := os.WriteFile(secretFile, []byte(redditSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t)
	env := []string{"BW_REDDIT_CLIENT_ID=" + redditClientID, "BW_REDDIT_CLIENT_SECRET_FILE=" + secretFile}
	flags := []string{"--reddit-user-agent", redditUA, "--reddit-api-url", rd.URL(), "--reddit-auth-url", rd.URL(), "--bluesky=false"}
	for range 3 {
		f.spawnEnv(env, flags...)
	}
	u := f.user()

	// A query must say where it reads, in every branch.
	for _, q := range []string{"generics", "subreddit:golang OR generics", "-subreddit:golang iterators"} {
		_, err := f.client.CreateCrawler(f.ctx, api.CrawlerCreate{UserID: u.ID, Source: "reddit", Query: []string{q}})
		var se *api.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusBadRequest || !strings.Contains(err.Error(), "subreddit:NAME") {
			t.Errorf("query %q: %v, want a 400 saying to name a subreddit:NAME", q, err)
		}
	}

	subs := []string{"golang", "rust"}
	posts := map[string]string{}
	for _, s := range subs {
		posts[s] = rd.Post(redditfake.PostSpec{Subreddit: s, Author: "op", Title: "a thread in r/" + s, Selftext: "talk here"})
	}
	var fillers []string
	for i := range 24 {
		fillers = append(fillers, fmt.Sprintf("subreddit:quiet%02d", i))
	}
	crawlers := []struct {
		query string
		subs  []string
		words []string
		c     api.Crawler
	}{
		{query: "subreddit:golang", subs: []string{"golang"}},
		{query: "subreddit:rust (iterators OR traits)", subs: []string{"rust"}, words: []string{"iterators", "traits"}},
		{query: "subreddit:golang OR subreddit:rust", subs: subs},
		{query: strings.Join(fillers, " OR ")},
	}
	for i := range crawlers {
		crawlers[i].c = f.crawler(u.ID, "reddit", crawlers[i].query)
	}
	onOneNode := func(not string) (string, bool) {
		node := ""
		for _, c := range crawlers {
			cr, err := f.client.GetCrawler(f.ctx, c.c.ID)
			if err != nil || cr.State != api.StateRunning || cr.Node == "" || cr.Node == not || (node != "" && cr.Node != node) {
				return "", false
			}
			node = cr.Node
		}
		return node, true
	}
	var holder string
	testkit.WaitFor(t, redditWait, "every reddit crawler running on one spawn", func() bool {
		var ok bool
		holder, ok = onOneNode("")
		return ok
	})

	pub := publishReddit(rd, 400*time.Millisecond, posts, subs, []string{"iterators", "traits", "generics"})
	halted := false
	defer func() {
		if !halted {
			pub.halt()
		}
	}()
	testkit.WaitFor(t, redditWait, "comments stored for the crawlers", func() bool {
		for _, c := range crawlers[:3] {
			if len(storedIn(t, f.dataDir, c.c.ID)) < 3 {
				return false
			}
		}
		return true
	})
	// A comment the holder stored, deleted at Reddit: the holder's own
	// re-checks (first after --reddit-recheck, 1 h) will never run.
	gone := storedIn(t, f.dataDir, crawlers[0].c.ID)[0].ID
	rd.Delete(strings.TrimPrefix(gone, "reddit:"))

	if err := f.byNode(holder).cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var survivor string
	moved := testkit.WaitFor(t, redditWait, "every reddit crawler running on one survivor", func() bool {
		var ok bool
		survivor, ok = onOneNode(holder)
		return ok
	})
	testkit.WaitFor(t, redditWait, "comments after the move stored", func() bool {
		late := pub.after(killed.Add(moved + time.Second))
		if len(late) < 4 {
			return false
		}
		return slices.Contains(commentIDs(storedIn(t, f.dataDir, crawlers[2].c.ID)), "reddit:"+late[3].name)
	})
	pub.halt()
	halted = true

	for _, c := range crawlers {
		want := pub.matching(c.subs, c.words)
		want = slices.DeleteFunc(want, func(id string) bool { return id == gone })
		var missing, extra []string
		var twice int
		testkit.WaitForShowing(t, redditWait, fmt.Sprintf("crawler %d (%s) storing every matching comment once", c.c.ID, c.query), func() (bool, string) {
			missing, extra, twice = f.storedOnce(c.c.ID, want)
			return len(missing) == 0, missingSummary(missing, len(want))
		})
		extra = slices.DeleteFunc(extra, func(id string) bool { return id == gone })
		if len(extra) > 0 || twice > 0 {
			t.Errorf("crawler %d: %d comments it does not match stored (%v), %d stored twice", c.c.ID, len(extra), extra, twice)
		}
		t.Logf("crawler %d (%s): %d matching comments stored, each once", c.c.ID, c.query, len(want))
	}
	t.Logf("holder SIGKILLed: every reddit crawler on the survivor %s after %s", survivor, moved.Round(time.Millisecond))

	// The hub's compliance check, run now, hands the survivor the stored
	// ids: it finds the deleted one through /api/info.
	run, err := f.client.RunCompliance(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.Source != "reddit" || run.Status != "complete" || run.Deleted != 1 || run.Checked == 0 || run.Node != survivor {
		t.Errorf("compliance run %+v: want reddit, complete, 1 deleted, on the survivor", run)
	}
	took := testkit.WaitFor(t, removalDeadline, "the deleted comment removed", func() bool {
		for _, c := range crawlers {
			if slices.Contains(commentIDs(storedIn(t, f.dataDir, c.c.ID)), gone) {
				return false
			}
		}
		return true
	})
	t.Logf("compliance run: %d stored things checked, %d gone; removed from the store %s after", run.Checked, run.Deleted, took.Round(time.Millisecond))

	reqs := rd.Requests()
	perMinute := rd.MaxInWindow(time.Minute)
	t.Logf("%d requests to Reddit over %s, at most %d in any minute", len(reqs), reqs[len(reqs)-1].At.Sub(reqs[0].At).Round(time.Second), perMinute)
	if perMinute > 100 {
		t.Errorf("%d requests within a minute: the fleet went past Reddit's 100", perMinute)
	}
	if perMinute < 60 {
		t.Errorf("only %d requests within a minute while 52 listings waited: the budget was not what bound", perMinute)
	}
	for _, r := range reqs {
		if r.UserAgent != redditUA || r.Status == http.StatusTooManyRequests {
			t.Fatalf("request %+v: want the app's User-Agent and no 429", r)
		}
	}
}
