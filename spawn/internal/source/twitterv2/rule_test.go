package twitterv2

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
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

// TestCompileRule_Proximity: X has no proximity operator and no wildcard;
// the rule is the widest X can state, and a query X could take only whole
// is refused.
func TestCompileRule_Proximity(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"logitech NEAR/2f keyboard", "keyboard logitech"},
		{"(apple OR orange) NEAR/3 (phone OR smartphone)", "(apple OR orange) (phone OR smartphone)"},
		{`("new york" NEAR/1 pizza) NEAR/5 #food`, `"new york" #food pizza`},
		{"golang -(java NEAR/2 script)", "golang"},
		{"golang -(java NEAR/2 script) -rust", "-rust golang"},
		{"kube* deploy", "deploy"},
		{"kube* NEAR/2 deploy", "deploy"},
		{"golang -kube*", "golang"},
		{"(kube* OR docker) lang:en from:bob", "from:bob lang:en"},
		{"(docker NEAR/1 swarm) OR (kube* k8s)", "docker swarm OR k8s"},
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
	for _, in := range []string{"kube*", "kube* OR docker", "kube* lang:en", "kube* -docker", "(kube* OR k8s) NEAR/2 deploy* -x"} {
		if rule, err := compileRule(mustParse(t, in)); !errors.Is(err, query.ErrUnsupported) {
			t.Errorf("compileRule(%q) = %q, %v; want query.ErrUnsupported", in, rule, err)
		}
	}
}

// TestCompileRule_Covers checks, with the local X server's own reading of
// the rule syntax, that a compiled rule selects every post its query
// matches.
func TestCompileRule_Covers(t *testing.T) {
	spawntest.CheckCoverItems(t, func(q *query.Query) (func(it spawntest.CoverItem) bool, error) {
		rule, err := compileRule(q)
		if err != nil {
			return nil, err
		}
		if _, err := xv2.RuleSelects(rule, "", "bob", "en"); err != nil {
			t.Fatalf("X refuses the rule %s of %q: %v", rule, q, err)
		}
		return func(it spawntest.CoverItem) bool {
			ok, _ := xv2.RuleSelects(rule, it.Lower, it.Author, it.Lang)
			return ok
		}, nil
	})
}
