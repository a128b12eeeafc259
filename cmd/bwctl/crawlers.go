package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
)

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
