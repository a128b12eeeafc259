package twitterv2

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// tagPrefix starts the tag of every rule this package makes; the rest is a
// hash of the rule's value, so the tag names the rule's queries without
// spelling them out.
const tagPrefix = "bw:"

// tagHashHex is how many hex digits of the value's hash a tag keeps.
const tagHashHex = 16

// orSep joins the queries of a packed rule.
const orSep = " OR "

// ruleLen is a rule's length as X counts it: in characters.
func ruleLen(s string) int { return utf8.RuneCountInString(s) }

// tagOf is the tag of a rule with value v.
func tagOf(v string) string {
	sum := sha256.Sum256([]byte(v))
	return tagPrefix + hex.EncodeToString(sum[:])[:tagHashHex]
}

// valueOf is the rule carrying members (rule texts of single queries): the
// one text as it is, several sorted and OR-ed in parentheses.
func valueOf(members []string) string {
	if len(members) == 1 {
		return members[0]
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(orSep)
		}
		b.WriteByte('(')
		b.WriteString(m)
		b.WriteByte(')')
	}
	return b.String()
}

// packedLen is the length of valueOf(members) from the members' lengths.
func packedLen(lens []int) int {
	if len(lens) == 1 {
		return lens[0]
	}
	n := 0
	for _, l := range lens {
		n += l + 2
	}
	return n + len(orSep)*(len(lens)-1)
}

// serverRule is a rule as X lists it.
type serverRule struct {
	ID    string `json:"id"`
	Value string `json:"value"`
	Tag   string `json:"tag,omitempty"`
}

// packedRule is a rule of a plan: its value, tag and member rule texts;
// ID is set for a rule the service already has.
type packedRule struct {
	ID      string
	Value   string
	Tag     string
	Members []string
}

// plan is what a reconcile does to the app's rules.
type plan struct {
	Keep   []packedRule
	Add    []packedRule
	Delete []string         // ids of rules to delete
	Failed map[string]error // member rule text → why it has no rule
}

// splitMembers reads a value this package made back into its members,
// given the wanted rule texts; ok is false for any other value.
func splitMembers(v string, want map[string]bool) ([]string, bool) {
	if want[v] {
		return []string{v}, true
	}
	var members []string
	for i := 0; i < len(v); {
		if v[i] != '(' {
			return nil, false
		}
		depth, quoted, end := 0, false, -1
		for j := i; j < len(v) && end < 0; j++ {
			switch c := v[j]; {
			case c == '"':
				quoted = !quoted
			case quoted:
			case c == '(':
				depth++
			case c == ')':
				depth--
				if depth == 0 {
					end = j
				}
			}
		}
		if end < 0 {
			return nil, false
		}
		m := v[i+1 : end]
		if !want[m] {
			return nil, false
		}
		members = append(members, m)
		i = end + 1
		if i < len(v) {
			if !strings.HasPrefix(v[i:], orSep) {
				return nil, false
			}
			i += len(orSep)
		}
	}
	if len(members) < 2 || valueOf(members) != v {
		return nil, false
	}
	return members, true
}

// pack plans the app's rules for the wanted rule texts, starting from the
// rules it has: a rule made by this package whose queries are all still
// wanted (and unclaimed by an earlier rule) stays; every other rule goes;
// the queries without a rule are packed into new ones, longest first into
// the first that has room. When that needs more than maxRules rules, every
// wanted query is packed afresh (existing rules of the same value still
// stay) and the queries of the rules past maxRules fail with ErrNoRoom.
func pack(want []string, existing []serverRule, maxRules, maxLen int) plan {
	p := plan{Failed: map[string]error{}}
	wantSet := make(map[string]bool, len(want))
	var fit []string
	for _, w := range want {
		if wantSet[w] {
			continue
		}
		if n := ruleLen(w); n > maxLen {
			p.Failed[w] = fmt.Errorf("%w: the query's rule has %d characters, the app's rules at most %d", ErrRuleTooLong, n, maxLen)
			continue
		}
		wantSet[w] = true
		fit = append(fit, w)
	}

	claimed := map[string]bool{}
	for _, r := range existing {
		ms, ok := splitMembers(r.Value, wantSet)
		if ok && r.Tag == tagOf(r.Value) && ruleLen(r.Value) <= maxLen && !slices.ContainsFunc(ms, func(m string) bool { return claimed[m] }) {
			for _, m := range ms {
				claimed[m] = true
			}
			p.Keep = append(p.Keep, packedRule{ID: r.ID, Value: r.Value, Tag: r.Tag, Members: ms})
			continue
		}
		p.Delete = append(p.Delete, r.ID)
	}
	var loose []string
	for _, w := range fit {
		if !claimed[w] {
			loose = append(loose, w)
		}
	}
	p.Add = binPack(loose, maxLen)
	if len(p.Keep)+len(p.Add) <= maxRules {
		return p
	}

	// Too many rules: pack everything afresh, keeping the rules whose
	// value comes out the same.
	fresh := binPack(fit, maxLen)
	if len(fresh) > maxRules {
		for _, r := range fresh[maxRules:] {
			for _, m := range r.Members {
				p.Failed[m] = fmt.Errorf("%w: the app's %d rules of at most %d characters are full", ErrNoRoom, maxRules, maxLen)
			}
		}
		fresh = fresh[:maxRules]
	}
	byValue := map[string]string{} // value → existing id
	for _, r := range existing {
		if r.Tag == tagOf(r.Value) {
			if _, dup := byValue[r.Value]; !dup {
				byValue[r.Value] = r.ID
			}
		}
	}
	p.Keep, p.Add, p.Delete = nil, nil, nil
	kept := map[string]bool{}
	for _, r := range fresh {
		if id, ok := byValue[r.Value]; ok {
			r.ID = id
			kept[id] = true
			p.Keep = append(p.Keep, r)
			continue
		}
		p.Add = append(p.Add, r)
	}
	for _, r := range existing {
		if !kept[r.ID] {
			p.Delete = append(p.Delete, r.ID)
		}
	}
	return p
}

// binPack packs rule texts into as few rules of at most maxLen characters
// as first-fit decreasing finds. Every text must fit alone. The result
// depends only on the set of texts.
func binPack(texts []string, maxLen int) []packedRule {
	type item struct {
		text string
		n    int
	}
	items := make([]item, len(texts))
	for i, t := range texts {
		items[i] = item{t, ruleLen(t)}
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.text, b.text))
	})
	type bin struct {
		members []string
		lens    []int
	}
	var bins []*bin
	for _, it := range items {
		placed := false
		for _, b := range bins {
			if packedLen(append(b.lens, it.n)) <= maxLen {
				b.members = append(b.members, it.text)
				b.lens = append(b.lens, it.n)
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, &bin{members: []string{it.text}, lens: []int{it.n}})
		}
	}
	out := make([]packedRule, len(bins))
	for i, b := range bins {
		slices.Sort(b.members)
		v := valueOf(b.members)
		out[i] = packedRule{Value: v, Tag: tagOf(v), Members: b.members}
	}
	return out
}
