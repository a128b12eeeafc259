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

// commands lists every verb, in the order bwctl help shows them; the verbs
// and flags are an operator contract (docs/operations.md, "bwctl"). It is
// filled in init, since help and completion read it.
var commands []*command

func init() {
	commands = []*command{
		{name: "user add", args: []string{"NAME"}, help: "add a user; N is its comment limit (0 = none)", run: userAdd,
			flags: []flagSpec{
				{name: "limit", arg: "N", usage: "the user's comment limit (0: none)", def: "0"},
				{name: "retention", arg: "D", usage: "how long the user's crawlers keep comments unless they set their own: 30d, 36h (0: for good)"},
			}},
		{name: "user list", help: "list users", run: userList},
		{name: "user show", args: []string{"ID"}, help: "show a user", run: userShow},
		{name: "user set-limit", args: []string{"ID", "N"}, help: "set a user's comment limit (0 = none)", run: userSetLimit},
		{name: "user set-retention", args: []string{"ID", "D"}, help: "set the retention of the user's crawlers that set none (30d, 36h; 0 = none); from now on", run: userSetRetention},
		{name: "user delete", args: []string{"ID"}, help: "delete a user who has no crawlers left",
			run: deleteByID("user", func(c *cli, id int64) error { return c.client.DeleteUser(c.ctx, id) })},
		{name: "crawler add", help: "add a crawler; Q is a query in the query language (a comma list is an OR), or feed URLs (" + urlSources() + "); K filters the feeds' items, in the language",
			run: crawlerAdd, flags: []flagSpec{
				{name: "user", arg: "ID", required: true, usage: "the user the crawler belongs to"},
				{name: "source", choices: sourceNames(), required: true, usage: "what the crawler reads"},
				{name: "query", arg: "Q", required: true, usage: "feed URLs (" + urlSources() + "), comma-separated, or a query in the query language"},
				{name: "name", arg: "NAME", usage: "what people call the crawler (\"Acme launch\"), at most 100 characters"},
				{name: "keywords", arg: "K1,K2", usage: "a feed crawler's (" + urlSources() + ") filter, in the query language (a comma list is an OR)"},
				{name: "limit", arg: "N", usage: "the crawler's comment limit (0: none)", def: "0"},
				{name: "retention", arg: "D", usage: "keep comments this long after they were published: 30d, 36h (default: the user's, else for good)"},
				{name: "disabled", usage: "add the crawler disabled"},
			}},
		{name: "crawler show", args: []string{"ID"}, help: "show a crawler and its live state", run: crawlerShow},
		{name: "crawler list", help: "list crawlers", run: crawlerList},
		{name: "crawler update", args: []string{"ID"}, help: "change a crawler (--keywords \"\" clears the filter)", run: crawlerUpdate,
			flags: []flagSpec{
				{name: "name", arg: "NAME", usage: "the crawler's new name; \"\" removes it"},
				{name: "query", arg: "Q", usage: "the new query"},
				{name: "keywords", arg: "K1,K2", usage: "a feed crawler's new filter; \"\" clears it"},
				{name: "limit", arg: "N", usage: "the new comment limit (0: none)"},
				{name: "retention", arg: "D", usage: "the new retention (30d, 36h; 0: the user's); applies to comments stored from now on"},
			}},
		{name: "crawler enable", args: []string{"ID"}, help: "enable a crawler", run: crawlerEnable(true)},
		{name: "crawler disable", args: []string{"ID"}, help: "disable a crawler", run: crawlerEnable(false)},
		{name: "crawler delete", args: []string{"ID"}, help: "delete a crawler",
			run: deleteByID("crawler", func(c *cli, id int64) error { return c.client.DeleteCrawler(c.ctx, id) })},
		{name: "node list", help: "list live spawn nodes", run: nodeList},
		{name: "node drain", args: []string{"NODE"}, help: "drain a spawn without stopping it: its crawlers move to other spawns (make before break) and it takes no new ones", run: nodeDrain},
		{name: "reload", help: "reload: hard recomputes every assignment, soft only what changed", run: reload,
			flags: []flagSpec{
				{name: "hard", group: "kind", required: true, usage: "recompute every assignment and poll every node at once"},
				{name: "soft", group: "kind", required: true, usage: "send only what changed"},
			}},
		{name: "comments recent", args: []string{"CRAWLER"}, help: "show a crawler's latest comments (default 20)", run: commentsRecent,
			flags: []flagSpec{{name: "n", arg: "N", usage: "how many comments, newest first", def: "20"}}},
		{name: "comments export", args: []string{"CRAWLER"}, stream: true, run: commentsExport,
			help: "write all of a crawler's stored comments to stdout (published in [since, until); RFC 3339 times)",
			flags: []flagSpec{
				{name: "since", arg: "T", usage: "comments published at or after T: an RFC 3339 time or a UTC day, 2024-05-01"},
				{name: "until", arg: "T", usage: "comments published before T"},
				{name: "format", choices: exportFormats, usage: "JSON Lines, or CSV with a header row", def: "jsonl"},
			}},
		{name: "comments search", args: []string{"CRAWLER", "QUERY"}, stream: true, run: commentsSearch,
			help: "show a crawler's newest stored comments that QUERY (the query language) matches",
			flags: []flagSpec{
				{name: "since", arg: "T", usage: "comments published at or after T: an RFC 3339 time or a UTC day, 2024-05-01"},
				{name: "until", arg: "T", usage: "comments published before T"},
				{name: "n", arg: "N", usage: "how many matches, newest first", def: "20"},
				{name: "cursor", arg: "C", usage: "go on where an earlier search stopped"},
			}},
		{name: "comments thread", args: []string{"CRAWLER", "COMMENT_ID"}, help: "show the conversation a comment belongs to, by published time", run: commentsThread},
		{name: "comments forget", help: "remove every comment of an author (author_id or handle) in every crawler of a source, and keep them out", run: commentsForget,
			flags: []flagSpec{
				{name: "source", choices: sourceNames(), required: true, usage: "the author's source"},
				{name: "author", arg: "A", required: true, usage: "the author's author_id (a DID, an X user id, a Mastodon account URI) or handle"},
			}},
		{name: "terms", args: []string{"[CRAWLER]"}, help: "a crawler's (or, with --user, a user's) most frequent terms (default 24h, 20)", run: terms,
			flags: []flagSpec{
				{name: "user", arg: "ID", usage: "a user's terms, over all of its crawlers, instead of a crawler's"},
				{name: "window", choices: windowNames(), usage: "the time the terms are counted over", def: "24h"},
				{name: "n", arg: "N", usage: "how many terms, most frequent first", def: "20"},
			}},
		{name: "authors", args: []string{"[CRAWLER]"}, help: "a crawler's (or, with --user, a user's) authors with the most comments, exact, with their engagement (default 24h, 20)", run: authors,
			flags: []flagSpec{
				{name: "user", arg: "ID", usage: "a user's authors, over all of its crawlers, instead of a crawler's"},
				{name: "window", choices: windowNames(), usage: "the time the comments are counted over", def: "24h"},
				{name: "n", arg: "N", usage: "how many authors, most comments first", def: "20"},
			}},
		{name: "crawler suggest", args: []string{"ID"}, help: "candidate query terms co-occurring with a crawler's matches, best first", run: crawlerSuggest},
		{name: "crawler expand", args: []string{"ID", "TERM…"}, help: "OR terms into a crawler's query: (query) OR TERM…", run: crawlerExpand},
	}
	commands = append(commands, alertCommands()...)
	commands = append(commands, []*command{
		{name: "status", help: "one-screen summary: hub, nodes, crawlers by state", run: status},
		{name: "scaling", help: "autoscaling signal: live nodes, wanted subscribers and the spawn count they need", run: scaling},
		{name: "completion", args: []string{"SHELL"}, standalone: true, run: completion,
			help: "print a shell completion script (bash): source <(bwctl completion bash)"},
		// run answers help (and --help) before it looks a verb up.
		{name: "help", args: []string{"[COMMAND…]"}, standalone: true, help: "show this help, or a command's with its flags"},
	}...)
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

func userAdd(c *cli, in *input) error {
	req := api.UserCreate{Name: in.args[0]}
	if strings.TrimSpace(req.Name) == "" {
		return usagef("user name is empty")
	}
	if in.has("limit") {
		n, err := parseLimit("--limit", in.value("limit"))
		if err != nil {
			return err
		}
		req.CommentLimit = n
	}
	if in.has("retention") {
		if _, err := parseRetention(in.value("retention")); err != nil {
			return err
		}
		req.Retention = in.value("retention")
	}
	u, err := c.client.CreateUser(c.ctx, req)
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func userList(c *cli, _ *input) error {
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

func userShow(c *cli, in *input) error {
	id, err := parseID("user ID", in.args[0])
	if err != nil {
		return err
	}
	u, err := c.client.GetUser(c.ctx, id)
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func userSetLimit(c *cli, in *input) error {
	id, err := parseID("user ID", in.args[0])
	if err != nil {
		return err
	}
	n, err := parseLimit("limit N", in.args[1])
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
		{"retention", orDash(u.Retention)},
		{"created_at", timeText(u.CreatedAt)},
	})
}

func userSetRetention(c *cli, in *input) error {
	id, err := parseID("user ID", in.args[0])
	if err != nil {
		return err
	}
	if _, err := parseRetention(in.args[1]); err != nil {
		return err
	}
	r := in.args[1]
	u, err := c.client.UpdateUser(c.ctx, id, api.UserUpdate{Retention: &r})
	if err != nil {
		return err
	}
	return c.showUser(u)
}

// parseRetention checks a retention as the hub will read it.
func parseRetention(s string) (string, error) {
	if _, err := api.ParseRetention(s); err != nil {
		return "", usagef("%v", err)
	}
	return s, nil
}

// Crawlers.

func crawlerAdd(c *cli, in *input) error {
	userID, err := parseID("--user", in.value("user"))
	if err != nil {
		return err
	}
	// --user, --source and --query are required, and --source is one of
	// its choices: the parser checked.
	req := api.CrawlerCreate{UserID: userID, Source: in.value("source"), Name: in.value("name")}
	if req.Query = splitList(in.value("query")); len(req.Query) == 0 {
		return usagef("--query is empty")
	}
	if in.has("keywords") {
		req.Keywords = splitList(in.value("keywords"))
	}
	if in.has("limit") {
		if req.CommentLimit, err = parseLimit("--limit", in.value("limit")); err != nil {
			return err
		}
	}
	if in.has("retention") {
		if req.Retention, err = parseRetention(in.value("retention")); err != nil {
			return err
		}
	}
	enabled := !in.on("disabled")
	req.Enabled = &enabled
	cr, err := c.client.CreateCrawler(c.ctx, req)
	if err != nil {
		return err
	}
	return c.showCrawler(cr)
}

func crawlerShow(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
	if err != nil {
		return err
	}
	cr, err := c.client.GetCrawler(c.ctx, id)
	if err != nil {
		return err
	}
	return c.showCrawler(cr)
}

func crawlerList(c *cli, _ *input) error {
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
			itoa(cr.ID), itoa(cr.UserID), orDash(truncate(cr.Name, maxTextColumn)), cr.Source, cr.State, orDash(cr.Node),
			itoa(cr.Usage), limitText(cr.CommentLimit), truncate(strings.Join(cr.Query, ","), maxQueryColumn),
			orDash(truncate(cr.Error, maxErrorColumn)),
		})
	}
	return printTable(c.out, []string{"ID", "USER", "NAME", "SOURCE", "STATE", "NODE", "USAGE", "LIMIT", "QUERY", "ERROR"}, rows)
}

func crawlerUpdate(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
	if err != nil {
		return err
	}
	var req api.CrawlerUpdate
	if in.has("name") {
		name := in.value("name")
		req.Name = &name
	}
	if in.has("query") {
		if req.Query = splitList(in.value("query")); len(req.Query) == 0 {
			return usagef("--query is empty")
		}
	}
	if in.has("keywords") {
		req.Keywords = splitList(in.value("keywords")) // empty: clear the filter
	}
	if in.has("limit") {
		n, err := parseLimit("--limit", in.value("limit"))
		if err != nil {
			return err
		}
		req.CommentLimit = &n
	}
	if in.has("retention") {
		r, err := parseRetention(in.value("retention"))
		if err != nil {
			return err
		}
		req.Retention = &r
	}
	if req.Name == nil && req.Query == nil && req.Keywords == nil && req.CommentLimit == nil && req.Retention == nil {
		return usagef("nothing to update: give --name, --query, --keywords, --limit or --retention")
	}
	cr, err := c.client.UpdateCrawler(c.ctx, id, req)
	if err != nil {
		return err
	}
	return c.showCrawler(cr)
}

func crawlerEnable(enabled bool) func(c *cli, in *input) error {
	return func(c *cli, in *input) error {
		id, err := parseID("crawler ID", in.args[0])
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
func deleteByID(what string, del func(c *cli, id int64) error) func(c *cli, in *input) error {
	return func(c *cli, in *input) error {
		id, err := parseID(what+" ID", in.args[0])
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
		{"name", orDash(cr.Name)},
		{"source", cr.Source},
		{"query", strings.Join(cr.Query, ", ")},
		{"keywords", orDash(strings.Join(cr.Keywords, ", "))},
		{"query_canonical", cr.QueryCanonical},
		{"comment_limit", limitText(cr.CommentLimit)},
		{"retention", retentionText(cr)},
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

func nodeList(c *cli, _ *input) error {
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

func nodeDrain(c *cli, in *input) error {
	n, err := c.client.DrainNode(c.ctx, in.args[0])
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, n)
	}
	return printKV(c.out, [][2]string{
		{"id", n.ID},
		{"state", n.State},
		{"subscribers", strconv.Itoa(n.Subscribers)},
	})
}

func reload(c *cli, in *input) error {
	kind := "soft" // the parser saw exactly one of --hard and --soft
	if in.on("hard") {
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

func commentsRecent(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
	if err != nil {
		return err
	}
	n := 0
	if in.has("n") {
		v, err := strconv.Atoi(in.value("n"))
		if err != nil || v <= 0 {
			return usagef("--n must be a positive integer, got %s", quote(in.value("n")))
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

// retentionText says a crawler's retention and where it comes from.
func retentionText(cr api.Crawler) string {
	switch {
	case cr.Retention == "":
		return "-"
	case cr.RetentionFrom == "user":
		return cr.Retention + " (the user's)"
	default:
		return cr.Retention
	}
}

// commentsForget removes an author's comments everywhere.
func commentsForget(c *cli, in *input) error {
	author := strings.TrimSpace(in.value("author"))
	if author == "" {
		return usagef("--author is empty")
	}
	res, err := c.client.Forget(c.ctx, in.value("source"), author)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, res)
	}
	kv := [][2]string{{"removed", itoa(res.Removed)}}
	if res.Pending > 0 {
		kv = append(kv, [2]string{"pending_stores", strconv.Itoa(res.Pending)})
	}
	return printKV(c.out, kv)
}

// printComments prints comments as a table, one line each: their text and
// authors come from crawled sources and are cleaned for the terminal. A
// language the spawn detected is marked with '*'; a comment without a
// sentiment (a language the product does not score) shows '-'.
func printComments(w io.Writer, comments []api.Comment) error {
	rows := make([][]string, 0, len(comments))
	for _, cm := range comments {
		lang := truncate(orDash(cm.Lang), maxLangColumn)
		if cm.LangDetected {
			lang += "*"
		}
		rows = append(rows, []string{timeText(cm.PublishedAt), truncate(cm.ID, maxIDColumn), truncate(orDash(cm.Author), maxAuthorColumn),
			lang, orDash(api.SentimentLabel(cm.Sentiment)), truncate(cm.Text, maxTextColumn)})
	}
	return printTable(w, []string{"PUBLISHED", "ID", "AUTHOR", "LANG", "SENTIMENT", "TEXT"}, rows)
}

// maxLangColumn bounds the language column (a source's tag may be long:
// zh-hant-tw).
const maxLangColumn = 10

// stateOrder is how status lists crawler states: the lifecycle first.
var stateOrder = []string{
	api.StatePending, api.StateRunning, api.StateDegraded, api.StateQuotaWait, api.StateLimitReached,
	api.StateDisabled, api.StateFailed, api.StateMissing,
}

func status(c *cli, _ *input) error {
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
