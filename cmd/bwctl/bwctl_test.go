package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// result is what one bwctl run produced.
type result struct {
	code           int
	stdout, stderr string
}

// bwctl runs the CLI in-process against hubURL with the admin token in the
// environment.
func bwctl(t *testing.T, hubURL string, args ...string) result {
	t.Helper()
	return bwctlEnv(t, map[string]string{"BW_HUB_URL": hubURL, "BW_ADMIN_TOKEN": clustertest.AdminToken}, args...)
}

func bwctlEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
	return result{code, out.String(), errb.String()}
}

// ok fails unless the run succeeded with nothing on stderr.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q", r.code, r.stderr, r.stdout)
	}
	return r
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not the JSON expected: %v\n%s", err, s)
	}
	return v
}

func TestRun_UserCommands(t *testing.T) {
	hub := clustertest.New(t, clustertest.Options{Timings: timings}).Hub.URL()
	u := decodeJSON[api.User](t, bwctl(t, hub, "user", "add", "acme corp", "--limit", "100", "--json").ok(t).stdout)
	if u.ID != 1 || u.Name != "acme corp" || u.CommentLimit != 100 || u.State != "active" || u.CreatedAt.IsZero() {
		t.Fatalf("user add --json printed %+v", u)
	}
	bwctl(t, hub, "--json", "user", "add", "beta").ok(t)

	out := bwctl(t, hub, "user", "list").ok(t).stdout
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^ID\s+NAME\s+LIMIT\s+USAGE\s+STATE\s+CREATED$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^1\s+acme corp\s+100\s+0\s+active\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^2\s+beta\s+0 \(none\)\s+0\s+active\s`).MatchString(lines[2]) {
		t.Fatalf("user list table:\n%s", out)
	}
	// Columns line up: every row has NAME where the header has it.
	col := strings.Index(lines[0], "NAME")
	if !strings.HasPrefix(lines[1][col:], "acme corp") || !strings.HasPrefix(lines[2][col:], "beta") {
		t.Fatalf("user list columns not aligned:\n%s", out)
	}
	users := decodeJSON[[]api.User](t, bwctl(t, hub, "user", "list", "--json").ok(t).stdout)
	if len(users) != 2 || users[0] != u {
		t.Fatalf("user list --json: %+v", users)
	}

	out = bwctl(t, hub, "user", "show", "1").ok(t).stdout
	for _, re := range []string{`(?m)^id:\s+1$`, `(?m)^name:\s+acme corp$`, `(?m)^comment_limit:\s+100$`,
		`(?m)^usage:\s+0$`, `(?m)^state:\s+active$`, `(?m)^created_at:\s+` + regexp.QuoteMeta(u.CreatedAt.Format(time.RFC3339)) + `$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("user show lacks %s:\n%s", re, out)
		}
	}
	u = decodeJSON[api.User](t, bwctl(t, hub, "user", "set-limit", "1", "0", "--json").ok(t).stdout)
	if u.CommentLimit != 0 {
		t.Fatalf("set-limit printed %+v", u)
	}
	// A limit of 0 must reach the hub, not be dropped as an empty field.
	if u := decodeJSON[api.User](t, bwctl(t, hub, "user", "show", "1", "--json").ok(t).stdout); u.CommentLimit != 0 {
		t.Fatalf("after set-limit 1 0 the hub has comment_limit %d", u.CommentLimit)
	}
	if out := bwctl(t, hub, "user", "show", "1").ok(t).stdout; !regexp.MustCompile(`(?m)^comment_limit:\s+0 \(none\)$`).MatchString(out) {
		t.Fatalf("user show after set-limit 1 0:\n%s", out)
	}
	// A user without crawlers can be deleted, once.
	if out := bwctl(t, hub, "user", "delete", "1").ok(t).stdout; out != "user 1 deleted\n" {
		t.Fatalf("user delete printed %q", out)
	}
	checkFailure(t, bwctl(t, hub, "user", "delete", "1"), 1, `^user 1 not found \(404\)$`)
}

func TestRun_CrawlerCommands(t *testing.T) {
	cl := clustertest.New(t, clustertest.Options{Timings: timings})
	hub, client := cl.Hub.URL(), cl.Client
	bwctl(t, hub, "user", "add", "acme").ok(t)

	// Global and command flags in any order, before and after the words.
	out := bwctl(t, hub, "--json", "crawler", "--source", "rss", "add", "--user", "1",
		"--query", "https://b.example/rss, https://a.example/feed", "--keywords", "Go,rust,", "--limit", "50", "--name", "Acme feeds").ok(t).stdout
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("crawler add --json: %v\n%s", err, out)
	}
	for _, key := range []string{"id", "user_id", "name", "source", "query", "keywords", "comment_limit", "enabled", "state", "node", "usage", "query_uuid"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("crawler add --json lacks %q:\n%s", key, out)
		}
	}
	if raw["id"] != 1.0 {
		t.Fatalf("crawler add printed id %v", raw["id"])
	}
	// The hub stores what bwctl sent, in its canonical form: feed URLs
	// sorted; the keywords, a filter in the query language whose comma list
	// is an OR, lowercased with blanks dropped.
	first, err := client.GetCrawler(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if c := first; c.UserID != 1 || c.Name != "Acme feeds" || c.Source != "rss" || !slices.Equal(c.Query, []string{"https://a.example/feed", "https://b.example/rss"}) ||
		!slices.Equal(c.Keywords, []string{"go OR rust"}) || c.CommentLimit != 50 || !c.Enabled || c.State != api.StatePending {
		t.Fatalf("the hub holds %+v", c)
	}

	c := decodeJSON[api.Crawler](t, bwctl(t, hub, "crawler", "add", "--user=1", "--source=twitter", "--query=golang", "--disabled", "--json").ok(t).stdout)
	if c.ID != 2 || c.Enabled || c.State != api.StateDisabled {
		t.Fatalf("crawler add --disabled printed %+v", c)
	}
	if c, err := client.GetCrawler(context.Background(), 2); err != nil || c.Enabled || c.State != api.StateDisabled {
		t.Fatalf("crawler add --disabled: the hub holds %+v (%v)", c, err)
	}

	// No spawn is registered: the crawler waits for a node.
	out = bwctl(t, hub, "crawler", "show", "1").ok(t).stdout
	for _, re := range []string{`(?m)^id:\s+1$`, `(?m)^user_id:\s+1$`, `(?m)^name:\s+Acme feeds$`, `(?m)^source:\s+rss$`, `(?m)^query:\s+https://a.example/feed, https://b.example/rss$`,
		`(?m)^keywords:\s+go OR rust$`, `(?m)^comment_limit:\s+50$`, `(?m)^enabled:\s+true$`, `(?m)^state:\s+pending$`, `(?m)^node:\s+-$`,
		`(?m)^query_uuid:\s+` + regexp.QuoteMeta(first.QueryUUID) + `$`, `(?m)^version:\s+1$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("crawler show lacks %s:\n%s", re, out)
		}
	}
	// The hub says why once its reload has found no node for it.
	testkit.WaitFor(t, 10*time.Second, "crawler 1's error naming the missing spawn", func() bool {
		c, err := client.GetCrawler(context.Background(), 1)
		return err == nil && c.Error != ""
	})
	out = bwctl(t, hub, "crawler", "list").ok(t).stdout
	if !regexp.MustCompile(`^ID\s+USER\s+NAME\s+SOURCE\s+STATE\s+NODE\s+USAGE\s+LIMIT\s+QUERY\s+ERROR\n1\s+1\s+Acme feeds\s+rss\s+pending\s+-\s+0\s+50\s+https://a.example/feed,https://b.example/rss\s+no spawn node is registered\n2\s+1\s+-\s+twitter\s+disabled\s+-\s+0\s+0 \(none\)\s+golang\s+-\n$`).MatchString(out) {
		t.Fatalf("crawler list table:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	if col := strings.Index(lines[0], "STATE"); !strings.HasPrefix(lines[1][col:], "pending") || !strings.HasPrefix(lines[2][col:], "disabled") {
		t.Fatalf("crawler list columns not aligned:\n%s", out)
	}

	c = decodeJSON[api.Crawler](t, bwctl(t, hub, "crawler", "update", "1", "--keywords", "", "--limit", "7", "--json").ok(t).stdout)
	if len(c.Keywords) != 0 || c.CommentLimit != 7 || c.Version != 2 {
		t.Fatalf("crawler update printed %+v", c)
	}
	// --name renames; "" removes the name; a name that is too long is
	// refused and changes nothing.
	if c := decodeJSON[api.Crawler](t, bwctl(t, hub, "crawler", "update", "1", "--name", "Acme launch", "--json").ok(t).stdout); c.Name != "Acme launch" {
		t.Fatalf("crawler update --name printed %+v", c)
	}
	if r := bwctl(t, hub, "crawler", "update", "1", "--name", strings.Repeat("x", 101)); r.code == 0 || !strings.Contains(r.stderr, "at most 100 characters") {
		t.Fatalf("crawler update with a 101-character name: exit %d, stderr %q", r.code, r.stderr)
	}
	if c, err := client.GetCrawler(context.Background(), 1); err != nil || c.Name != "Acme launch" {
		t.Fatalf("after a refused rename the hub holds %+v (%v)", c, err)
	}
	// An empty --keywords clears the filter and leaves the query alone.
	if c, err := client.GetCrawler(context.Background(), 1); err != nil || len(c.Keywords) != 0 || c.CommentLimit != 7 || len(c.Query) != 2 {
		t.Fatalf("after crawler update the hub holds %+v (%v)", c, err)
	}
	if out := bwctl(t, hub, "crawler", "disable", "1").ok(t).stdout; !regexp.MustCompile(`(?m)^enabled:\s+false\nstate:\s+disabled$`).MatchString(out) {
		t.Fatalf("crawler disable printed:\n%s", out)
	}
	if c, err := client.GetCrawler(context.Background(), 1); err != nil || c.Enabled || c.State != api.StateDisabled {
		t.Fatalf("after crawler disable the hub holds %+v (%v)", c, err)
	}
	if out := bwctl(t, hub, "crawler", "enable", "1").ok(t).stdout; !regexp.MustCompile(`(?m)^enabled:\s+true\nstate:\s+pending$`).MatchString(out) {
		t.Fatalf("crawler enable printed:\n%s", out)
	}
	if c, err := client.GetCrawler(context.Background(), 1); err != nil || !c.Enabled || c.State == api.StateDisabled {
		t.Fatalf("after crawler enable the hub holds %+v (%v)", c, err)
	}

	if out := bwctl(t, hub, "crawler", "delete", "2").ok(t).stdout; out != "crawler 2 deleted\n" {
		t.Fatalf("crawler delete printed %q", out)
	}
	del := decodeJSON[map[string]any](t, bwctl(t, hub, "crawler", "delete", "1", "--json").ok(t).stdout)
	if del["id"] != 1.0 || del["deleted"] != true {
		t.Fatalf("crawler delete --json printed %v", del)
	}
	if cs := decodeJSON[[]api.Crawler](t, bwctl(t, hub, "crawler", "list", "--json").ok(t).stdout); len(cs) != 0 {
		t.Fatalf("crawlers left: %+v", cs)
	}
}

// TestRun_NodesReloadCommentsStatus runs the commands that need a working
// cluster against a hub, two spawns and a feed one crawler reads.
func TestRun_NodesReloadCommentsStatus(t *testing.T) {
	cl := clustertest.New(t, clustertest.Options{Spawns: 2, Timings: timings})
	h, client, feeds := cl.Hub, cl.Client, cl.Feeds
	hub := h.URL()
	ctx := context.Background()
	spawns := slices.Clone(cl.Spawns)
	slices.SortFunc(spawns, func(a, b *spawnapp.Spawn) int { return strings.Compare(a.ID(), b.ID()) })

	// Seven stories an hour old, the newest with a line break (between
	// title and body) and a bidi override in its text.
	published := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	for i := range 6 {
		feeds.Publish("news", feedserver.Item{GUID: fmt.Sprintf("story-%d", i), Title: fmt.Sprintf("story number %d", i),
			Author: "alice", Published: published.Add(time.Duration(i) * time.Minute)})
	}
	newest := published.Add(10 * time.Minute)
	feeds.Publish("news", feedserver.Item{GUID: "bidi", Title: "golang \u202eevil news", Description: "line one",
		Author: "mallory", Published: newest})

	bwctl(t, hub, "user", "add", "acme").ok(t)
	bwctl(t, hub, "crawler", "add", "--user", "1", "--source", "rss", "--query", cl.FeedURL("news")).ok(t)
	bwctl(t, hub, "crawler", "add", "--user", "1", "--source", "rss", "--query", cl.FeedURL("quiet"), "--disabled").ok(t)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running with its 7 comments stored, both nodes polled", func() bool {
		c, err := client.GetCrawler(ctx, 1)
		if err != nil || c.State != api.StateRunning {
			return false
		}
		if cs, err := client.RecentComments(ctx, 1, 20); err != nil || len(cs) != 7 {
			return false
		}
		hh, err := client.Health(ctx)
		if err != nil || hh.Crawlers.Total != 2 || hh.Crawlers.Assigned != 1 || hh.Crawlers.ByState[api.StateRunning] != 1 {
			return false
		}
		nodes, err := client.ListNodes(ctx)
		if err != nil || len(nodes) != 2 {
			return false
		}
		for _, n := range nodes {
			// A node's store state comes with its first poll answer
			// (registration already sets its last contact).
			if n.LastPoll.IsZero() || n.Store == "" {
				return false
			}
		}
		return true
	})
	crawler, err := client.GetCrawler(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	subscribers := func(s *spawnapp.Spawn) int {
		if s.ID() == crawler.Node {
			return 1
		}
		return 0
	}

	out := bwctl(t, hub, "node", "list").ok(t).stdout
	want := `^ID\s+URL\s+STATE\s+SUBSCRIBERS\s+FAILURES\s+LAST POLL\s+STORE\s+SOURCES\n`
	for _, s := range spawns {
		want += regexp.QuoteMeta(s.ID()) + `\s+` + regexp.QuoteMeta(s.URL()) + `\s+ok\s+` + strconv.Itoa(subscribers(s)) + `\s+0\s+\S+ ago\s+ok\s+rss,bluesky,hackernews\n`
	}
	if !regexp.MustCompile(want + `$`).MatchString(out) {
		t.Fatalf("node list table:\n%s", out)
	}
	nodes := decodeJSON[[]api.Node](t, bwctl(t, hub, "node", "list", "--json").ok(t).stdout)
	if len(nodes) != 2 || nodes[0].ID != spawns[0].ID() || nodes[1].ID != spawns[1].ID() || nodes[0].URL != spawns[0].URL() ||
		nodes[0].Subscribers+nodes[1].Subscribers != 1 {
		t.Fatalf("node list --json: %+v", nodes)
	}

	// The cluster is settled: a hard reload has nothing to send or move.
	r := decodeJSON[api.ReloadResponse](t, bwctl(t, hub, "reload", "--hard", "--json").ok(t).stdout)
	if r != (api.ReloadResponse{Kind: "hard"}) {
		t.Fatalf("reload --hard on a settled cluster: %+v", r)
	}
	out = bwctl(t, hub, "reload", "--soft").ok(t).stdout
	if !regexp.MustCompile(`^kind:\s+soft\nassigned:\s+0\nmoved:\s+0\nremoved:\s+0\nfailed:\s+0\n$`).MatchString(out) {
		t.Fatalf("reload --soft printed:\n%s", out)
	}
	if c, err := client.GetCrawler(ctx, 1); err != nil || c.Node != crawler.Node {
		t.Fatalf("after the reloads the crawler is %+v (%v), was on %s", c, err, crawler.Node)
	}

	// Comments: newest first, at most --n, the text on one line in the table
	// and as stored in JSON.
	out = bwctl(t, hub, "comments", "recent", "1", "--n", "5").ok(t).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 6 || !regexp.MustCompile(`^PUBLISHED\s+ID\s+AUTHOR\s+LANG\s+SENTIMENT\s+TEXT$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(newest.Format(time.RFC3339))+` +bidi +mallory +\S+ +\S+ +golang evil news line one$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(published.Add(5*time.Minute).Format(time.RFC3339))+` +story-5 +alice +\S+ +\S+ +story number 5$`).MatchString(lines[2]) ||
		strings.ContainsAny(out, "\t\u202e") {
		t.Fatalf("comments recent --n 5 printed:\n%s", out)
	}
	cs := decodeJSON[[]api.Comment](t, bwctl(t, hub, "comments", "recent", "1", "--json").ok(t).stdout)
	if len(cs) != 7 || cs[0].ID != "bidi" || cs[0].CrawlerID != 1 || cs[0].Author != "mallory" || cs[0].Text != "golang \u202eevil news\nline one" ||
		!cs[0].PublishedAt.Equal(newest) {
		t.Fatalf("comments recent --json must keep the text as stored: %+v", cs)
	}
	if cs := decodeJSON[[]api.Comment](t, bwctl(t, hub, "comments", "recent", "1", "--n", "5", "--json").ok(t).stdout); len(cs) != 5 {
		t.Fatalf("comments recent --n 5 --json returned %d comments", len(cs))
	}

	out = bwctl(t, hub, "status").ok(t).stdout
	res := []string{`(?m)^hub:\s+` + regexp.QuoteMeta(hub) + `$`, `(?m)^epoch:\s+` + regexp.QuoteMeta(h.Epoch()) + `$`,
		`(?m)^routing:\s+modulo$`, `(?m)^nodes:\s+2$`, `(?m)^crawlers:\s+2 total, 1 assigned$`,
		`(?m)^STATE\s+CRAWLERS\nrunning\s+1\ndisabled\s+1\n\z`}
	for _, s := range spawns {
		res = append(res, `(?m)^`+regexp.QuoteMeta(s.ID())+`\s+`+regexp.QuoteMeta(s.URL())+`\s+`+strconv.Itoa(subscribers(s))+`$`)
	}
	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("status lacks %s:\n%s", re, out)
		}
	}
	hh := decodeJSON[api.HubHealth](t, bwctl(t, hub, "status", "--json").ok(t).stdout)
	if hh.Epoch != h.Epoch() || len(hh.Nodes) != 2 || hh.Crawlers.Total != 2 || hh.Crawlers.Assigned != 1 ||
		!maps.Equal(hh.Crawlers.ByState, map[string]int{api.StateRunning: 1, api.StateDisabled: 1}) {
		t.Fatalf("status --json: %+v", hh)
	}
}

func TestRun_NilEnv(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &errb, nil); code != 0 || errb.Len() != 0 {
		t.Fatalf("run with a nil env: exit %d, stderr %q", code, errb.String())
	}
}

func TestRun_Help(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"crawler", "add", "--help"}, {"help", "crawler"}} {
		r := bwctlEnv(t, nil, args...).ok(t)
		if !strings.Contains(r.stdout, "bwctl crawler add --user ID --source rss|twitter|stream|bluesky|mastodon|hackernews|reddit --query Q") ||
			!strings.Contains(r.stdout, "--hub URL") {
			t.Fatalf("bwctl %v printed:\n%s", args, r.stdout)
		}
	}
}

// TestRun_Failures checks exit codes and that every failure is exactly one
// line "bwctl: <reason>" on stderr with nothing on stdout.
func TestRun_Failures(t *testing.T) {
	hub := clustertest.New(t, clustertest.Options{Timings: timings}).Hub.URL()
	bwctl(t, hub, "user", "add", "acme").ok(t)
	bwctl(t, hub, "crawler", "add", "--user", "1", "--source", "rss", "--query", "https://a.example/").ok(t)
	env := map[string]string{"BW_HUB_URL": hub, "BW_ADMIN_TOKEN": clustertest.AdminToken}
	cases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		reason string // regexp of the text after "bwctl: "
	}{
		{"not found", env, []string{"crawler", "show", "9"}, 1, `^crawler 9 not found \(404\)$`},
		{"user not found", env, []string{"user", "show", "9"}, 1, `^user 9 not found \(404\)$`},
		{"hub refuses", env, []string{"crawler", "add", "--user", "99", "--source", "rss", "--query", "https://a.example/"}, 1, `^user 99 does not exist \(400\)$`},
		{"hub refuses the query", env, []string{"crawler", "add", "--user", "1", "--source", "rss", "--query", "ftp://a.example/"}, 1, `^invalid query: feed URL "ftp://a.example/" must be http or https \(400\)$`},
		{"hub refuses n", env, []string{"comments", "recent", "1", "--n", "5000"}, 1, `^n must be between 1 and 1000 \(400\)$`},
		{"no spawn to read comments", env, []string{"comments", "recent", "1"}, 1, `^no spawn node is live to read the store \(503\)$`},
		{"comments of no crawler", env, []string{"comments", "recent", "9"}, 1, `^crawler 9 not found \(404\)$`},
		{"delete not found", env, []string{"crawler", "delete", "9"}, 1, `^crawler 9 not found \(404\)$`},
		{"set-limit not found", env, []string{"user", "set-limit", "9", "3"}, 1, `^user 9 not found \(404\)$`},
		{"no token", map[string]string{"BW_HUB_URL": hub}, []string{"user", "list"}, 1, `^missing bearer token \(401\): no admin token given, set BW_ADMIN_TOKEN or --token$`},
		{"wrong token", env, []string{"user", "list", "--token", "nope"}, 1, `^invalid bearer token \(401\): the hub refused the admin token$`},
		{"no command", env, nil, 2, `^no command given`},
		{"unknown command", env, []string{"frobnicate"}, 2, `^unknown command "frobnicate"`},
		{"unknown subcommand", env, []string{"crawler", "explode", "1"}, 2, `^unknown crawler command "explode" \(want one of add, show, list, update, enable, disable, delete, suggest, expand\)$`},
		{"group alone", env, []string{"user"}, 2, `^user needs a subcommand: add, list, show, set-limit, set-retention, delete$`},
		{"missing id", env, []string{"crawler", "show"}, 2, `^usage: bwctl crawler show ID$`},
		{"extra argument", env, []string{"crawler", "show", "1", "2"}, 2, `^usage: bwctl crawler show ID$`},
		{"bad id", env, []string{"crawler", "show", "abc"}, 2, `^crawler ID must be a positive integer, got "abc"$`},
		{"zero id", env, []string{"crawler", "delete", "0"}, 2, `positive integer`},
		{"negative limit", env, []string{"user", "set-limit", "1", "-1"}, 2, `^limit N must be a whole number`},
		{"bad limit flag", env, []string{"user", "add", "x", "--limit", "lots"}, 2, `^--limit must be a whole number`},
		{"unknown flag", env, []string{"user", "list", "--verbose"}, 2, `^unknown flag "--verbose"`},
		{"flag of another command", env, []string{"user", "list", "--limit", "3"}, 2, `^user list does not take --limit`},
		{"flag without value", env, []string{"user", "add", "x", "--limit"}, 2, `^flag --limit needs a value$`},
		{"bad switch value", env, []string{"user", "list", "--json=maybe"}, 2, `^flag --json is a switch`},
		{"crawler add without query", env, []string{"crawler", "add", "--user", "1", "--source", "rss"}, 2, `^crawler add needs --query$`},
		{"crawler add bad source", env, []string{"crawler", "add", "--user", "1", "--source", "ftp", "--query", "x"}, 2, `^--source must be one of rss, twitter, stream, bluesky, mastodon, hackernews, reddit, got "ftp"$`},
		{"crawler add empty query", env, []string{"crawler", "add", "--user", "1", "--source", "rss", "--query", " , "}, 2, `^--query is empty$`},
		{"update nothing", env, []string{"crawler", "update", "1"}, 2, `^nothing to update`},
		{"alert query refused once", env, []string{"alert", "add", "--crawler", "1", "--kind", "match", "--query", "(golang", "--webhook", "https://hooks.example.com/x"}, 1, `^query: unclosed "\(" at column 1[^(]*\(400\)$`},
		{"retention too long", env, []string{"crawler", "update", "1", "--retention", "213505d"}, 2, `^retention "213505d": must be at most 7300d$`},
		{"user retention too long", env, []string{"user", "set-retention", "1", "213505d"}, 2, `^retention "213505d": must be at most 7300d$`},
		{"reload neither", env, []string{"reload"}, 2, `^reload needs exactly one of --hard or --soft$`},
		{"reload both", env, []string{"reload", "--hard", "--soft"}, 2, `^reload needs exactly one`},
		{"bad n", env, []string{"comments", "recent", "1", "--n", "0"}, 2, `^--n must be a positive integer`},
		{"bad timeout", env, []string{"status", "--timeout", "soon"}, 2, `^--timeout "soon" is not a duration`},
		{"bad hub url", env, []string{"status", "--hub", "ftp://x"}, 2, `^hub URL "ftp://x" must look like http://host:port$`},
		{"control characters in input", env, []string{"crawler", "show", "1\n\x1b[31m"}, 2, `^crawler ID must be a positive integer, got "1\\n\\x1b\[31m"$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := bwctlEnv(t, tc.env, tc.args...)
			checkFailure(t, r, tc.code, tc.reason)
		})
	}
}

func checkFailure(t *testing.T, r result, code int, reason string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if r.stdout != "" {
		t.Fatalf("stdout %q on failure, want nothing", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "bwctl: ") || !strings.HasSuffix(r.stderr, "\n") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr %q is not one line \"bwctl: <reason>\"", r.stderr)
	}
	if got := strings.TrimSuffix(strings.TrimPrefix(r.stderr, "bwctl: "), "\n"); !regexp.MustCompile(reason).MatchString(got) {
		t.Fatalf("reason %q does not match %s", got, reason)
	}
}

func TestRun_HubUnreachable(t *testing.T) {
	addr := testkit.FreeAddr(t)
	r := bwctlEnv(t, map[string]string{"BW_HUB_URL": "http://" + addr}, "crawler", "list")
	checkFailure(t, r, 1, `^hub unreachable at http://`+regexp.QuoteMeta(addr)+`: connection refused$`)

	// A password in the hub URL never reaches stderr.
	r = bwctlEnv(t, map[string]string{"BW_HUB_URL": "http://admin:hunter2@" + addr}, "crawler", "list")
	checkFailure(t, r, 1, `^hub unreachable at http://admin:xxxxx@`+regexp.QuoteMeta(addr)+`: connection refused$`)

	// --hub overrides the environment, and a bare host:port means http.
	h := clustertest.New(t, clustertest.Options{Timings: timings}).Hub
	r = bwctlEnv(t, map[string]string{"BW_HUB_URL": "http://" + addr, "BW_ADMIN_TOKEN": clustertest.AdminToken},
		"status", "--json", "--hub", h.Addr())
	if hh := decodeJSON[api.HubHealth](t, r.ok(t).stdout); hh.Epoch != h.Epoch() {
		t.Fatalf("status --hub %s reached another hub: %+v", h.Addr(), hh)
	}
}

// silentServer accepts connections and never answers: a hub that hangs.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // the listener was closed
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

func TestRun_Timeout(t *testing.T) {
	hub := silentServer(t)
	start := time.Now()
	r := bwctl(t, hub, "user", "list", "--timeout", "100ms")
	checkFailure(t, r, 1, `^hub at `+regexp.QuoteMeta(hub)+` did not answer within 100ms$`)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("--timeout 100ms took %v", d)
	}
}

func TestRun_TokenFile(t *testing.T) {
	hub := clustertest.New(t, clustertest.Options{Timings: timings}).Hub.URL()
	path := t.TempDir() + "/token"
	if err := os.WriteFile(path, []byte(clustertest.AdminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bwctlEnv(t, map[string]string{"BW_HUB_URL": hub, "BW_ADMIN_TOKEN_FILE": path}, "user", "list").ok(t)
	r := bwctlEnv(t, map[string]string{"BW_HUB_URL": hub, "BW_ADMIN_TOKEN_FILE": path + ".missing"}, "user", "list")
	checkFailure(t, r, 1, `^config: unable to read BW_ADMIN_TOKEN_FILE`)
}

// TestRun_HubFromEitherVariable: bwctl reads the hub's URL from
// BW_HUB_URL, as documented, and from BW_HUB, the name a spawn's --hub
// makes; the two set to different values are refused.
func TestRun_HubFromEitherVariable(t *testing.T) {
	hub := clustertest.New(t, clustertest.Options{Timings: timings}).Hub.URL()
	for _, name := range []string{"BW_HUB_URL", "BW_HUB"} {
		bwctlEnv(t, map[string]string{name: hub, "BW_ADMIN_TOKEN": clustertest.AdminToken}, "user", "list").ok(t)
	}
	r := bwctlEnv(t, map[string]string{"BW_HUB_URL": hub, "BW_HUB": "http://127.0.0.1:1", "BW_ADMIN_TOKEN": clustertest.AdminToken}, "user", "list")
	checkFailure(t, r, 1, `^config: BW_HUB_URL and BW_HUB are both set, to different values: set only BW_HUB_URL$`)
}

func TestRun_ConfigFile(t *testing.T) {
	hub := clustertest.New(t, clustertest.Options{Timings: timings}).Hub.URL()
	bwctl(t, hub, "user", "add", "acme").ok(t)
	dir := t.TempDir()
	good := dir + "/bwctl.yaml"
	if err := os.WriteFile(good, []byte("hub: "+hub+"\ntoken: "+clustertest.AdminToken+"\njson: true\ntimeout: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := bwctlEnv(t, nil, "user", "list", "--config", good).ok(t)
	if users := decodeJSON[[]api.User](t, r.stdout); len(users) != 1 || users[0].Name != "acme" {
		t.Fatalf("user list with --config: %+v", users)
	}
	// A flag overrides the file.
	if r := bwctlEnv(t, map[string]string{"BW_CONFIG": good}, "user", "list", "--json=false").ok(t); !strings.HasPrefix(r.stdout, "ID ") {
		t.Fatalf("--json=false did not override the file: %q", r.stdout)
	}
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("hubb: http://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkFailure(t, bwctlEnv(t, nil, "status", "--config", bad), 1, `unknown setting "hubb"`)
}

func TestScan_SplitsWordsFromFlagsAnywhere(t *testing.T) {
	cases := []struct {
		args  []string
		words string
		flags string // name=value, in the order given
	}{
		{[]string{"crawler", "add", "--user", "1", "-source=rss", "--json"}, "crawler add", "user=1 source=rss json=true"},
		{[]string{"--json=false", "user", "set-limit", "3", "-5"}, "user set-limit 3 -5", "json=false"},
		{[]string{"user", "add", "--", "--limit"}, "user add --limit", ""},
		{[]string{"user", "add", "-"}, "user add -", ""},
		{[]string{"--limit", "-1", "x"}, "x", "limit=-1"},
		{[]string{"terms", "--window", "1h", "1"}, "terms 1", "window=1h"},
		{[]string{"crawler", "--source", "rss", "add"}, "crawler add", "source=rss"},
		{[]string{"-h"}, "", "help=true"},
		{[]string{"crawler", "update", "1", "--keywords", ""}, "crawler update 1", "keywords="},
	}
	for _, tc := range cases {
		words, given, err := scan(tc.args)
		if err != nil {
			t.Fatalf("scan(%q): %v", tc.args, err)
		}
		var flags []string
		for _, g := range given {
			flags = append(flags, g.name+"="+g.value)
		}
		if got := strings.Join(words, " "); got != tc.words || strings.Join(flags, " ") != tc.flags {
			t.Fatalf("scan(%q) = %q %q, want %q %q", tc.args, got, flags, tc.words, tc.flags)
		}
	}
}

// FuzzRun feeds arbitrary command lines to bwctl, against one hub for the
// whole run: it must never panic, must exit 0, 1 or 2, and must fail with
// exactly one line on stderr.
func FuzzRun(f *testing.F) {
	hub := clustertest.New(f, clustertest.Options{Timings: timings}).Hub.URL()
	for _, seed := range []string{
		"user add acme --limit 5", "crawler add --user 1 --source rss --query https://x/", "crawler show 1 --json",
		"crawler update 1 --keywords ''", "reload --hard", "comments recent 1 --n 3", "status", "--timeout=-1s node list",
		"--hub=http://[::1 user list", "-- -- --", "crawler show 99999999999999999999", "user set-limit 1 -0",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, " ")
		var out, errb bytes.Buffer
		env := map[string]string{"BW_HUB_URL": hub, "BW_ADMIN_TOKEN": clustertest.AdminToken, "BW_TIMEOUT": "2s"}
		code := run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
		switch code {
		case 0:
		case 1, 2:
			if s := errb.String(); !strings.HasPrefix(s, "bwctl: ") || strings.Count(s, "\n") != 1 || out.Len() != 0 {
				t.Fatalf("bwctl %q: exit %d, stdout %q, stderr %q", line, code, out.String(), s)
			}
		default:
			t.Fatalf("bwctl %q: exit %d", line, code)
		}
	})
}
