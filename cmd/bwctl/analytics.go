package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// terms prints a crawler's or a user's most frequent terms.
func terms(c *cli, args []string, l line) error {
	window := l.flags["window"]
	if l.has("window") {
		if _, ok := api.Windows[window]; !ok {
			return usagef("--window must be 1h, 24h or 7d, got %s", quote(window))
		}
	}
	n := 0
	if l.has("n") {
		v, err := strconv.Atoi(l.flags["n"])
		if err != nil || v <= 0 {
			return usagef("--n must be a positive integer, got %s", quote(l.flags["n"]))
		}
		n = v
	}
	var out api.Terms
	switch {
	case len(args) == 1 && !l.has("user"):
		id, err := parseID("crawler ID", args[0])
		if err != nil {
			return err
		}
		if out, err = c.client.CrawlerTerms(c.ctx, id, window, n); err != nil {
			return err
		}
	case len(args) == 0 && l.has("user"):
		id, err := parseID("user ID", l.flags["user"])
		if err != nil {
			return err
		}
		if out, err = c.client.UserTerms(c.ctx, id, window, n); err != nil {
			return err
		}
	default:
		return usagef("usage: bwctl terms CRAWLER|--user ID [--window 1h|24h|7d] [--n N]")
	}
	if c.json {
		return printJSON(c.out, out)
	}
	rows := make([][]string, 0, len(out.Terms))
	for _, t := range out.Terms {
		rows = append(rows, []string{truncate(t.Term, maxTextColumn), itoa(t.Count)})
	}
	return printTable(c.out, []string{"TERM", "COUNT (" + out.Window + ")"}, rows)
}

// crawlerSuggest prints a crawler's candidate query terms.
func crawlerSuggest(c *cli, args []string, _ line) error {
	id, err := parseID("crawler ID", args[0])
	if err != nil {
		return err
	}
	out, err := c.client.CrawlerSuggestions(c.ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, out)
	}
	rows := make([][]string, 0, len(out.Terms))
	for _, s := range out.Terms {
		rows = append(rows, []string{truncate(s.Term, maxTextColumn), strconv.FormatFloat(s.Score, 'f', 2, 64), itoa(s.Count)})
	}
	return printTable(c.out, []string{"TERM", "SCORE", "SEEN"}, rows)
}

// crawlerExpand ORs terms into a crawler's query: a normal update, which
// the hub validates and canonicalizes.
func crawlerExpand(c *cli, args []string, _ line) error {
	id, err := parseID("crawler ID", args[0])
	if err != nil {
		return err
	}
	cr, err := c.client.GetCrawler(c.ctx, id)
	if err != nil {
		return err
	}
	if cr.Source == api.SourceRSS {
		return usagef("crawler %d reads rss feeds: change its filter with crawler update --keywords", id)
	}
	q, err := expandQuery(cr.QueryCanonical, args[1:])
	if err != nil {
		return err
	}
	updated, err := c.client.UpdateCrawler(c.ctx, id, api.CrawlerUpdate{Query: []string{q}})
	if err != nil {
		return err
	}
	return c.showCrawler(updated)
}

// expandQuery is (canonical) OR t1 OR t2 …, each term written as the query
// language reads it: a term with a space as a phrase.
func expandQuery(canonical string, terms []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "(%s)", canonical)
	for _, t := range terms {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || strings.ContainsAny(t, `"()`):
			return "", usagef("term %s cannot be added: give a word, a #tag, an @user or a phrase", quote(t))
		case strings.ContainsAny(t, " \t"):
			fmt.Fprintf(&b, " OR %q", strings.Join(strings.Fields(t), " "))
		default:
			b.WriteString(" OR " + t)
		}
	}
	return b.String(), nil
}

// commentsThread prints a comment's conversation, oldest first.
func commentsThread(c *cli, args []string, _ line) error {
	id, err := parseID("crawler ID", args[0])
	if err != nil {
		return err
	}
	th, err := c.client.Thread(c.ctx, id, args[1])
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, th)
	}
	rows := make([][]string, 0, len(th.Comments))
	for _, cm := range th.Comments {
		mark := " "
		if cm.ID == args[1] {
			mark = "*"
		}
		rows = append(rows, []string{mark, timeText(cm.PublishedAt), truncate(cm.ID, maxIDColumn), truncate(orDash(cm.Author), maxAuthorColumn),
			truncate(orDash(cm.ReplyTo), maxIDColumn), truncate(cm.Text, maxTextColumn)})
	}
	return printTable(c.out, []string{"", "PUBLISHED", "ID", "AUTHOR", "REPLY TO", "TEXT"}, rows)
}
