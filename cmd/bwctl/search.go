package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// defaultSearchN is how many matches comments search prints by default.
const defaultSearchN = 20

// commentsSearch prints the newest comments of a crawler that a query
// matches, reading pages until it has --n of them or the search is done.
// A page stops at the hub's bound on what one request reads, so a rare
// query takes several pages; when more remain, stderr says how to go on
// (--json: next_cursor).
func commentsSearch(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
	if err != nil {
		return err
	}
	q := api.SearchQuery{Q: in.args[1]}
	if q.Since, err = parseTimeFlag(in, "since"); err != nil {
		return err
	}
	if q.Until, err = parseTimeFlag(in, "until"); err != nil {
		return err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return usagef("--since must be before --until")
	}
	n := defaultSearchN
	if in.has("n") {
		if n, err = strconv.Atoi(in.value("n")); err != nil || n <= 0 {
			return usagef("--n must be a positive integer, got %s", quote(in.value("n")))
		}
	}
	if in.has("cursor") {
		q.Cursor = in.value("cursor")
	}
	out := api.SearchPage{Comments: []api.Comment{}}
	for {
		q.Limit = min(n-len(out.Comments), api.MaxExportLimit)
		page, err := c.searchPage(id, q)
		if err != nil {
			return err
		}
		out.Comments = append(out.Comments, page.Comments...)
		out.Scanned += page.Scanned
		out.NextCursor = page.NextCursor
		if page.NextCursor == "" || len(out.Comments) >= n {
			break
		}
		q.Cursor = page.NextCursor
	}
	if c.json {
		return printJSON(c.out, out)
	}
	if err := printComments(c.out, out.Comments); err != nil {
		return err
	}
	if out.NextCursor != "" {
		fmt.Fprintf(c.errOut, "search: %d matches, %d comments read; more with --cursor %s\n", len(out.Comments), out.Scanned, out.NextCursor)
	}
	return nil
}

// searchPage reads one page within the command timeout.
func (c *cli) searchPage(id int64, q api.SearchQuery) (api.SearchPage, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	return c.client.SearchComments(ctx, id, q)
}
