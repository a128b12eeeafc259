package query

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Limits of the services' native filters.
const (
	// trackMaxTerms is how many phrases Twitter's v1.1 statuses/filter
	// accepts in track.
	trackMaxTerms = 400
	// trackMaxTermBytes is the longest phrase track accepts.
	trackMaxTermBytes = 60
	// xMaxRuleLength is the longest filtered-stream rule X accepts on its
	// basic tiers (pro accepts 1024).
	xMaxRuleLength = 512
	// csdlTarget is the field a CSDL definition searches.
	csdlTarget = "interaction.content"
)

// ErrUnsupported is wrapped by the compilers' errors: a valid query that a
// service's native filter cannot state (from: alone for Twitter's track,
// a rule longer than X accepts). The caller then keeps the query on
// sources that can run it, or refuses it for this source.
var ErrUnsupported = errors.New("query: not expressible for the service")

// nnf is n with negations pushed down to the atoms (De Morgan), flattened
// and sorted: the form services that cannot negate a group want.
func nnf(n *Node) *Node {
	var push func(n *Node, neg bool) *Node
	push = func(n *Node, neg bool) *Node {
		switch n.Op {
		case OpAtom:
			if neg {
				return &Node{Op: OpNot, Kids: []*Node{n}}
			}
			return n
		case OpNot:
			return push(n.Kids[0], !neg)
		}
		op := n.Op
		if neg {
			op = OpAnd + OpOr - op
		}
		out := &Node{Op: op, Kids: make([]*Node, len(n.Kids))}
		for i, k := range n.Kids {
			out.Kids[i] = push(k, neg)
		}
		return out
	}
	return normalize(push(n, false))
}

// TrackTerms compiles q to Twitter v1.1 track phrases (each a
// space-separated AND of words, the list their OR) that cover it: every
// item q matches contains one of them, so the stream they select holds
// all of q's matches and the caller evaluates q locally on what arrives.
// Each phrase is the AND of every positive text atom of one branch of q's
// disjunctive form, as narrow as track can state, widened only to fit
// track's limits; phrases implied by a wider one are dropped. A query with
// a branch that needs only from: (or whose phrases exceed the limits)
// wraps ErrUnsupported.
func TrackTerms(q *Query) ([]string, error) {
	conjs, ok := coverConj(nnf(q.root))
	if !ok {
		return nil, fmt.Errorf("%w: %s has a branch without a word, phrase, #tag or @user for track", ErrUnsupported, quote(q.text))
	}
	type term struct {
		words []string
		text  string
	}
	var terms []term
	for _, c := range conjs {
		var words []string
		for _, a := range c {
			switch a.Kind {
			case Phrase:
				// A comma would split the phrase in track.
				words = append(words, strings.Fields(strings.ReplaceAll(a.Value, ",", " "))...)
			default:
				if w := strings.ReplaceAll(a.Text(), ",", ""); w != "" {
					words = append(words, w)
				}
			}
		}
		words = fitWords(words, trackMaxTermBytes)
		if len(words) == 0 {
			return nil, fmt.Errorf("%w: %s has a word longer than track's %d bytes", ErrUnsupported, quote(q.text), trackMaxTermBytes)
		}
		terms = append(terms, term{words, strings.Join(words, " ")})
	}
	// A term whose words include all of a wider term's is implied by it.
	slices.SortFunc(terms, func(a, b term) int {
		if d := len(a.words) - len(b.words); d != 0 {
			return d
		}
		return strings.Compare(a.text, b.text)
	})
	var out []string
	var kept []term
	for _, t := range terms {
		implied := slices.ContainsFunc(kept, func(k term) bool { return subset(k.words, t.words) })
		if !implied {
			kept = append(kept, t)
			out = append(out, t.text)
		}
	}
	slices.Sort(out)
	if len(out) > trackMaxTerms {
		return nil, fmt.Errorf("%w: %s needs %d track phrases, at most %d", ErrUnsupported, quote(q.text), len(out), trackMaxTerms)
	}
	return out, nil
}

// fitWords sorts and de-duplicates words and keeps the longest (the most
// selective) of them that fit in max bytes joined by spaces. Fewer words
// only widen an AND, so the result still covers.
func fitWords(words []string, max int) []string {
	slices.Sort(words)
	words = slices.Compact(words)
	byLen := slices.Clone(words)
	slices.SortStableFunc(byLen, func(a, b string) int { return len(b) - len(a) })
	var out []string
	size := -1
	for _, w := range byLen {
		if size+1+len(w) <= max {
			out = append(out, w)
			size += 1 + len(w)
		}
	}
	slices.Sort(out)
	return out
}

// subset reports whether every word of a (sorted) is in b (sorted).
func subset(a, b []string) bool {
	for _, w := range a {
		if _, ok := slices.BinarySearch(b, w); !ok {
			return false
		}
	}
	return true
}

// coverConj returns conjunctions of positive text atoms whose OR covers n
// (in negation normal form): an item n matches contains every atom of one
// of them. AND multiplies its kids' covers while the product stays within
// track's limit and otherwise keeps the fewest; negated and field atoms
// cover nothing, so an OR with such a branch has no cover.
func coverConj(n *Node) ([][]Atom, bool) {
	switch n.Op {
	case OpAtom:
		if n.Atom.Text() == "" {
			return nil, false
		}
		return [][]Atom{{n.Atom}}, true
	case OpOr:
		var out [][]Atom
		for _, k := range n.Kids {
			c, ok := coverConj(k)
			if !ok {
				return nil, false
			}
			out = append(out, c...)
		}
		return out, true
	case OpAnd:
		var covers [][][]Atom
		for _, k := range n.Kids {
			if c, ok := coverConj(k); ok {
				covers = append(covers, c)
			}
		}
		if len(covers) == 0 {
			return nil, false
		}
		slices.SortStableFunc(covers, func(a, b [][]Atom) int { return len(a) - len(b) })
		out := covers[0]
		for _, c := range covers[1:] {
			if len(out)*len(c) > trackMaxTerms {
				continue
			}
			var prod [][]Atom
			for _, x := range out {
				for _, y := range c {
					prod = append(prod, append(slices.Clip(x), y...))
				}
			}
			out = prod
		}
		return out, true
	}
	return nil, false // a negated atom
}

// CSDL compiles q to a definition for the DataSift-shaped stream service
// in the subset its multi-stream API and the local stream server accept:
// `interaction.content contains "…"` conditions joined by `or`. Like
// TrackTerms it covers q — each condition is one positive text atom, the
// longest of its AND — and the caller evaluates q on what arrives. A query
// with a branch that needs only from: wraps ErrUnsupported.
func CSDL(q *Query) (string, error) {
	atoms, ok := coverOne(nnf(q.root))
	if !ok {
		return "", fmt.Errorf("%w: %s has a branch without a word, phrase, #tag or @user for CSDL", ErrUnsupported, quote(q.text))
	}
	texts := make([]string, len(atoms))
	for i, a := range atoms {
		texts[i] = a.Text()
	}
	slices.Sort(texts)
	texts = slices.Compact(texts)
	parts := make([]string, len(texts))
	for i, t := range texts {
		t = strings.ReplaceAll(t, `\`, `\\`)
		t = strings.ReplaceAll(t, `"`, `\"`)
		parts[i] = csdlTarget + ` contains "` + t + `"`
	}
	return strings.Join(parts, " or "), nil
}

// coverOne returns positive text atoms whose OR covers n: for an AND, the
// cover of the kid with the fewest atoms, the longest text breaking ties.
func coverOne(n *Node) ([]Atom, bool) {
	switch n.Op {
	case OpAtom:
		if n.Atom.Text() == "" {
			return nil, false
		}
		return []Atom{n.Atom}, true
	case OpOr:
		var out []Atom
		for _, k := range n.Kids {
			c, ok := coverOne(k)
			if !ok {
				return nil, false
			}
			out = append(out, c...)
		}
		return out, true
	case OpAnd:
		var best []Atom
		found := false
		for _, k := range n.Kids {
			c, ok := coverOne(k)
			if !ok {
				continue
			}
			if !found || len(c) < len(best) || len(c) == len(best) && shortest(c) > shortest(best) {
				best, found = c, true
			}
		}
		return best, found
	}
	return nil, false
}

// shortest is the length of the shortest text among atoms.
func shortest(atoms []Atom) int {
	m := -1
	for _, a := range atoms {
		if l := len(a.Text()); m < 0 || l < m {
			m = l
		}
	}
	return m
}

// XRule compiles q to an X API v2 filtered-stream rule that states it
// exactly: words, "phrases", #tags, @users, from:, lang:, OR, negation
// with - and parentheses, juxtaposition for AND. Negations are pushed down
// to single terms, as X asks, and words that X would split on punctuation
// ("c++") are quoted. The query language already guarantees what X
// requires: a positive standalone term in every branch (lang: never
// alone). A rule longer than X accepts, or a user name X cannot hold,
// wraps ErrUnsupported.
func XRule(q *Query) (string, error) {
	var b strings.Builder
	var err error
	var write func(n *Node, grouped bool)
	write = func(n *Node, grouped bool) {
		switch n.Op {
		case OpAtom:
			a := n.Atom
			switch a.Kind {
			case Word:
				if allWordBytes(a.Value) {
					b.WriteString(a.Value)
				} else {
					b.WriteString(`"` + a.Value + `"`)
				}
			case Mention, From:
				if !allWordBytes(a.Value) {
					err = fmt.Errorf("%w: X has no user %s", ErrUnsupported, quote(a.String()))
				}
				b.WriteString(a.String())
			default:
				b.WriteString(a.String())
			}
		case OpNot:
			b.WriteByte('-')
			write(n.Kids[0], true)
		case OpAnd, OpOr:
			sep := " "
			if n.Op == OpOr {
				sep = " OR "
			}
			if grouped {
				b.WriteByte('(')
			}
			for i, k := range n.Kids {
				if i > 0 {
					b.WriteString(sep)
				}
				write(k, n.Op == OpAnd && k.Op == OpOr)
			}
			if grouped {
				b.WriteByte(')')
			}
		}
	}
	write(nnf(q.root), false)
	if err != nil {
		return "", err
	}
	if b.Len() > xMaxRuleLength {
		return "", fmt.Errorf("%w: X rule of %d bytes, at most %d", ErrUnsupported, b.Len(), xMaxRuleLength)
	}
	return b.String(), nil
}
