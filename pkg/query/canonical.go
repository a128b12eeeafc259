package query

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Query is a parsed query in canonical form. It is immutable and safe for
// concurrent use.
type Query struct {
	root  *Node
	text  string
	atoms []Atom
}

func newQuery(root *Node) *Query {
	q := &Query{root: root, text: root.String()}
	seen := map[Atom]bool{}
	var walk func(n *Node)
	walk = func(n *Node) {
		if n.Op == OpAtom {
			if !seen[n.Atom] {
				seen[n.Atom] = true
				q.atoms = append(q.atoms, n.Atom)
			}
			return
		}
		for _, k := range n.Kids {
			walk(k)
		}
	}
	walk(root)
	return q
}

// String is the canonical form: operators flattened, operands lowercased,
// sorted and de-duplicated, single-kid groups unwrapped and double
// negations removed. It parses back to itself, and two queries that differ
// only in spelling, order, case, spacing or redundant parentheses have the
// same canonical form.
func (q *Query) String() string { return q.text }

// Root is the canonical tree. It is shared and must not be modified.
func (q *Query) Root() *Node { return q.root }

// Atoms are the query's distinct atoms in the order of the canonical form.
// The slice is shared and must not be modified.
func (q *Query) Atoms() []Atom { return q.atoms }

// Eval evaluates the query, hit telling whether an atom occurs in the item
// at hand, each NEAR read as the AND of its operands (Relaxed): exact for a
// query without NEAR, and for one with NEAR a necessary condition that Match
// completes with the words' positions. The shared index in the spawn
// computes the answers of Match for many queries at once.
func (q *Query) Eval(hit func(Atom) bool) bool { return q.root.Eval(hit) }

// Eval evaluates the subtree at n; see Query.Eval.
func (n *Node) Eval(hit func(Atom) bool) bool { return n.EvalNear(hit, nil) }

// EvalNear evaluates the subtree at n, hit telling whether an atom occurs
// and near deciding a NEAR node whose operands occur (Node.Near); a nil
// near reads every NEAR as the AND of its operands.
func (n *Node) EvalNear(hit func(Atom) bool, near func(*Node) bool) bool {
	switch n.Op {
	case OpAtom:
		return hit(n.Atom)
	case OpNot:
		return !n.Kids[0].EvalNear(hit, near)
	case OpAnd:
		for _, k := range n.Kids {
			if !k.EvalNear(hit, near) {
				return false
			}
		}
		return true
	case OpOr:
		for _, k := range n.Kids {
			if k.EvalNear(hit, near) {
				return true
			}
		}
	case OpNear:
		for _, k := range n.Kids {
			if !k.EvalNear(hit, nil) {
				return false
			}
		}
		return near == nil || near(n)
	}
	return false
}

// String writes the subtree at n in the language; for a normalized tree it
// is the canonical form. An OR inside an AND or a negation gets
// parentheses; AND binds tighter than OR, so an AND inside an OR needs none,
// and NEAR tighter than AND, so a NEAR needs them only as the operand of
// a NEAR or a negation.
func (n *Node) String() string {
	var b strings.Builder
	n.write(&b, false)
	return b.String()
}

func (n *Node) write(b *strings.Builder, grouped bool) {
	switch n.Op {
	case OpAtom:
		b.WriteString(n.Atom.String())
	case OpNot:
		b.WriteByte('-')
		n.Kids[0].write(b, true)
	case OpNear:
		if grouped {
			b.WriteByte('(')
		}
		// NEARs group from the left: only an OR needs parentheses there.
		n.Kids[0].write(b, n.Kids[0].Op == OpOr)
		fmt.Fprintf(b, " NEAR/%d", n.Slop)
		if n.Ordered {
			b.WriteByte('f')
		}
		b.WriteByte(' ')
		n.Kids[1].write(b, n.Kids[1].Op != OpAtom)
		if grouped {
			b.WriteByte(')')
		}
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
			// Kids of an AND group ORs and negated ANDs alike; a kid of
			// an OR is an AND or simpler and needs no parentheses, and
			// a NEAR binds tighter than both.
			k.write(b, n.Op == OpAnd && k.Op != OpAtom && k.Op != OpNear)
		}
		if grouped {
			b.WriteByte(')')
		}
	}
}

// normalize returns the canonical tree of n: kids normalized first, then
// nested ANDs in an AND (ORs in an OR) merged, kids sorted by their
// canonical text and de-duplicated, a group of one kid replaced by it, a
// double negation by what it negates, and the two operands of a NEAR
// without order sorted, a NEAR before an OR group before a term (a NEAR/2
// b is b NEAR/2 a; a NEAR/2f b keeps its order), so that a chain of NEARs
// prints without parentheses.
func normalize(n *Node) *Node {
	switch n.Op {
	case OpAtom:
		return n
	case OpNot:
		k := normalize(n.Kids[0])
		if k.Op == OpNot {
			return k.Kids[0]
		}
		return &Node{Op: OpNot, Kids: []*Node{k}}
	case OpNear:
		l, r := normalize(n.Kids[0]), normalize(n.Kids[1])
		if !n.Ordered && (nearRank(l) > nearRank(r) || nearRank(l) == nearRank(r) && l.String() > r.String()) {
			l, r = r, l
		}
		return &Node{Op: OpNear, Kids: []*Node{l, r}, Slop: n.Slop, Ordered: n.Ordered}
	}
	type keyed struct {
		key string
		n   *Node
	}
	var kids []keyed
	var add func(k *Node)
	add = func(k *Node) {
		if k.Op == n.Op {
			for _, kk := range k.Kids {
				add(kk)
			}
			return
		}
		kids = append(kids, keyed{k.String(), k})
	}
	for _, k := range n.Kids {
		add(normalize(k))
	}
	slices.SortFunc(kids, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	kids = slices.CompactFunc(kids, func(a, b keyed) bool { return a.key == b.key })
	if len(kids) == 1 {
		return kids[0].n
	}
	out := &Node{Op: n.Op, Kids: make([]*Node, len(kids))}
	for i, k := range kids {
		out.Kids[i] = k.n
	}
	return out
}

// nearRank orders the operands of a NEAR without order: a NEAR first
// (it needs no parentheses there), then an OR group, then a term.
func nearRank(n *Node) int {
	switch n.Op {
	case OpNear:
		return 0
	case OpAtom:
		return 2
	}
	return 1
}

// UUID is the query uuid of q for a source kind: UUIDOf(source,
// q.String()).
func (q *Query) UUID(source string) uuid.UUID {
	return uuid.NewSHA1(Namespace, []byte(source+"\n"+q.uuidKey()))
}

// UUIDOf is the query uuid of a query's canonical form for a source kind:
// a UUIDv5 of both, so that equal queries written differently share a
// node and a data source. A canonical form that does not parse (it was not
// made by String) is hashed as it is.
//
// Queries that the comma lists of old could state — an OR of plain words,
// #tags, @users and ANDs of them — are hashed as the old list was (terms
// joined by newlines, each term's words by spaces), so that such a
// crawler keeps the uuid UUID(source, Canonical(source, terms)) gave it
// when its canonical form reads the same: "golang,new release" keeps its
// uuid, "release notes" (whose words the canonical form sorts) and lists
// of other terms change it once (see LegacyUUID).
func UUIDOf(source, canonical string) uuid.UUID {
	if q, err := Parse(canonical); err == nil && q.text == canonical {
		return q.UUID(source)
	}
	return uuid.NewSHA1(Namespace, []byte(source+"\n"+canonical))
}

// uuidKey is what UUID hashes after the source: the legacy list form of a
// query that has one, the canonical form otherwise. The two never collide:
// a list of two or more terms has a newline, which no canonical form has,
// and a list of one term reads the same in both.
func (q *Query) uuidKey() string {
	branches := []*Node{q.root}
	if q.root.Op == OpOr {
		branches = q.root.Kids
	}
	terms := make([]string, len(branches))
	for i, b := range branches {
		if !legacyTerm(b) {
			return q.text
		}
		terms[i] = b.String()
	}
	return strings.Join(terms, "\n")
}

// legacyTerm reports whether n is a term of the old comma list: a plain
// word, #tag or @user, or an AND of them.
func legacyTerm(n *Node) bool {
	plain := func(n *Node) bool {
		return n.Op == OpAtom && (n.Atom.Kind == Word || n.Atom.Kind == Tag || n.Atom.Kind == Mention)
	}
	if n.Op == OpAnd {
		for _, k := range n.Kids {
			if !plain(k) {
				return false
			}
		}
		return true
	}
	return plain(n)
}

// LegacyUUID is the uuid a search crawler of the old comma-list form got
// before the query language: the uuid of its terms trimmed, lowercased,
// inner spaces folded, sorted and without repeats. A hub that stores it can
// tell which crawlers the new uuid, q.UUID(source), moves: those are
// re-routed once, their data source restarted on their new node.
func LegacyUUID(source string, terms []string) (uuid.UUID, error) {
	canon := make([]string, 0, len(terms))
	for _, t := range terms {
		if t = strings.ToLower(strings.Join(strings.Fields(t), " ")); t != "" {
			canon = append(canon, t)
		}
	}
	if len(canon) == 0 {
		return uuid.Nil, fmt.Errorf("%w: query is empty", ErrInvalid)
	}
	slices.Sort(canon)
	return UUID(source, slices.Compact(canon)), nil
}
