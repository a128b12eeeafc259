package query

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse (or ParseFields) panic, that every error wraps
// ErrInvalid, and that the canonical form of a query parses back to
// itself: canonical(parse(canonical(q))) == canonical(q). It also runs the
// compilers, which must not panic on any valid query.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"golang", "rust OR golang", "(golang OR  Rust)", "a OR b c", "-a b", "NOT a b", "--a b",
		"golang,new release", `"new york" -#nyc lang:en from:@bob @alice`, "x -(a OR -b)",
		`"a, b",c`, "a (b", "a b)", `""`, "İSTANBUL \u212Aelvin", "(a OR b) (c OR d) -e", "\xff\xfe go",
		"logitech NEAR/2f keyboard", "b NEAR/0 a", `(apple OR "red fruit") NEAR/5 (#phone OR @apple)`,
		"a NEAR/1 b NEAR/2f c", "x -(a NEAR/3 b)", "-a NEAR/2 b", "a NEAR/2 (b c)", "a NEAR/x b", "NEAR/2",
		"a NEAR", "kube*", "ku*", "ku*be", "café* NEAR/1 学习", "*", "a NEAR/100 b", "a NEAR/1000 b",
		"subreddit:golang (generics OR kube*)", "subreddit:golang NEAR/2 x", "subreddit:gol*",
		"(subreddit:golang OR subreddit:rust) a NEAR/1f b", "-subreddit:rust x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// With a source's fields declared, the same guarantees hold.
		if q, err := ParseFields([]string{s}, []string{"subreddit"}); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseFields(%q) error %v does not wrap ErrInvalid", s, err)
			}
		} else if again, err := ParseFields([]string{q.String()}, []string{"subreddit"}); err != nil || again.String() != q.String() {
			t.Fatalf("canonical form %q of %q with fields parses to %v, %v", q, s, again, err)
		}
		q, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		c := q.String()
		again, err := Parse(c)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", c, s, err)
		}
		if again.String() != c {
			t.Fatalf("canonical form %q of %q parses to %q", c, s, again.String())
		}
		if UUIDOf("twitter", c) != q.UUID("twitter") {
			t.Fatalf("UUIDOf(%q) differs from Query.UUID", c)
		}
		// The relaxed form the services without proximity get covers the
		// query, and has no NEAR.
		if r := q.Relaxed(); r == nil || strings.Contains(r.String(), "NEAR/") {
			t.Fatalf("relaxed form of %q is %v", c, r)
		}
		// The negation normal form the sources compile from says the same.
		nnf := q.NNF()
		for _, parity := range []int{0, 1} {
			hit := func(a Atom) bool { return (len(a.Value)+int(a.Kind))%2 == parity }
			if nnf.Eval(hit) != q.Eval(hit) {
				t.Fatalf("negation normal form %q of %q evaluates differently", nnf, s)
			}
		}
	})
}
