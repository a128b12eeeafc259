package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestPrintTable_AlignsAndCapsCells(t *testing.T) {
	long := strings.Repeat("é", 200)
	cases := []struct {
		name string
		rows [][]string
		want []string // the lines, right-trimmed
	}{
		{"aligned", [][]string{{"1", "acme", "active"}, {"22", "Globex Corporation", "limit_reached"}}, []string{
			"ID  NAME                STATE",
			"1   acme                active",
			"22  Globex Corporation  limit_reached",
		}},
		{"control characters", [][]string{{"1", "a\tb\x1b[31m", "x"}}, []string{
			"ID  NAME      STATE",
			"1   a b [31m  x",
		}},
		{"long cell cut", [][]string{{"1", long, "active"}}, []string{
			"ID  NAME" + strings.Repeat(" ", maxCellColumn-len("NAME")+2) + "STATE",
			"1   " + strings.Repeat("é", maxCellColumn-1) + "…  active",
		}},
		{"no rows", nil, []string{"ID  NAME  STATE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := printTable(&b, []string{"ID", "NAME", "STATE"}, tc.rows); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for i := range lines {
				lines[i] = strings.TrimRight(lines[i], " ")
			}
			if strings.Join(lines, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestPrintComments_CleansSourceText feeds comments straight to the printer:
// crawled text can hold bytes no feed served to the cluster tests can carry
// (an ESC is invalid XML), and none of them may reach the terminal.
func TestPrintComments_CleansSourceText(t *testing.T) {
	published := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		comment api.Comment
		want    string // the table row, right-trimmed
	}{
		{"escape sequence, tab, newline and bidi override",
			api.Comment{ID: "c1", Author: "mallory\x1b[2J", Text: "line one\nline two\twith tab \u202eevil", PublishedAt: published},
			"2024-06-01T10:00:00Z  c1  mallory [2J  -     -          line one line two with tab evil"},
		{"bidi isolates and carriage return",
			api.Comment{ID: "c2", Author: "\u2067eve\u2069", Text: "ok\r\u2066hidden\u2069 done", PublishedAt: published},
			"2024-06-01T10:00:00Z  c2  eve     -     -          ok hidden done"},
		{"no author, long text cut",
			api.Comment{ID: "c3", Text: strings.Repeat("x", maxTextColumn+10), PublishedAt: published},
			"2024-06-01T10:00:00Z  c3  -       -     -          " + strings.Repeat("x", maxTextColumn-1) + "…"},
		{"detected language and sentiment",
			api.Comment{ID: "c4", Author: "bob", Lang: "en", LangDetected: true, Sentiment: &api.Sentiment{Label: api.SentimentNegative, Score: -0.8}, Text: "awful", PublishedAt: published},
			"2024-06-01T10:00:00Z  c4  bob     en*   negative   awful"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := printComments(&b, []api.Comment{tc.comment}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if strings.ContainsAny(out, "\x1b\t\r\u202e\u2066\u2067\u2069") {
				t.Fatalf("the table carries control or bidi characters: %q", out)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "PUBLISHED") || strings.TrimRight(lines[1], " ") != tc.want {
				t.Fatalf("printed %q\nwant the row %q", out, tc.want)
			}

			// --json keeps the text as crawled.
			b.Reset()
			if err := printJSON(&b, []api.Comment{tc.comment}); err != nil {
				t.Fatal(err)
			}
			var back []api.Comment
			if err := json.Unmarshal([]byte(b.String()), &back); err != nil {
				t.Fatal(err)
			}
			if len(back) != 1 || back[0].Author != tc.comment.Author || back[0].Text != tc.comment.Text {
				t.Fatalf("JSON changed the comment: %+v", back)
			}
		})
	}
}
