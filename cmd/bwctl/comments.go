package main

import (
	"io"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
)

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
