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
// alone). A rule longer than X accepts, or a user name X cannot hold,
// wraps query.ErrUnsupported.
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
	write(q.NNF(), false)
	if err != nil {
		return "", err
	}
	if b.Len() > xMaxRuleLength {
		return "", fmt.Errorf("%w: X rule of %d bytes, at most %d", query.ErrUnsupported, b.Len(), xMaxRuleLength)
	}
	return b.String(), nil
}
