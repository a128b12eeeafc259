package twitterv1

import (
	"fmt"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Limits of Twitter v1.1's track parameter.
const (
	// trackMaxTerms is how many phrases statuses/filter accepts in track.
	trackMaxTerms = 400
	// trackMaxTermBytes is the longest phrase track accepts.
	trackMaxTermBytes = 60
)

// compileTrack compiles q to Twitter v1.1 track phrases (each a
// space-separated AND of words, the list their OR) that cover it: every
// item q matches contains one of them, so the stream they select holds
// all of q's matches and the caller evaluates q locally on what arrives.
// Each phrase is the AND of every positive text atom of one branch of q's
// disjunctive form, as narrow as track can state, widened only to fit
// track's limits; phrases implied by a wider one are dropped. Track has
// neither proximity nor wildcards: a NEAR counts as the AND of its
// operands (query.Query.Relaxed), and a prefix (kube*) as no term, like
// from:. A query with a branch that needs only from: or a prefix (or
// whose phrases exceed the limits) wraps query.ErrUnsupported.
func compileTrack(q *query.Query) ([]string, error) {
	var conjs [][]query.Atom
	ok := false
	if root := q.Relaxed(); root != nil {
		conjs, ok = coverConj(root)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s has a branch without a word, phrase, #tag or @user for track", query.ErrUnsupported, query.Quote(q.String()))
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
			case query.Phrase:
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
			return nil, fmt.Errorf("%w: %s has a word longer than track's %d bytes", query.ErrUnsupported, query.Quote(q.String()), trackMaxTermBytes)
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
		return nil, fmt.Errorf("%w: %s needs %d track phrases, at most %d", query.ErrUnsupported, query.Quote(q.String()), len(out), trackMaxTerms)
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
func coverConj(n *query.Node) ([][]query.Atom, bool) {
	switch n.Op {
	case query.OpAtom:
		if n.Atom.Text() == "" {
			return nil, false
		}
		return [][]query.Atom{{n.Atom}}, true
	case query.OpOr:
		var out [][]query.Atom
		for _, k := range n.Kids {
			c, ok := coverConj(k)
			if !ok {
				return nil, false
			}
			out = append(out, c...)
		}
		return out, true
	case query.OpAnd:
		var covers [][][]query.Atom
		for _, k := range n.Kids {
			if c, ok := coverConj(k); ok {
				covers = append(covers, c)
			}
		}
		if len(covers) == 0 {
			return nil, false
		}
		slices.SortStableFunc(covers, func(a, b [][]query.Atom) int { return len(a) - len(b) })
		out := covers[0]
		for _, c := range covers[1:] {
			if len(out)*len(c) > trackMaxTerms {
				continue
			}
			var prod [][]query.Atom
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
