package main

import (
	"strconv"
	"strings"
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
