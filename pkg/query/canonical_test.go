package query

import (
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestUUID_EqualQueriesShareIt(t *testing.T) {
	tests := []struct{ a, b string }{
		{"rust OR golang", "(golang OR  Rust)"},
		{"golang,new release", "golang OR (release AND new)"},
		{"a -b", "NOT b a"},
		{"#Go lang:EN", "lang:en AND #go"},
	}
	for _, tc := range tests {
		qa, err := Parse(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		qb, err := Parse(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if qa.UUID(api.SourceTwitter) != qb.UUID(api.SourceTwitter) {
			t.Errorf("%q and %q have different uuids", tc.a, tc.b)
		}
		if qa.UUID(api.SourceTwitter) == qa.UUID(api.SourceStream) {
			t.Errorf("%q has the same uuid for twitter and stream", tc.a)
		}
		if UUIDOf(api.SourceTwitter, qa.String()) != qa.UUID(api.SourceTwitter) {
			t.Errorf("UUIDOf(%q) differs from Query.UUID", qa)
		}
	}
}

func TestUUID_DifferentQueriesDiffer(t *testing.T) {
	seen := map[string]string{}
	for _, s := range []string{"a b", "a OR b", "\"a b\"", "a -b", "-a b", "#a b", "a,b", "a,b c", "a b,c", "a OR b c", "(a OR b) c", "from:a", "@a"} {
		q, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		u := q.UUID(api.SourceTwitter).String()
		if prev, ok := seen[u]; ok && prev != q.String() {
			t.Errorf("%q and %q share uuid %s", prev, q.String(), u)
		}
		seen[u] = q.String()
	}
}

func TestUUID_LegacyListsKeepTheirUUID(t *testing.T) {
	tests := []struct {
		name  string
		terms []string
		keeps bool
	}{
		{"one word", []string{"Golang"}, true},
		{"words", []string{"golang", "rust"}, true},
		{"sorted and of words", []string{"golang", "new release"}, true},
		{"tags and users", []string{"#golang", "@gopher"}, true},
		{"duplicates and case", []string{"Rust", "golang", "rust"}, true},
		{"unsorted and: its words are sorted now", []string{"release notes"}, false},
		{"a term the language reads differently", []string{"-java"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, err := LegacyUUID(api.SourceTwitter, tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			q, err := ParseList(tc.terms)
			if err != nil {
				if tc.keeps {
					t.Fatal(err)
				}
				return
			}
			if got := q.UUID(api.SourceTwitter) == old; got != tc.keeps {
				t.Fatalf("%q (canonical %q) keeps its uuid: %v, want %v", tc.terms, q, got, tc.keeps)
			}
		})
	}
}
