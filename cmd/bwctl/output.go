package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// Column widths in tables; longer values are cut with "…" (--json shows
// them whole).
const (
	maxQueryColumn  = 60
	maxTextColumn   = 80
	maxAuthorColumn = 24
	maxIDColumn     = 24
	maxErrorColumn  = 60
	// maxCellColumn caps every table cell, so one long value (a user name
	// is up to 200 characters) cannot push the other columns off the screen.
	maxCellColumn = 80
)

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("unable to encode JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// printKV prints "key: value" lines with the values aligned.
func printKV(w io.Writer, kv [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	for _, p := range kv {
		fmt.Fprintf(tw, "%s:\t%s\n", p[0], clean(p[1]))
	}
	return tw.Flush()
}

// printTable prints an aligned table with a header row. Cells are cleaned
// and cut at maxCellColumn characters.
func printTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, s := range r {
			cells[i] = truncate(s, maxCellColumn)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// clean makes untrusted text (comment text and authors come from crawled
// sources) safe for a terminal and a table: control characters (tabs,
// newlines, escape sequences) and bidirectional overrides, which could
// disguise what is printed, become spaces.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			return ' '
		}
		return r
	}, s)
}

// oneLine makes an error reason fit on one line of stderr.
func oneLine(s string) string {
	return strings.Join(strings.Fields(clean(s)), " ")
}

// truncate cuts s to at most n characters (runes), marking the cut.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(clean(s)), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// quote shows user input in a message, escaped so it stays on one line.
func quote(s string) string { return strconv.Quote(s) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func limitText(n int64) string {
	if n == 0 {
		return "0 (none)"
	}
	return itoa(n)
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// ageText says how long ago t was, e.g. "1.2s ago".
func ageText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return d.String() + " ago"
}
