package twitterv2

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// ruleText compiles a query of the language to its X rule.
func ruleText(t testing.TB, q string) string {
	t.Helper()
	parsed, err := query.ParseList([]string{q})
	if err != nil {
		t.Fatal(err)
	}
	r, err := compileRule(parsed)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// held turns a plan into the rules the app holds after it, with ids.
func held(p plan, existing []serverRule) []serverRule {
	var out []serverRule
	for _, r := range p.Keep {
		out = append(out, serverRule{ID: r.ID, Value: r.Value, Tag: r.Tag})
	}
	for i, r := range p.Add {
		out = append(out, serverRule{ID: "new" + strconv.Itoa(len(existing)+i), Value: r.Value, Tag: r.Tag})
	}
	return out
}

// checkPlan verifies the plan's rules respect both limits and carry every
// query that did not fail exactly once.
func checkPlan(t *testing.T, p plan, want []string, maxRules, maxLen int) {
	t.Helper()
	rules := append(slices.Clone(p.Keep), p.Add...)
	if len(rules) > maxRules {
		t.Fatalf("%d rules, at most %d allowed", len(rules), maxRules)
	}
	seen := map[string]int{}
	for _, r := range rules {
		if n := ruleLen(r.Value); n > maxLen {
			t.Fatalf("rule of %d characters, at most %d allowed: %q", n, maxLen, r.Value)
		}
		if r.Tag != tagOf(r.Value) {
			t.Fatalf("rule %q tagged %q", r.Value, r.Tag)
		}
		if r.Value != valueOf(r.Members) {
			t.Fatalf("rule %q does not state its members %q", r.Value, r.Members)
		}
		for _, m := range r.Members {
			seen[m]++
		}
	}
	for _, w := range want {
		_, failed := p.Failed[w]
		if failed == (seen[w] == 1) {
			t.Fatalf("query rule %q: failed=%v, in %d rules", w, failed, seen[w])
		}
	}
}

func TestPack_TwoThousandQueriesStayWithinLimits(t *testing.T) {
	var want []string
	for i := range 2000 {
		q := fmt.Sprintf("term%d", i)
		switch i % 4 {
		case 1:
			q = fmt.Sprintf(`"phrase number %d" OR #tag%d`, i, i)
		case 2:
			q = fmt.Sprintf("(alpha%d OR beta%d) -gamma lang:en", i, i)
		case 3:
			q = fmt.Sprintf("from:user%d word%d", i, i)
		}
		want = append(want, ruleText(t, q))
	}
	cases := []struct {
		name             string
		maxRules, maxLen int
		wantFailed       bool
	}{
		{"pro tier fits all", 1000, 1024, false},
		{"basic tier overflows", 25, 512, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pack(want, nil, tc.maxRules, tc.maxLen)
			checkPlan(t, p, want, tc.maxRules, tc.maxLen)
			if got := len(p.Failed) > 0; got != tc.wantFailed {
				t.Fatalf("failed queries %d, want some: %v", len(p.Failed), tc.wantFailed)
			}
			for w, err := range p.Failed {
				if !errors.Is(err, ErrNoRoom) {
					t.Fatalf("query rule %q failed with %v, want ErrNoRoom", w, err)
				}
			}
			if !tc.wantFailed && len(p.Add) > 2000/20 {
				t.Errorf("%d rules for 2000 short queries: packing is too loose", len(p.Add))
			}
			// The same queries against the rules now held change nothing.
			again := pack(want, held(p, nil), tc.maxRules, tc.maxLen)
			if len(again.Add) != 0 || len(again.Delete) != 0 {
				t.Fatalf("unchanged queries: %d added, %d deleted", len(again.Add), len(again.Delete))
			}
		})
	}
}

func TestPack_DiffTouchesOnlyWhatChanged(t *testing.T) {
	base := []string{ruleText(t, "golang"), ruleText(t, "rust lang"), ruleText(t, `"new release" -beta`), ruleText(t, "#kubernetes")}
	const maxLen = 40 // two or three queries a rule
	start := held(pack(base, nil, 100, maxLen), nil)
	if len(start) < 2 {
		t.Fatalf("want the base queries over several rules, got %v", start)
	}
	ruleOf := func(text string) serverRule {
		for _, r := range start {
			if ms, ok := splitMembers(r.Value, setOf(base)); ok && slices.Contains(ms, text) {
				return r
			}
		}
		t.Fatalf("no rule holds %q", text)
		return serverRule{}
	}
	foreign := serverRule{ID: "f1", Value: "someone else's rule", Tag: "theirs"}

	cases := []struct {
		name       string
		want       []string
		existing   []serverRule
		addMembers []string // members of the added rules, sorted
		deleted    []string
	}{
		{"nothing changed", base, start, nil, nil},
		{"one query added", append(slices.Clone(base), ruleText(t, "zig")), start, []string{ruleText(t, "zig")}, nil},
		{"one query removed", slices.Delete(slices.Clone(base), 0, 1), start,
			othersOf(ruleOf(base[0]), base, base[0]), []string{ruleOf(base[0]).ID}},
		{"foreign rule deleted", base, append(slices.Clone(start), foreign), nil, []string{"f1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pack(tc.want, tc.existing, 100, maxLen)
			checkPlan(t, p, tc.want, 100, maxLen)
			var addMembers []string
			for _, r := range p.Add {
				addMembers = append(addMembers, r.Members...)
			}
			slices.Sort(addMembers)
			slices.Sort(tc.addMembers)
			if !slices.Equal(addMembers, tc.addMembers) {
				t.Errorf("added rules carry %q, want %q", addMembers, tc.addMembers)
			}
			if !slices.Equal(p.Delete, tc.deleted) {
				t.Errorf("deleted %q, want %q", p.Delete, tc.deleted)
			}
		})
	}
}

func setOf(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// othersOf lists the members of r other than gone.
func othersOf(r serverRule, all []string, gone string) []string {
	ms, _ := splitMembers(r.Value, setOf(all))
	return slices.DeleteFunc(ms, func(m string) bool { return m == gone })
}

func TestPack_QueryTooLongForARuleFails(t *testing.T) {
	long := ruleText(t, "averyveryverylongword anotherveryverylongword")
	p := pack([]string{long, "go"}, nil, 10, 30)
	if err := p.Failed[long]; !errors.Is(err, ErrRuleTooLong) {
		t.Fatalf("long query failed with %v, want ErrRuleTooLong", err)
	}
	checkPlan(t, p, []string{long, "go"}, 10, 30)
}

func TestSplitMembers_ReadsBackPackedValues(t *testing.T) {
	members := []string{`"a (b" c`, `x OR y`, `(p OR q) r`, `#t`}
	v := valueOf(members)
	got, ok := splitMembers(v, setOf(members))
	slices.Sort(got)
	want := slices.Sorted(slices.Values(members))
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("splitMembers(%q) = %q, %v; want %q", v, got, ok, want)
	}
	for _, bad := range []string{"(x OR y) OR (#t) extra", "(x OR y) OR (unknown)", "(x OR y) OR (#t)", "(x OR y"} {
		if ms, ok := splitMembers(bad, setOf(members)); ok {
			t.Errorf("splitMembers(%q) = %q, want not ours", bad, ms)
		}
	}
}
