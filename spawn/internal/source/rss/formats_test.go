package rss

import (
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// TestPersonText reads the name RSS pairs with an address, and keeps any
// other text as written.
func TestPersonText(t *testing.T) {
	tests := map[string]string{
		"email@example.org (Author Name)": "Author Name",
		"Author Name (email@example.org)": "Author Name",
		"Author Name <email@example.org>": "Author Name",
		"  email@example.org  ":           "email@example.org",
		"Jane Doe (Reuters)":              "Jane Doe (Reuters)",
		"Jürgen Schmidt":                  "Jürgen Schmidt",
		"(email@example.org)":             "(email@example.org)",
		"a@b (c) (d@e)":                   "a@b (c)",
		"":                                "",
	}
	for in, want := range tests {
		if got := personText(in); got != want {
			t.Errorf("personText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFeed_AuthorKeptAsWritten stores an RSS author whose parentheses hold
// no address whole: the parser alone finds neither a name nor an address
// in "Jane Doe (Reuters)" and drops it.
func TestFeed_AuthorKeptAsWritten(t *testing.T) {
	fs := newFeedServer(t, `<?xml version="1.0"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>t</title>`+
		`<item><guid>a</guid><title>one</title><dc:creator>Jane Doe (Reuters)</dc:creator></item>`+
		`<item><guid>b</guid><title>two</title><author>jane@example.org (Jane Doe)</author></item>`+
		`</channel></rss>`)
	_, rec := start(t, testOptions(), fs.URL)
	testkit.WaitFor(t, waitDeadline, "both items", func() bool { return len(rec.all()) == 2 })
	want := map[string]string{"a": "Jane Doe (Reuters)", "b": "Jane Doe"}
	for _, it := range rec.all() {
		if it.Author != want[it.ID] {
			t.Errorf("item %s: author %q, want %q", it.ID, it.Author, want[it.ID])
		}
	}
}
