package twitterv1

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

func mustParse(t testing.TB, s string) *query.Query {
	t.Helper()
	q, err := query.Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return q
}

func TestCompileTrack(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"golang", []string{"golang"}},
		{"golang,new release", []string{"golang", "new release"}},
		{"a OR b c", []string{"a", "b c"}},
		{"golang -java lang:en", []string{"golang"}},
		{`"new york" #nyc @mayor`, []string{"#nyc @mayor new york"}},
		{"(a OR b) (c OR d)", []string{"a c", "a d", "b c", "b d"}},
		{"a OR a b", []string{"a"}},
		{"go from:alice", []string{"go"}},
		{`"hello, world"`, []string{"hello world"}},
		// Track has no proximity: a NEAR is the AND of its operands, and
		// a negated one is left out.
		{"logitech NEAR/2f keyboard", []string{"keyboard logitech"}},
		{"(apple OR orange) NEAR/3 phone", []string{"apple phone", "orange phone"}},
		{"golang -(java NEAR/1 script)", []string{"golang"}},
		// Nor wildcards: a prefix is no term.
		{"kube* deploy", []string{"deploy"}},
		{"(kube* NEAR/1 deploy) OR docker", []string{"deploy", "docker"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := compileTrack(mustParse(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	for _, in := range []string{"from:alice", "golang OR from:alice", strings.Repeat("x", 61), "kube*", "kube* OR docker", "kube* NEAR/2 k8s*"} {
		if got, err := compileTrack(mustParse(t, in)); !errors.Is(err, query.ErrUnsupported) {
			t.Errorf("compileTrack(%q) = %q, %v, want query.ErrUnsupported", in, got, err)
		}
	}
}

func TestTrackTerms_FitTheLimits(t *testing.T) {
	words := make([]string, 30)
	for i := range words {
		words[i] = strings.Repeat(string(rune('a'+i%26)), 5+i%3) + "x"
	}
	got, err := compileTrack(mustParse(t, strings.Join(words, " ")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) > trackMaxTermBytes {
		t.Fatalf("got %q, want one term of at most %d bytes", got, trackMaxTermBytes)
	}
	// Five groups of five: 3,125 conjunctions, more than track takes; the
	// cover stays within the limit by leaving some groups out.
	var b strings.Builder
	for g := range 5 {
		b.WriteString("(")
		for i := range 5 {
			if i > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString(string(rune('a'+g)) + string(rune('a'+i)))
		}
		b.WriteString(") ")
	}
	got, err = compileTrack(mustParse(t, b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > trackMaxTerms {
		t.Fatalf("%d terms, at most %d", len(got), trackMaxTerms)
	}
}

// TestCompileTrack_Covers checks that every text a query matches contains
// all the words of one of its track terms.
func TestCompileTrack_Covers(t *testing.T) {
	spawntest.CheckCover(t, func(q *query.Query) (func(lower string) bool, error) {
		terms, err := compileTrack(q)
		return func(lower string) bool {
			return slices.ContainsFunc(terms, func(term string) bool {
				for _, w := range strings.Fields(term) {
					if !query.ContainsWord(lower, w) {
						return false
					}
				}
				return true
			})
		}, err
	})
}
