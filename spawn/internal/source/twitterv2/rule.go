package twitterv2

import (
	"fmt"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// xMaxRuleLength is the longest filtered-stream rule X accepts on its basic
// tiers (pro accepts 1024).
const xMaxRuleLength = 512

// compileRule compiles q to an X API v2 filtered-stream rule that states it
// exactly: words, "phrases", #tags, @users, from:, lang:, OR, negation
// with - and parentheses, juxtaposition for AND. Negations are pushed down
// to single terms, as X asks, and words that X would split on punctuation
// ("c++") are quoted. The query language already guarantees what X
// requires: a positive standalone term in every branch (lang: never
// alone). A sentiment: atom, which X cannot state, is left out in the
// widening way (the spawn checks it on what arrives). A rule longer than X
// accepts, or a user name X cannot hold, wraps query.ErrUnsupported.
func compileRule(q *query.Query) (string, error) {
	var b strings.Builder
	var err error
	var write func(n *query.Node, grouped bool)
	write = func(n *query.Node, grouped bool) {
		switch n.Op {
		case query.OpAtom:
			a := n.Atom
			switch a.Kind {
			case query.Word:
				if query.IsWord(a.Value) {
					b.WriteString(a.Value)
				} else {
					b.WriteString(`"` + a.Value + `"`)
				}
			case query.Mention, query.From:
				if !query.IsWord(a.Value) {
					err = fmt.Errorf("%w: X has no user %s", query.ErrUnsupported, query.Quote(a.String()))
				}
				b.WriteString(a.String())
			default:
				b.WriteString(a.String())
			}
		case query.OpNot:
			b.WriteByte('-')
			write(n.Kids[0], true)
		case query.OpAnd, query.OpOr:
			sep := " "
			if n.Op == query.OpOr {
				sep = " OR "
			}
			if grouped {
				b.WriteByte('(')
			}
			for i, k := range n.Kids {
				if i > 0 {
					b.WriteString(sep)
				}
				write(k, n.Op == query.OpAnd && k.Op == query.OpOr)
			}
			if grouped {
				b.WriteByte(')')
			}
		}
	}
	root, all := widenSentiment(q.NNF())
	if all {
		return "", fmt.Errorf("%w: %s says nothing X can find", query.ErrUnsupported, query.Quote(q.String()))
	}
	write(root, false)
	if err != nil {
		return "", err
	}
	if b.Len() > xMaxRuleLength {
		return "", fmt.Errorf("%w: X rule of %d bytes, at most %d", query.ErrUnsupported, b.Len(), xMaxRuleLength)
	}
	return b.String(), nil
}

// widenSentiment returns n (in negation normal form) with its sentiment:
// atoms taken as true, negated or not, which widens it: an AND drops them,
// an OR that has one is true. all reports that the whole of n became
// true.
func widenSentiment(n *query.Node) (out *query.Node, all bool) {
	switch n.Op {
	case query.OpAtom:
		return n, n.Atom.Kind == query.Sentiment
	case query.OpNot:
		_, all := widenSentiment(n.Kids[0])
		return n, all
	}
	kids := make([]*query.Node, 0, len(n.Kids))
	for _, k := range n.Kids {
		w, all := widenSentiment(k)
		if all {
			if n.Op == query.OpOr {
				return nil, true
			}
			continue
		}
		kids = append(kids, w)
	}
	switch len(kids) {
	case 0:
		return nil, true
	case 1:
		return kids[0], false
	}
	return &query.Node{Op: n.Op, Kids: kids}, false
}
