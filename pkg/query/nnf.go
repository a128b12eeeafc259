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
