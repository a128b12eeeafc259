package query

import (
	"slices"
	"testing"
)

func TestQuery_Match(t *testing.T) {
	for _, tt := range []struct {
		query string
		doc   Doc
		terms []string
		ok    bool
	}{
		{"golang", Doc{Text: "Go 1.24: golang news"}, []string{"golang"}, true},
		{"golang", Doc{Text: "golangs everywhere"}, nil, false},
		{`"new release" OR #go`, Doc{Text: "A NEW RELEASE of #go"}, []string{`"new release"`, "#go"}, true},
		{"golang -rust", Doc{Text: "golang and rust"}, nil, false},
		{"golang lang:en", Doc{Text: "golang", Lang: "en-GB"}, []string{"golang"}, true},
		{"golang lang:en", Doc{Text: "golang", Lang: "de"}, nil, false},
		{"from:alice.bsky.social OR from:did:plc:abc", Doc{Text: "hi", Author: "@Alice.bsky.social"}, []string{"from:alice.bsky.social"}, true},
		{"from:did:plc:abc", Doc{Text: "hi", Author: "bob", AuthorID: "did:plc:abc"}, []string{"from:did:plc:abc"}, true},
	} {
		q, err := Parse(tt.query)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.query, err)
		}
		terms, ok := q.Match(tt.doc)
		if ok != tt.ok || !slices.Equal(terms, tt.terms) {
			t.Errorf("%q on %+v = %q, %v; want %q, %v", tt.query, tt.doc, terms, ok, tt.terms, tt.ok)
		}
	}
}
