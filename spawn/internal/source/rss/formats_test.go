package rss

import "testing"

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
