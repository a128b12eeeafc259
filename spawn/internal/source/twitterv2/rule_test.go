package twitterv2

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

func mustParse(t testing.TB, s string) *query.Query {
	t.Helper()
	q, err := query.Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return q
}

func TestCompileRule(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"golang", "golang"},
		{"a OR b c", "a OR b c"},
		{"(a OR b) c", "(a OR b) c"},
		{`"New York" -#nyc lang:EN`, `"new york" -#nyc lang:en`},
		{"x -(a OR b)", "-a -b x"},
		{"x -(a b)", "(-a OR -b) x"},
		{"c++ from:alice", `"c++" from:alice`},
		{"from:alice", "from:alice"},
		// X has no sentiment: the rule widens, the spawn checks it.
		{"golang sentiment:negative", "golang"},
		{"golang -sentiment:positive", "golang"},
		{"x -(a sentiment:negative)", "x"},
		{"x (a OR b sentiment:neutral)", "(a OR b) x"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := compileRule(mustParse(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	var long []string
	for i := range query.MaxAtoms {
		long = append(long, fmt.Sprintf("word%d", i))
	}
	for _, in := range []string{"@alice.bsky.social", strings.Join(long, " ")} {
		if _, err := compileRule(mustParse(t, in)); !errors.Is(err, query.ErrUnsupported) {
			t.Errorf("compileRule(%q): got %v, want query.ErrUnsupported", in, err)
		}
	}
}
