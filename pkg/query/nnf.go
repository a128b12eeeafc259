package query

import (
	"errors"
)

// ErrUnsupported is wrapped by the compilers' errors: a valid query that a
// service's native filter cannot state (from: alone for Twitter's track,
// a rule longer than X accepts). The caller then keeps the query on
// sources that can run it, or refuses it for this source.
var ErrUnsupported = errors.New("query: not expressible for the service")

// NNF is the query with negations pushed down to the atoms (De Morgan),
// flattened and sorted: the form the sources' compilers start from, since
// services that cannot negate a group want it.
func (q *Query) NNF() *Node { return nnf(q.root) }

// Quote quotes s for an error message, shortened when long.
func Quote(s string) string { return quote(s) }

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
		case OpNear:
			// A NEAR has no De Morgan: its negation stays whole (its
			// operands hold no negation).
			if neg {
				return &Node{Op: OpNot, Kids: []*Node{n}}
			}
			return n
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

// Relaxed is the negation normal form (NNF) with every NEAR read as the
// AND of its operands and every negated NEAR dropped: a tree without NEAR
// that matches every item the query matches, and more. It is what a
// service without proximity is given (the spawn then evaluates the whole
// query on what comes back). Nil means that nothing narrower than every
// item covers the query, which the language's rules leave only to queries
// whose every branch needs a negated NEAR, none of which parse.
func (q *Query) Relaxed() *Node {
	n := relax(q.NNF())
	if n == nil {
		return nil
	}
	return normalize(n)
}

// relax is n (in negation normal form) with each NEAR an AND and each
// negated NEAR true, returned as nil; a nil kid of an OR makes it true,
// a nil kid of an AND is left out.
func relax(n *Node) *Node {
	switch n.Op {
	case OpAtom:
		return n
	case OpNot:
		if n.Kids[0].Op == OpNear {
			return nil
		}
		return n
	case OpNear:
		return &Node{Op: OpAnd, Kids: []*Node{relax(n.Kids[0]), relax(n.Kids[1])}}
	}
	kids := make([]*Node, 0, len(n.Kids))
	for _, k := range n.Kids {
		r := relax(k)
		if r == nil {
			if n.Op == OpOr {
				return nil
			}
			continue
		}
		kids = append(kids, r)
	}
	switch len(kids) {
	case 0:
		return nil
	case 1:
		return kids[0]
	}
	return &Node{Op: n.Op, Kids: kids}
}
