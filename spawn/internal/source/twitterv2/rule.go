package twitterv2

import (
	"fmt"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// xMaxRuleLength is the longest filtered-stream rule X accepts on its basic
// tiers (pro accepts 1024).
const xMaxRuleLength = 512

// compileRule compiles q to an X API v2 filtered-stream rule: words,
// "phrases", #tags, @users, from:, lang:, OR, negation with - and
// parentheses, juxtaposition for AND. Negations are pushed down to single
// terms, as X asks, and words that X would split on punctuation ("c++")
// are quoted. X has neither proximity nor wildcards, so the rule is the
// widest X can state that still covers q, and the spawn evaluates q on
// what arrives: A NEAR/n B becomes A B (both anywhere), a negated NEAR is
// left out (a post with both words far apart must still come), and a
// prefix (kube*) is left out of its AND (kube* deploy becomes deploy). A
// query that X could then only take whole — a branch that needs a prefix
// alone (kube* OR docker), or is left with no positive standalone term
// that X requires — wraps query.ErrUnsupported, as does a rule longer than
// X accepts or a user name X cannot hold. A sentiment: atom, which X
// cannot state either, is left out as a prefix is (the spawn scores what
// arrives).
func compileRule(q *query.Query) (string, error) {
	root := widenForX(q.Relaxed())
	if root == nil || !standalone(root) {
		return "", fmt.Errorf("%w: X has no proximity or wildcard operator, and without its prefixes %s leaves a branch without a word, phrase, #tag, @user or from: that must occur", query.ErrUnsupported, query.Quote(q.String()))
	}
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
	write(root, false)
	if err != nil {
		return "", err
	}
	if b.Len() > xMaxRuleLength {
		return "", fmt.Errorf("%w: X rule of %d bytes, at most %d", query.ErrUnsupported, b.Len(), xMaxRuleLength)
	}
	return b.String(), nil
}

// widenForX is n (relaxed: no NEAR, negations on atoms only) without its
// prefixes and sentiment: atoms, positive or negated: each is read as
// true, which drops it from an AND and makes an OR true. Nil means true.
func widenForX(n *query.Node) *query.Node {
	if n == nil {
		return nil
	}
	switch n.Op {
	case query.OpAtom:
		if n.Atom.Kind == query.Prefix || n.Atom.Kind == query.Sentiment {
			return nil
		}
		return n
	case query.OpNot:
		if widenForX(n.Kids[0]) == nil {
			return nil
		}
		return n
	}
	kids := make([]*query.Node, 0, len(n.Kids))
	for _, k := range n.Kids {
		w := widenForX(k)
		if w == nil {
			if n.Op == query.OpOr {
				return nil
			}
			continue
		}
		kids = append(kids, w)
	}
	switch len(kids) {
	case 0:
		return nil
	case 1:
		return kids[0]
	}
	return &query.Node{Op: n.Op, Kids: kids}
}

// standalone reports whether every way n can match needs a positive term
// that is not lang: — what X calls a standalone operator, which a rule
// must have.
func standalone(n *query.Node) bool {
	switch n.Op {
	case query.OpAtom:
		return n.Atom.Kind != query.Lang
	case query.OpNot:
		return false
	case query.OpAnd:
		for _, k := range n.Kids {
			if standalone(k) {
				return true
			}
		}
		return false
	}
	for _, k := range n.Kids { // OpOr
		if !standalone(k) {
			return false
		}
	}
	return true
}
