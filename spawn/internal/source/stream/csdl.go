package stream

import (
	"fmt"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// csdlTarget is the field a CSDL definition searches.
const csdlTarget = "interaction.content"

// compileCSDL compiles q to a definition for the DataSift-shaped stream service
// in the subset its multi-stream API and the local stream server accept:
// `interaction.content contains "…"` conditions joined by `or`. Like
// twitterv1's track terms it covers q — each condition is one positive text atom, the
// longest of its AND — and the caller evaluates q on what arrives. The
// subset has neither proximity nor wildcards: a NEAR counts as the AND of
// its operands (query.Query.Relaxed), and a prefix (kube*) as no term,
// like from:. A query with a branch that needs only from: or a prefix
// wraps query.ErrUnsupported.
func compileCSDL(q *query.Query) (string, error) {
	var atoms []query.Atom
	ok := false
	if root := q.Relaxed(); root != nil {
		atoms, ok = coverOne(root)
	}
	if !ok {
		return "", fmt.Errorf("%w: %s has a branch without a word, phrase, #tag or @user for CSDL", query.ErrUnsupported, query.Quote(q.String()))
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
func coverOne(n *query.Node) ([]query.Atom, bool) {
	switch n.Op {
	case query.OpAtom:
		if n.Atom.Text() == "" {
			return nil, false
		}
		return []query.Atom{n.Atom}, true
	case query.OpOr:
		var out []query.Atom
		for _, k := range n.Kids {
			c, ok := coverOne(k)
			if !ok {
				return nil, false
			}
			out = append(out, c...)
		}
		return out, true
	case query.OpAnd:
		var best []query.Atom
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
func shortest(atoms []query.Atom) int {
	m := -1
	for _, a := range atoms {
		if l := len(a.Text()); m < 0 || l < m {
			m = l
		}
	}
	return m
}
