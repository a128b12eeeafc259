package query

import (
	"errors"
	"testing"
)

func TestURLs_EqualListsGetEqualUUIDs(t *testing.T) {
	cases := []struct {
		name string
		a, b []string
	}{
		{"feed url case and default port", []string{"HTTP://Example.COM:80/feed#top"}, []string{"http://example.com/feed"}},
		{"feed order and duplicates", []string{"http://b.example/x", "http://a.example/y", "http://b.example/x"}, []string{"http://a.example/y", "http://b.example/x"}},
		{"empty path", []string{"https://example.com"}, []string{"https://example.com:443/"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := URLs(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := URLs(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if UUID("rss", a) != UUID("rss", b) {
				t.Fatalf("uuids differ: %v vs %v", a, b)
			}
		})
	}
}

func TestUUID_SourceIsPartOfTheUUID(t *testing.T) {
	if UUID("twitter", []string{"go"}) == UUID("stream", []string{"go"}) {
		t.Fatal("twitter and stream queries share a uuid")
	}
}

func TestURLs_RejectsBadInput(t *testing.T) {
	cases := []struct {
		name  string
		terms []string
	}{
		{"empty", []string{" ", ""}},
		{"unparsable url", []string{"http://[::1"}},
		{"not http", []string{"ftp://example.com/feed"}},
		{"no host", []string{"http:///feed"}},
		{"credentials", []string{"http://user:pw@example.com/feed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := URLs(tc.terms)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}
