package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/commentexport"
)

// progressEvery is how often comments export reports progress on stderr.
const progressEvery = time.Second

// exportPageSize is how many comments one export request asks for.
var exportPageSize = api.DefaultExportLimit

// exportFormats are the formats comments export writes, the default first.
var exportFormats = commentexport.Formats

// commentsExport streams every stored comment of a crawler to stdout, page
// by page: bwctl never holds more than one page, so an export of millions
// of comments runs in constant memory. Each page gets the command timeout
// of its own; the export as a whole runs until done or interrupted.
func commentsExport(c *cli, in *input) error {
	id, err := parseID("crawler ID", in.args[0])
	if err != nil {
		return err
	}
	q := api.ExportQuery{Limit: exportPageSize}
	if q.Since, err = parseTimeFlag(in, "since"); err != nil {
		return err
	}
	if q.Until, err = parseTimeFlag(in, "until"); err != nil {
		return err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return usagef("--since must be before --until")
	}
	format := exportFormats[0]
	if in.has("format") {
		format = in.value("format")
	}
	out := bufio.NewWriterSize(c.out, 64<<10)
	w, err := commentexport.New(format, out)
	if err != nil {
		return usagef("--format must be one of %s, got %s", strings.Join(exportFormats, ", "), quote(format))
	}

	total, pages := 0, 0
	last := time.Now()
	for {
		page, err := c.exportPage(id, q)
		if err != nil {
			_ = out.Flush()
			return err
		}
		if err := w.Write(page.Comments); err != nil {
			return fmt.Errorf("unable to write the export: %w", err)
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("unable to write the export: %w", err)
		}
		total += len(page.Comments)
		pages++
		if page.NextCursor == "" {
			fmt.Fprintf(c.errOut, "export: crawler %d: %d comments in %d pages\n", id, total, pages)
			return nil
		}
		if time.Since(last) >= progressEvery {
			fmt.Fprintf(c.errOut, "export: crawler %d: %d comments so far\n", id, total)
			last = time.Now()
		}
		q.Cursor = page.NextCursor
	}
}

// exportPage reads one page within the command timeout.
func (c *cli) exportPage(id int64, q api.ExportQuery) (api.CommentPage, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	return c.client.ExportComments(ctx, id, q)
}

// parseTimeFlag reads an RFC 3339 time (or a UTC day, YYYY-MM-DD) flag.
func parseTimeFlag(in *input, name string) (time.Time, error) {
	if !in.has(name) {
		return time.Time{}, nil
	}
	s := in.value(name)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("--%s must be an RFC 3339 time like 2024-05-01T00:00:00Z or a day like 2024-05-01, got %s", name, quote(s))
}
