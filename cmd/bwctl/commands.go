package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// command is one bwctl verb.
type command struct {
	words []string // e.g. {"crawler", "add"}
	args  []string // positional arguments, e.g. {"ID"}
	opts  string   // flag synopsis, e.g. "[--limit N]"
	flags []string // command flags accepted
	help  string
	// stream commands run until done: the timeout bounds each request,
	// not the whole command.
	stream bool
	// varArgs commands take minArgs arguments or more (TERM…, an
	// optional [CRAWLER]) and check them themselves; others take args
	// exactly.
	minArgs int
	varArgs bool
	run     func(c *cli, args []string, l line) error
}

func (cmd *command) name() string { return strings.Join(cmd.words, " ") }

func (cmd *command) synopsis() string {
	return strings.Join(slices.Concat(cmd.words, cmd.args, strings.Fields(cmd.opts)), " ")
}

// commands lists every verb, in the order bwctl help shows them (DESIGN.md
// section 8).
var commands = []*command{
	{words: []string{"user", "add"}, args: []string{"NAME"}, opts: "[--limit N]", flags: []string{"limit"},
		help: "add a user; N is its comment limit (0 = none)", run: userAdd},
	{words: []string{"user", "list"}, help: "list users", run: userList},
	{words: []string{"user", "show"}, args: []string{"ID"}, help: "show a user", run: userShow},
	{words: []string{"user", "set-limit"}, args: []string{"ID", "N"}, help: "set a user's comment limit (0 = none)", run: userSetLimit},
	{words: []string{"user", "delete"}, args: []string{"ID"}, help: "delete a user who has no crawlers left", run: deleteByID("user", func(c *cli, id int64) error { return c.client.DeleteUser(c.ctx, id) })},
	{words: []string{"crawler", "add"}, opts: "--user ID --source rss|twitter|stream|bluesky|mastodon --query Q [--keywords K1,K2] [--limit N] [--disabled]",
		flags: []string{"user", "source", "query", "keywords", "limit", "disabled"},
		help:  "add a crawler; Q is feed URLs (rss) or a query in the query language (a comma list is an OR); K is an rss filter in the language", run: crawlerAdd},
	{words: []string{"crawler", "show"}, args: []string{"ID"}, help: "show a crawler and its live state", run: crawlerShow},
	{words: []string{"crawler", "list"}, help: "list crawlers", run: crawlerList},
	{words: []string{"crawler", "update"}, args: []string{"ID"}, opts: "[--query Q] [--keywords K1,K2] [--limit N]",
		flags: []string{"query", "keywords", "limit"}, help: "change a crawler (--keywords \"\" clears the filter)", run: crawlerUpdate},
	{words: []string{"crawler", "enable"}, args: []string{"ID"}, help: "enable a crawler", run: crawlerEnable(true)},
	{words: []string{"crawler", "disable"}, args: []string{"ID"}, help: "disable a crawler", run: crawlerEnable(false)},
	{words: []string{"crawler", "delete"}, args: []string{"ID"}, help: "delete a crawler", run: deleteByID("crawler", func(c *cli, id int64) error { return c.client.DeleteCrawler(c.ctx, id) })},
	{words: []string{"node", "list"}, help: "list live spawn nodes", run: nodeList},
	{words: []string{"reload"}, opts: "--hard|--soft", flags: []string{"hard", "soft"},
		help: "reload: hard recomputes every assignment, soft only what changed", run: reload},
	{words: []string{"comments", "recent"}, args: []string{"CRAWLER"}, opts: "[--n N]", flags: []string{"n"},
		help: "show a crawler's latest comments (default 20)", run: commentsRecent},
	{words: []string{"comments", "export"}, args: []string{"CRAWLER"}, opts: "[--since T] [--until T] [--format jsonl|csv]",
		flags: []string{"since", "until", "format"}, stream: true,
		help: "write all of a crawler's stored comments to stdout (published in [since, until); RFC 3339 times)", run: commentsExport},
	{words: []string{"comments", "thread"}, args: []string{"CRAWLER", "COMMENT_ID"},
		help: "show the conversation a comment belongs to, by published time", run: commentsThread},
	{words: []string{"terms"}, args: []string{"[CRAWLER]"}, opts: "[--user ID] [--window 1h|24h|7d] [--n N]", varArgs: true,
		flags: []string{"user", "window", "n"}, help: "a crawler's (or a user's) most frequent terms (default 24h, 20)", run: terms},
	{words: []string{"crawler", "suggest"}, args: []string{"ID"}, help: "candidate query terms co-occurring with a crawler's matches, best first", run: crawlerSuggest},
	{words: []string{"crawler", "expand"}, args: []string{"ID", "TERM…"}, minArgs: 2, varArgs: true,
		help: "OR terms into a crawler's query: (query) OR TERM…", run: crawlerExpand},
	{words: []string{"status"}, help: "one-screen summary: hub, nodes, crawlers by state", run: status},
	{words: []string{"scaling"}, help: "autoscaling signal: live nodes, wanted subscribers and the spawn count they need", run: scaling},
}

func init() { commands = append(commands, alertCommands...) }

// lookup finds the command named by the first words and returns the words
// left for its arguments.
func lookup(words []string) (*command, []string, error) {
	var group []string
	for _, cmd := range commands {
		if len(words) >= len(cmd.words) && slices.Equal(words[:len(cmd.words)], cmd.words) {
			return cmd, words[len(cmd.words):], nil
		}
		if len(cmd.words) > 1 && cmd.words[0] == words[0] {
			group = append(group, cmd.words[1])
		}
	}
	switch {
	case len(group) > 0 && len(words) == 1:
		return nil, nil, usagef("%s needs a subcommand: %s", words[0], strings.Join(group, ", "))
	case len(group) > 0:
		return nil, nil, usagef("unknown %s command %s (want one of %s)", words[0], quote(words[1]), strings.Join(group, ", "))
	default:
		return nil, nil, usagef("unknown command %s (run 'bwctl help')", quote(words[0]))
	}
}

// Argument parsing.

func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%s must be a positive integer, got %s", what, quote(s))
	}
	return id, nil
}

func parseLimit(what, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, usagef("%s must be a whole number, 0 (no limit) or more, got %s", what, quote(s))
	}
	return n, nil
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Users.

func userAdd(c *cli, args []string, l line) error {
	in := api.UserCreate{Name: args[0]}
	if strings.TrimSpace(in.Name) == "" {
		return usagef("user name is empty")
	}
	if l.has("limit") {
		n, err := parseLimit("--limit", l.flags["limit"])
		if err != nil {
			return err
		}
		in.CommentLimit = n
	}
	u, err := c.client.CreateUser(c.ctx, in)
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func userList(c *cli, _ []string, _ line) error {
	users, err := c.client.ListUsers(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, users)
	}
	rows := make([][]string, 0, len(users))
	for _, u := range users {
		rows = append(rows, []string{itoa(u.ID), u.Name, limitText(u.CommentLimit), itoa(u.Usage), u.State, timeText(u.CreatedAt)})
	}
	return printTable(c.out, []string{"ID", "NAME", "LIMIT", "USAGE", "STATE", "CREATED"}, rows)
}

func userShow(c *cli, args []string, _ line) error {
	id, err := parseID("user ID", args[0])
	if err != nil {
		return err
	}
	u, err := c.client.GetUser(c.ctx, id)
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func userSetLimit(c *cli, args []string, _ line) error {
	id, err := parseID("user ID", args[0])
	if err != nil {
		return err
	}
	n, err := parseLimit("limit N", args[1])
	if err != nil {
		return err
	}
	u, err := c.client.UpdateUser(c.ctx, id, api.UserUpdate{CommentLimit: &n})
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func (c *cli) showUser(u api.User) error {
	if c.json {
		return printJSON(c.out, u)
	}
	return printKV(c.out, [][2]string{
		{"id", itoa(u.ID)},
		{"name", u.Name},
		{"comment_limit", limitText(u.CommentLimit)},
		{"usage", itoa(u.Usage)},
		{"state", u.State},
		{"created_at", timeText(u.CreatedAt)},
	})
}

// Crawlers.

func crawlerAdd(c *cli, _ []string, l line) error {
	for _, name := range []string{"user", "source", "query"} {
		if !l.has(name) {
			return usagef("crawler add needs --%s", name)
		}
	}
	userID, err := parseID("--user", l.flags["user"])
	if err != nil {
		return err
	}
	in := api.CrawlerCreate{UserID: userID, Source: strings.ToLower(strings.TrimSpace(l.flags["source"]))}
	if !slices.Contains(api.Sources, in.Source) {
		return usagef("--source must be one of %s, got %s", strings.Join(api.Sources, ", "), quote(l.flags["source"]))
	}
	if in.Query = splitList(l.flags["query"]); len(in.Query) == 0 {
		return usagef("--query is empty")
	}
	if l.has("keywords") {
		in.Keywords = splitList(l.flags["keywords"])
	}
	if l.has("limit") {
		if in.CommentLimit, err = parseLimit("--limit", l.flags["limit"]); err != nil {
			return err
		}
	}
	enabled := !l.on("disabled")
	in.Enabled = &enabled
	cr, err := c.client.CreateCrawler(c.ctx, in)
	if err != nil {
		return err
	}
	return c.showCrawler(cr)
}

func crawlerShow(c *cli, args []string, _ line) error {
	id, err := parseID("crawler ID", args[0])
	if err != nil {
		return err
	}
	cr, err := c.client.GetCrawler(c.ctx, id)
	if err != nil {
		return err
	}
	return c.showCrawler(cr)
}

func crawlerList(c *cli, _ []string, _ line) error {
	crawlers, err := c.client.ListCrawlers(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, crawlers)
	}
	rows := make([][]string, 0, len(crawlers))
	for _, cr := range crawlers {
		rows = append(rows, []string{
			itoa(cr.ID), itoa(cr.UserID), cr.Source, cr.State, orDash(cr.Node),
			itoa(cr.Usage), limitText(cr.CommentLimit), truncate(strings.Join(cr.Query, ","), maxQueryColumn),
		})
	}
	return printTable(c.out, []string{"ID", "USER", "SOURCE", "STATE", "NODE", "USAGE", "LIMIT", "QUERY"}, rows)
}

func crawlerUpdate(c *cli, args []string, l line) error {
	id, err := parseID("crawler ID", args[0])
	if err != nil {
		return err
	}
	var in api.CrawlerUpdate
	if l.has("query") {
		if in.Query = splitList(l.flags["query"]); len(in.Query) == 0 {
			return usagef("--query is empty")
		}
	}
	if l.has("keywords") {
		in.Keywords = splitList(l.flags["keywords"]) // empty: clear the filter
	}
	if l.has("limit") {
		n, err := parseLimit("--limit", l.flags["limit"])
		if err != nil {
			return err
		}
		in.CommentLimit = &n
	}
	if in.Query == nil && in.Keywords == nil && in.CommentLimit == nil {
		return usagef("nothing to update: give --query, --keywords or --limit")
	}
	cr, err := c.client.UpdateCrawler(c.ctx, id, in)
	if err != nil {
		return err
	}
	return c.showCrawler(cr)
}

func crawlerEnable(enabled bool) func(c *cli, args []string, l line) error {
	return func(c *cli, args []string, _ line) error {
		id, err := parseID("crawler ID", args[0])
		if err != nil {
			return err
		}
		cr, err := c.client.UpdateCrawler(c.ctx, id, api.CrawlerUpdate{Enabled: &enabled})
		if err != nil {
			return err
		}
		return c.showCrawler(cr)
	}
}

// deleteByID runs a delete verb: what names the object ("crawler",
// "user"), del removes it.
func deleteByID(what string, del func(c *cli, id int64) error) func(c *cli, args []string, _ line) error {
	return func(c *cli, args []string, _ line) error {
		id, err := parseID(what+" ID", args[0])
		if err != nil {
			return err
		}
		if err := del(c, id); err != nil {
			return err
		}
		if c.json {
			return printJSON(c.out, map[string]any{"id": id, "deleted": true})
		}
		_, err = fmt.Fprintf(c.out, "%s %d deleted\n", what, id)
		return err
	}
}

func (c *cli) showCrawler(cr api.Crawler) error {
	if c.json {
		return printJSON(c.out, cr)
	}
	kv := [][2]string{
		{"id", itoa(cr.ID)},
		{"user_id", itoa(cr.UserID)},
		{"source", cr.Source},
		{"query", strings.Join(cr.Query, ", ")},
		{"keywords", orDash(strings.Join(cr.Keywords, ", "))},
		{"query_canonical", cr.QueryCanonical},
		{"comment_limit", limitText(cr.CommentLimit)},
		{"enabled", strconv.FormatBool(cr.Enabled)},
		{"state", cr.State},
	}
	if cr.Error != "" {
		kv = append(kv, [2]string{"error", cr.Error})
	}
	kv = append(kv, [][2]string{
		{"node", orDash(cr.Node)},
		{"usage", itoa(cr.Usage)},
		{"rate_per_sec", strconv.FormatFloat(cr.RatePerSec, 'f', 2, 64)},
		{"query_uuid", cr.QueryUUID},
		{"version", itoa(cr.Version)},
		{"updated_at", timeText(cr.UpdatedAt)},
	}...)
	return printKV(c.out, kv)
}

// Nodes, reloads, comments, status.

func nodeList(c *cli, _ []string, _ line) error {
	nodes, err := c.client.ListNodes(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, nodes)
	}
	rows := make([][]string, 0, len(nodes))
	for _, n := range nodes {
		rows = append(rows, []string{n.ID, n.URL, n.State, strconv.Itoa(n.Subscribers), strconv.Itoa(n.Failures), ageText(n.LastPoll), orDash(n.Store),
			orDash(strings.Join(n.Sources, ","))})
	}
	return printTable(c.out, []string{"ID", "URL", "STATE", "SUBSCRIBERS", "FAILURES", "LAST POLL", "STORE", "SOURCES"}, rows)
}

func reload(c *cli, _ []string, l line) error {
	hard, soft := l.on("hard"), l.on("soft")
	if hard == soft {
		return usagef("reload needs exactly one of --hard or --soft")
	}
	kind := "soft"
	if hard {
		kind = "hard"
	}
	r, err := c.client.Reload(c.ctx, kind)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, r)
	}
	return printKV(c.out, [][2]string{
		{"kind", r.Kind},
		{"assigned", strconv.Itoa(r.Assigned)},
		{"moved", strconv.Itoa(r.Moved)},
		{"removed", strconv.Itoa(r.Removed)},
		{"failed", strconv.Itoa(r.Failed)},
	})
}

func commentsRecent(c *cli, args []string, l line) error {
	id, err := parseID("crawler ID", args[0])
	if err != nil {
		return err
	}
	n := 0
	if l.has("n") {
		v, err := strconv.Atoi(l.flags["n"])
		if err != nil || v <= 0 {
			return usagef("--n must be a positive integer, got %s", quote(l.flags["n"]))
		}
		n = v
	}
	comments, err := c.client.RecentComments(c.ctx, id, n)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, comments)
	}
	return printComments(c.out, comments)
}

// printComments prints comments as a table, one line each: their text and
// authors come from crawled sources and are cleaned for the terminal.
func printComments(w io.Writer, comments []api.Comment) error {
	rows := make([][]string, 0, len(comments))
	for _, cm := range comments {
		rows = append(rows, []string{timeText(cm.PublishedAt), truncate(cm.ID, maxIDColumn), truncate(orDash(cm.Author), maxAuthorColumn), truncate(cm.Text, maxTextColumn)})
	}
	return printTable(w, []string{"PUBLISHED", "ID", "AUTHOR", "TEXT"}, rows)
}

// stateOrder is how status lists crawler states: the lifecycle first.
var stateOrder = []string{
	api.StatePending, api.StateRunning, api.StateQuotaWait, api.StateLimitReached,
	api.StateDisabled, api.StateFailed, api.StateMissing,
}

func status(c *cli, _ []string, _ line) error {
	h, err := c.client.Health(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, h)
	}
	routing := h.Routing
	if routing == "" {
		routing = "-"
	}
	if err := printKV(c.out, [][2]string{
		{"hub", displayURL(c.client.BaseURL())},
		{"role", orDash(h.Role)},
		{"leader", orDash(h.Leader)},
		{"epoch", h.Epoch},
		{"routing", routing},
		{"nodes", strconv.Itoa(len(h.Nodes))},
		{"crawlers", fmt.Sprintf("%d total, %d assigned", h.Crawlers.Total, h.Crawlers.Assigned)},
	}); err != nil {
		return err
	}
	if len(h.Nodes) > 0 {
		rows := make([][]string, 0, len(h.Nodes))
		for _, n := range h.Nodes {
			rows = append(rows, []string{n.ID, n.URL, strconv.Itoa(n.Subscribers)})
		}
		fmt.Fprintln(c.out)
		if err := printTable(c.out, []string{"NODE", "URL", "SUBSCRIBERS"}, rows); err != nil {
			return err
		}
	}
	if len(h.Crawlers.ByState) > 0 {
		states := make([]string, 0, len(h.Crawlers.ByState))
		for s := range h.Crawlers.ByState {
			states = append(states, s)
		}
		rank := func(s string) int {
			if i := slices.Index(stateOrder, s); i >= 0 {
				return i
			}
			return len(stateOrder)
		}
		sort.Slice(states, func(i, j int) bool {
			if ri, rj := rank(states[i]), rank(states[j]); ri != rj {
				return ri < rj
			}
			return states[i] < states[j]
		})
		rows := make([][]string, 0, len(states))
		for _, s := range states {
			rows = append(rows, []string{s, strconv.Itoa(h.Crawlers.ByState[s])})
		}
		fmt.Fprintln(c.out)
		return printTable(c.out, []string{"STATE", "CRAWLERS"}, rows)
	}
	return nil
}
