package main

import (
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// TestExpandQuery_TermsAsTheLanguageWritesThem: a term of several words
// is a phrase unless the language's operators or a prefix make it a
// query; proximity and prefixes expand a query as any term does, and a
// malformed one is refused with the parser's column.
func TestExpandQuery_TermsAsTheLanguageWritesThem(t *testing.T) {
	tests := []struct {
		terms []string
		want  string // canonical form of the expanded query
	}{
		{[]string{"web crawler"}, `"web crawler" OR golang`},
		{[]string{"logitech NEAR/2f keyboard"}, "golang OR logitech NEAR/2f keyboard"},
		{[]string{"keyboard NEAR/1 (logitech OR razer)"}, "(logitech OR razer) NEAR/1 keyboard OR golang"},
		{[]string{"kube*", "rust OR zig"}, "golang OR kube* OR rust OR zig"},
		{[]string{"kube* deploy"}, "deploy kube* OR golang"},
		{[]string{"java NOT script"}, "-script java OR golang"},
	}
	for _, tc := range tests {
		got, err := expandQuery("golang", tc.terms)
		if err != nil {
			t.Fatalf("expandQuery(%q): %v", tc.terms, err)
		}
		q, err := query.Parse(got)
		if err != nil {
			t.Fatalf("expandQuery(%q) = %q, which does not parse: %v", tc.terms, got, err)
		}
		if q.String() != tc.want {
			t.Errorf("expandQuery(%q) = %q, want %q", tc.terms, q, tc.want)
		}
	}
	for _, bad := range []struct{ term, want string }{
		{"logitech NEAR/x keyboard", `bad distance "NEAR/x"`},
		{"ku*", `prefix "ku*" is shorter than 3 letters at column 1`},
		{"a NEAR/2 -b", `over a negation`},
	} {
		_, err := expandQuery("golang", []string{bad.term})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("expandQuery(%q) = %v, want an error with %q", bad.term, err, bad.want)
		}
	}
}
