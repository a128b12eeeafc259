package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// windowNames are the analytics windows the hub serves, shortest first.
func windowNames() []string {
	names := slices.Collect(maps.Keys(api.Windows))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(api.Windows[a], api.Windows[b]) })
	return names
}

// topN reads --n, the number of rows asked for (0: the hub's default).
func topN(in *input) (int, error) {
	if !in.has("n") {
		return 0, nil
	}
	v, err := strconv.Atoi(in.value("n"))
	if err != nil || v <= 0 {
		return 0, usagef("--n must be a positive integer, got %s", quote(in.value("n")))
	}
	return v, nil
}

// crawlerOrUser reads whose analytics a verb shows: a crawler given as its
// argument, or a user given by --user, not both.
func crawlerOrUser(in *input) (id int64, user bool, err error) {
	switch {
	case len(in.args) == 1 && !in.has("user"):
		id, err = parseID("crawler ID", in.args[0])
		return id, false, err
	case len(in.args) == 0 && in.has("user"):
		id, err = parseID("user ID", in.value("user"))
		return id, true, err
	default:
		return 0, false, in.usage()
	}
}

// terms prints a crawler's or a user's most frequent terms.
func terms(c *cli, in *input) error {
	window := in.value("window") // one of windowNames: the parser checked
	n, err := topN(in)
	if err != nil {
		return err
	}
	id, user, err := crawlerOrUser(in)
	if err != nil {
		return err
	}
	var out api.Terms
	if user {
		out, err = c.client.UserTerms(c.ctx, id, window, n)
	} else {
		out, err = c.client.CrawlerTerms(c.ctx, id, window, n)
	}
	if err != nil {
		return err
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

// authors prints a crawler's or a user's authors with the most comments.
func authors(c *cli, in *input) error {
	window := in.value("window") // one of windowNames: the parser checked
	n, err := topN(in)
	if err != nil {
		return err
	}
	id, user, err := crawlerOrUser(in)
	if err != nil {
		return err
	}
	var out api.Authors
	if user {
		out, err = c.client.UserAuthors(c.ctx, id, window, n)
	} else {
		out, err = c.client.CrawlerAuthors(c.ctx, id, window, n)
	}
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, out)
	}
	rows := make([][]string, 0, len(out.Authors))
	for _, a := range out.Authors {
		rows = append(rows, []string{truncate(a.Author, maxTextColumn), orDash(truncate(a.AuthorID, maxTextColumn)), itoa(a.Comments),
			itoa(a.Engagement.Reposts), itoa(a.Engagement.Likes)})
	}
	if err := printTable(c.out, []string{"AUTHOR", "AUTHOR ID", "COMMENTS (" + out.Window + ")", "REPOSTS", "LIKES"}, rows); err != nil {
		return err
	}
	if out.Folded > 0 {
		_, err := fmt.Fprintf(c.out, "(%s comments of authors folded away in the busiest hours are not counted above)\n", itoa(out.Folded))
		return err
	}
	return nil
}

// crawlerSuggest prints a crawler's candidate query terms.
func crawlerSuggest(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
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
func crawlerExpand(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
	if err != nil {
		return err
	}
	cr, err := c.client.GetCrawler(c.ctx, id)
	if err != nil {
		return err
	}
	if readsURLs(cr.Source) {
		return usagef("crawler %d reads %s feeds: change its filter with crawler update --keywords", id, cr.Source)
	}
	q, err := expandQuery(cr.QueryCanonical, in.args[1:])
	if err != nil {
		return err
	}
	updated, err := c.client.UpdateCrawler(c.ctx, id, api.CrawlerUpdate{Query: []string{q}})
	if err != nil {
		return err
	}
	return c.showCrawler(updated)
}

// expandQuery is (canonical) OR (t1) OR (t2) …, each term as the query
// language writes it: a word, a "phrase", a #tag, an @user, from:, a
// prefix (kube*), or any query in its syntax; a term with a space and no
// quotes, parentheses, operator (OR, AND, NOT, NEAR/n) or prefix is a
// phrase, as the shell hands over black widow typed in quotes, while
// "logitech NEAR/2 keyboard" stays the query it is. A term the language
// does not read is refused here, saying why.
func expandQuery(canonical string, terms []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "(%s)", canonical)
	for _, t := range terms {
		t = strings.TrimSpace(t)
		if t == "" {
			return "", usagef("an empty term cannot be added: give a word, a \"phrase\", a #tag or an @user")
		}
		if strings.ContainsAny(t, " \t") && !strings.ContainsAny(t, `"()`) && !hasOperator(t) {
			t = `"` + strings.Join(strings.Fields(t), " ") + `"`
		}
		q, err := query.Parse(t)
		if err != nil {
			return "", usagef("term %s cannot be added: %v", quote(t), err)
		}
		fmt.Fprintf(&b, " OR (%s)", q)
	}
	return b.String(), nil
}

// hasOperator reports whether a term of several words uses the query
// language's operators (OR, AND, NOT, NEAR/n, a prefix's "*"), which make
// it a query rather than a phrase.
func hasOperator(t string) bool {
	for _, f := range strings.Fields(t) {
		if f == "OR" || f == "AND" || f == "NOT" || f == "NEAR" || strings.HasPrefix(f, "NEAR/") || strings.HasSuffix(f, "*") {
			return true
		}
	}
	return false
}

// commentsThread prints a comment's conversation, oldest first.
func commentsThread(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
	if err != nil {
		return err
	}
	th, err := c.client.Thread(c.ctx, id, in.args[1])
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, th)
	}
	rows := make([][]string, 0, len(th.Comments))
	for _, cm := range th.Comments {
		mark := " "
		if cm.ID == in.args[1] {
			mark = "*"
		}
		rows = append(rows, []string{mark, timeText(cm.PublishedAt), truncate(cm.ID, maxIDColumn), truncate(orDash(cm.Author), maxAuthorColumn),
			truncate(orDash(cm.ReplyTo), maxIDColumn), truncate(cm.Text, maxTextColumn)})
	}
	return printTable(c.out, []string{"", "PUBLISHED", "ID", "AUTHOR", "REPLY TO", "TEXT"}, rows)
}
