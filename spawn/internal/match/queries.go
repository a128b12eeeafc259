package match

import (
	"slices"
	"sync"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Item is what a query is evaluated on: the text its words, phrases,
// #tags and @users are found in, and the fields from: and lang: test.
type Item struct {
	Text   string
	Author string // the author's handle; a leading '@' and case are ignored
	Lang   string // a language tag ("en", "pt-BR"); case is ignored
}

// QueryHit is one subscriber whose query an item matched.
type QueryHit struct {
	// Subscriber is the id the subscriber was indexed under.
	Subscriber int64
	// Terms are the positive terms of the query that occur in the item
	// (words, phrases, #tags, @users and from:, in canonical spelling and
	// in the order of the canonical form): the comment's matched terms.
	Terms []string
}

// Instructions of a compiled query. A query is a preorder array of
// instructions; each knows where its subtree ends, so an AND or OR steps
// from kid to kid and stops as soon as its value is known.
const (
	opText uint8 = iota + 1 // a text atom: its pattern was found
	opFrom                  // the item's author is the author arg
	opLang                  // the item's language is the code arg or a subtag of it
	opAnd
	opOr
	opNot
)

// instr is one instruction, kept small: 10,000 queries' instructions are
// read at random, one candidate after another.
type instr struct {
	op  uint8
	arg int32 // opText: pattern id; opFrom: author id; opLang: code id
	end int32 // index just past this instruction's subtree
}

// qposting says that a pattern or an author is a positive term of a
// subscriber: a hit on it makes the subscriber a candidate. It carries
// what deciding the candidate needs, so that matching reads a found
// pattern's subscribers in one sequential sweep instead of visiting each
// subscriber's records at random (with 10,000 queries, those are misses
// of the processor's caches).
type qposting struct {
	id   int64 // the subscriber
	sub  int32 // its dense index
	term int32 // index into QueryIndex.terms
	root int32 // first instruction of its query
	// need says how the candidate is decided: when positive, how many of
	// the query's positive terms must occur (1 for one positive term or an
	// OR of them, k for an AND of k); when negative, the query is its
	// truth table over its -need atoms; 0 when the tree must be
	// evaluated.
	need  int32
	table uint32                 // a small query's truth table: bit m is its value when atom j is true for each bit j of m
	atoms [maxTableAtoms]atomRef // a small query's atoms
}

// maxTableAtoms is the most atoms a query decided by its truth table has.
// Most queries are that small; the table and the atoms ride in the
// postings, which are read in sequence, while the instructions of a query
// are read at random.
const maxTableAtoms = 5

// atomRef is an atom of a small query: its kind (the top bits) and its
// pattern, author or language code id.
type atomRef int32

const (
	refText atomRef = iota << 28
	refFrom
	refLang
	refID = 1<<28 - 1
)

// positiveTerm is a positive term of a subscriber's query: a text atom's
// pattern (pat), or from: an author (pat -1).
type positiveTerm struct {
	term, pat, author int32
}

// QueryIndex is an immutable index of many subscribers' queries. Every
// text atom of every query (words, phrases, and #tags and @users as the
// text tokens "#tag" and "@user") is one pattern of a single pattern set,
// so an item's text is scanned once whatever the number of subscribers.
// Only subscribers with a hit on a positive term — a text atom or from:
// not under a negation — are candidates; the query language guarantees
// that a query cannot match without one. A candidate is decided from what
// its posting carries where it can (an OR of positive terms matches, an
// AND of them when all occurred, a query of a few atoms by its truth
// table), and by evaluating its boolean tree otherwise. AppendMatch is
// safe for concurrent use.
type QueryIndex struct {
	auto     *patternSet
	postings [][]qposting        // pattern id → subscribers it is a positive term of
	byAuthor [][]qposting        // author id → subscribers it is a positive term of
	authors  map[string]int32    // from: value → author id
	langs    []string            // code id → lang: code
	langIDs  map[string]int32    // lang: code → code id
	subs     []int64             // dense index → subscriber id, ascending
	positive [][]positiveTerm    // dense index → its positive terms, in canonical order
	terms    []string            // term id → its canonical spelling; a hit with one term shares a one-element slice of it
	prog     []instr             // all queries' instructions
	scratch  sync.Pool           // *queryScratch sized for this index
	patterns map[string]struct{} // text patterns in use
}

// NewQueries indexes subscribers by their parsed queries. Subscribers
// with a nil query are left out: they want every item, and the caller
// handles them.
func NewQueries(subs map[int64]*query.Query) *QueryIndex {
	return buildQueries(nil, subs)
}

// Update returns an index of subs that shares this index's pattern set when
// it holds every text atom of subs and enough of its patterns are still in
// use, as Index.Update does; only the queries are compiled again. The
// receiver stays valid.
func (ix *QueryIndex) Update(subs map[int64]*query.Query) *QueryIndex {
	return buildQueries(ix, subs)
}

func buildQueries(prev *QueryIndex, subs map[int64]*query.Query) *QueryIndex {
	ix := &QueryIndex{authors: map[string]int32{}, langIDs: map[string]int32{}, patterns: map[string]struct{}{}}
	ids := make([]int64, 0, len(subs))
	for id, q := range subs {
		if q != nil {
			ids = append(ids, id)
			for _, a := range q.Atoms() {
				if t := a.Text(); t != "" {
					ix.patterns[t] = struct{}{}
				}
			}
		}
	}
	slices.Sort(ids)
	if prev != nil && prev.auto != nil && covers(prev.auto, ix.patterns) {
		ix.auto = prev.auto
	} else {
		ix.auto = compile(ix.patterns)
	}
	ix.postings = make([][]qposting, len(ix.auto.patterns))
	ix.subs = make([]int64, len(ids))
	ix.positive = make([][]positiveTerm, len(ids))
	termIDs := map[string]int32{}
	for d, id := range ids {
		q := subs[id]
		ix.subs[d] = id
		root := int32(len(ix.prog))
		ix.emit(q.Root())
		positive := positiveAtoms(q)
		need := int32(0)
		switch {
		case anyTerm(q.Root()):
			need = 1
		case allTerms(q.Root()):
			need = int32(len(positive))
		}
		var table uint32
		var atoms [maxTableAtoms]atomRef
		if all := q.Atoms(); need == 0 && len(all) <= maxTableAtoms {
			need = -int32(len(all))
			for j, a := range all {
				atoms[j] = ix.ref(a)
			}
			for m := range 1 << len(all) {
				if q.Eval(func(a query.Atom) bool { return m>>slices.Index(all, a)&1 == 1 }) {
					table |= 1 << m
				}
			}
		}
		for _, a := range positive {
			spelled := a.String()
			t, ok := termIDs[spelled]
			if !ok {
				t = int32(len(ix.terms))
				termIDs[spelled] = t
				ix.terms = append(ix.terms, spelled)
			}
			po := qposting{id: id, sub: int32(d), term: t, root: root, need: need, table: table, atoms: atoms}
			pt := positiveTerm{term: t, pat: -1, author: -1}
			if a.Kind == query.From {
				pt.author = ix.author(a.Value)
				ix.byAuthor[pt.author] = append(ix.byAuthor[pt.author], po)
			} else {
				pt.pat = ix.auto.ids[a.Text()]
				ix.postings[pt.pat] = append(ix.postings[pt.pat], po)
			}
			ix.positive[d] = append(ix.positive[d], pt)
		}
	}
	return ix
}

// anyTerm reports whether a query is one positive text atom or from:, or
// an OR of them: every candidate matches.
func anyTerm(n *query.Node) bool {
	if n.Op == query.OpOr {
		return !slices.ContainsFunc(n.Kids, func(k *query.Node) bool { return !positiveTerm1(k) })
	}
	return positiveTerm1(n)
}

// allTerms reports whether a query is an AND of positive text atoms and
// from:: a candidate matches when all of them occurred.
func allTerms(n *query.Node) bool {
	return n.Op == query.OpAnd && !slices.ContainsFunc(n.Kids, func(k *query.Node) bool { return !positiveTerm1(k) })
}

// positiveTerm1 reports whether n is a text atom or from:.
func positiveTerm1(n *query.Node) bool {
	return n.Op == query.OpAtom && n.Atom.Kind != query.Lang
}

// emit appends the instructions of the subtree at n.
func (ix *QueryIndex) emit(n *query.Node) {
	at := len(ix.prog)
	ix.prog = append(ix.prog, instr{})
	in := instr{}
	switch n.Op {
	case query.OpAtom:
		switch a := n.Atom; a.Kind {
		case query.From:
			in = instr{op: opFrom, arg: ix.author(a.Value)}
		case query.Lang:
			in = instr{op: opLang, arg: ix.lang(a.Value)}
		default:
			in = instr{op: opText, arg: ix.auto.ids[a.Text()]}
		}
	case query.OpAnd:
		in.op = opAnd
	case query.OpOr:
		in.op = opOr
	case query.OpNot:
		in.op = opNot
	}
	for _, k := range n.Kids {
		ix.emit(k)
	}
	in.end = int32(len(ix.prog))
	ix.prog[at] = in
}

// ref is the reference of an atom in a truth-table query.
func (ix *QueryIndex) ref(a query.Atom) atomRef {
	switch a.Kind {
	case query.From:
		return refFrom | atomRef(ix.author(a.Value))
	case query.Lang:
		return refLang | atomRef(ix.lang(a.Value))
	}
	return refText | atomRef(ix.auto.ids[a.Text()])
}

// lang is the id of a lang: code, assigned on first use.
func (ix *QueryIndex) lang(code string) int32 {
	id, ok := ix.langIDs[code]
	if !ok {
		id = int32(len(ix.langs))
		ix.langIDs[code] = id
		ix.langs = append(ix.langs, code)
	}
	return id
}

// author is the id of a from: value, assigned on first use.
func (ix *QueryIndex) author(v string) int32 {
	id, ok := ix.authors[v]
	if !ok {
		id = int32(len(ix.byAuthor))
		ix.authors[v] = id
		ix.byAuthor = append(ix.byAuthor, nil)
	}
	return id
}

// positiveAtoms are the atoms of q that make a subscriber a candidate, in
// the order of q's atoms: text atoms and from: under an even number of
// negations (lang: only filters).
func positiveAtoms(q *query.Query) []query.Atom {
	positive := map[query.Atom]bool{}
	var walk func(n *query.Node, neg bool)
	walk = func(n *query.Node, neg bool) {
		switch n.Op {
		case query.OpAtom:
			if !neg && n.Atom.Kind != query.Lang {
				positive[n.Atom] = true
			}
		case query.OpNot:
			walk(n.Kids[0], !neg)
		default:
			for _, k := range n.Kids {
				walk(k, neg)
			}
		}
	}
	walk(q.Root(), false)
	var out []query.Atom
	for _, a := range q.Atoms() {
		if positive[a] {
			out = append(out, a)
		}
	}
	return out
}
