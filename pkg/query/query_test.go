package query

import (
	"errors"
	"testing"
)

func TestCanonical_EqualQueriesGetEqualUUIDs(t *testing.T) {
	cases := []struct {
		name   string
		source string
		a, b   []string
	}{
		{"feed url case and default port", "rss", []string{"HTTP://Example.COM:80/feed#top"}, []string{"http://example.com/feed"}},
		{"feed order and duplicates", "rss", []string{"http://b.example/x", "http://a.example/y", "http://b.example/x"}, []string{"http://a.example/y", "http://b.example/x"}},
		{"empty path", "rss", []string{"https://example.com"}, []string{"https://example.com:443/"}},
		{"terms case and spaces", "twitter", []string{"  Golang ", "Black   Widow"}, []string{"black widow", "golang"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Canonical(tc.source, tc.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Canonical(tc.source, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if UUID(tc.source, a) != UUID(tc.source, b) {
				t.Fatalf("uuids differ: %v vs %v", a, b)
			}
		})
	}
}

func TestCanonical_SourceIsPartOfTheUUID(t *testing.T) {
	a, _ := Canonical("twitter", []string{"go"})
	b, _ := Canonical("stream", []string{"go"})
	if UUID("twitter", a) == UUID("stream", b) {
		t.Fatal("twitter and stream queries share a uuid")
	}
}

func TestCanonical_RejectsBadInput(t *testing.T) {
	cases := []struct {
		name   string
		source string
		terms  []string
	}{
		{"unknown source", "gopher", []string{"x"}},
		{"empty", "twitter", []string{" ", ""}},
		{"unparsable url", "rss", []string{"http://[::1"}},
		{"not http", "rss", []string{"ftp://example.com/feed"}},
		{"no host", "rss", []string{"http:///feed"}},
		{"credentials", "rss", []string{"http://user:pw@example.com/feed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Canonical(tc.source, tc.terms)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}
