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
	// AuthorID is the author's account id (a DID, a user id) when the
	// source has one; from: matches it as it matches Author.
	AuthorID string
	Lang     string // a language tag ("en", "pt-BR"); case is ignored
	// Fields are the item's fields its source kind declares, by name
	// (subreddit → golang); Field atoms test them, case ignored.
	Fields map[string]string
	// Sentiment is the label of the item's sentiment, "" when it has
	// none; sentiment: atoms test it.
	Sentiment string
}

// fieldKey is the name a field atom's "name:value" has in the table of
// from: names, which it shares: no author name starts with a NUL byte.
func fieldKey(value string) string { return "\x00" + value }

// sentimentKey is the name a sentiment: atom's label has in the table of
// lang: codes, which it shares: no language code starts with a NUL byte.
func sentimentKey(label string) string { return "\x00" + label }

// QueryHit is one subscriber whose query an item matched.
type QueryHit struct {
	// Subscriber is the id the subscriber was indexed under.
	Subscriber int64
	// Terms are the positive terms of the query that occur in the item
	// (words, phrases, #tags, @users and from:, in canonical spelling and
	// in the order of the canonical form): the comment's matched terms.
	Terms []string
}

// Every atom a query of the index can test has an atom id, so that
// what occurred in an item is one array of stamps whatever the kind of
// atom: a text atom's id is its pattern id, prefix wildcards come after
// the patterns, from: authors after the prefixes and lang: codes after
// the authors. One id past the last,
// atomNever, never occurs; it pads the atoms of small queries.

// Instructions of a compiled query. A query is a preorder array of
// instructions; each knows where its subtree ends, so an AND or OR steps
// from kid to kid and stops as soon as its value is known.
const (
	opAtom uint8 = iota + 1 // the atom arg occurred
	opAnd
	opOr
	opNot
	opNear // arg: offset of the NEAR's steps in QueryIndex.nearSteps
)

// instr is one instruction of a query too large to be decided from its
// postings.
type instr struct {
	op  uint8
	arg int32 // opAtom: atom id; opNear: offset into QueryIndex.nearSteps
	end int32 // index just past this instruction's subtree
}

// qposting says that an atom is a trigger of a subscriber: its
// occurrence makes the subscriber a candidate. Postings of an atom lie
// together in one array, and a posting carries all that deciding the
// subscriber needs when its query has at most inlineOthers atoms besides
// this one, as most have: those atoms and the query's truth table given
// that this one occurred. Matching then reads a found atom's subscribers
// in one sequential sweep and a few stamps that stay in the processor's
// fastest cache, instead of visiting each subscriber's records at random
// (with 10,000 queries, those are cache misses).
//
// A query's triggers are positive terms that it cannot match without
// (triggerAtoms): all of those of an OR's branches, and of an AND's (or a
// NEAR's) operands those of one, the fewest, so that a common word beside
// a rare one (golang (love OR great)) does not make the query a candidate
// for every item that has the common word. A subscriber with several
// triggers in an item is decided once, on the posting of the first of them
// to be found: a posting whose other triggers include one found earlier
// leaves the subscriber to that one. That needs no table of the candidates
// seen so far.
type qposting struct {
	sub  int32 // the subscriber's dense index
	term int32 // this posting's trigger: index into QueryIndex.terms
	dec  uint32
	// other are the query's other atoms in canonical order, atomNever
	// where it has fewer; other[0] is the query's first instruction when
	// dec has decTree.
	other [inlineOthers]int32
}

// inlineOthers is how many atoms a query may have besides a posting's own
// for the posting to decide it: queries of up to four atoms, which are
// most of them, keep the posting at 24 bytes.
const inlineOthers = 3

// Bits of qposting.dec.
const (
	// decTable is the truth table of the query given that the
	// posting's atom occurred: bit m is its value when other atom j
	// occurred for each bit j of m.
	decTable = 1<<(1<<inlineOthers) - 1
	// decPositiveShift places the mask of the other atoms that are
	// positive terms, which decide who reports the subscriber and with
	// how many terms.
	decPositiveShift = 1 << inlineOthers
	decPositive      = (1<<inlineOthers - 1) << decPositiveShift
	// decTriggerShift places the mask of the other atoms that are
	// triggers: one found earlier decided the subscriber.
	decTriggerShift = decPositiveShift + inlineOthers
	decTrigger      = (1<<inlineOthers - 1) << decTriggerShift
	// decTree: the query is too large for its postings; its tree is
	// evaluated and its positive terms are read from
	// QueryIndex.positive.
	decTree = 1 << (decTriggerShift + inlineOthers)
	// decLangs: the query has lang: or sentiment: atoms, whose stamps
	// are set the first time a query needs them in an item.
	decLangs = decTree << 1
	// decNear: the query has a NEAR, which its truth table reads as the
	// AND of its operands: when the table says yes, the query's tree
	// (QueryIndex.roots) decides with the words' positions. Most
	// candidates are turned down by the table without it.
	decNear = decLangs << 1
)

// positiveTerm is a positive term of a subscriber's query: its atom, its
// spelling and whether it is one of the query's triggers.
type positiveTerm struct {
	atom, term int32
	trigger    bool
}

// QueryIndex is an immutable index of many subscribers' queries. Every
// text atom of every query (words, phrases, and #tags and @users as the
// text tokens "#tag" and "@user") is one pattern of a single pattern set,
// and every prefix (kube*) one key of a prefix set, so an item's text is
// scanned once whatever the number of subscribers; the scan notes the
// word each is found at, for the NEARs. Only subscribers with a hit on a
// trigger — a text atom, prefix or from: not under a negation, of a cover
// of the query (triggerAtoms) — are candidates; the query language
// guarantees that a query cannot match without one. A candidate is decided
// from what its posting carries (see qposting), by evaluating its tree
// when its query is too large for that, and, for a query with a NEAR whose
// posting says it may hold, by its tree with the words' positions
// (query.NearScratch). AppendMatch is safe for concurrent use.
type QueryIndex struct {
	auto       *patternSet
	prefixes   *prefixSet          // prefix wildcards, nil if none
	prefixBase int32               // atom id of the first prefix
	authorBase int32               // atom id of the first from: author
	langBase   int32               // atom id of the first lang: code
	atomNever  int32               // the atom id that never occurs
	postOff    []int32             // atom id → its postings are posts[postOff[id]:postOff[id+1]]
	posts      []qposting          // postings of text atoms and from: authors, by atom id
	posted     []uint64            // bit per atom id: it has postings
	authors    nameTable           // from: value → author index
	langs      nameTable           // lang: code → code index
	subs       []int64             // dense index → subscriber id, ascending
	posOff     []int32             // dense index → its positive terms are positive[posOff[d]:posOff[d+1]]
	positive   []positiveTerm      // positive terms in canonical order
	terms      []string            // term id → its canonical spelling; a hit with one term shares a one-element slice of it
	prog       []instr             // instructions of the queries decided by their tree
	roots      []int32             // dense index → its query's first instruction, of a query with a NEAR (nearRoot)
	nearSteps  []query.NearStep    // the NEARs of those queries, their leaves numbered by atom id
	scratch    sync.Pool           // *queryScratch sized for this index
	patterns   map[string]struct{} // text patterns in use
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

// atomPosting is a posting before the postings are grouped by atom.
type atomPosting struct {
	atom int32
	qposting
}

func buildQueries(prev *QueryIndex, subs map[int64]*query.Query) *QueryIndex {
	ix := &QueryIndex{patterns: map[string]struct{}{}}
	ids := make([]int64, 0, len(subs))
	for id, q := range subs {
		if q != nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	authorIDs, langIDs, prefixSeen := map[string]int32{}, map[string]int32{}, map[string]bool{}
	var authors, langs, prefixes []string
	for _, id := range ids {
		for _, a := range subs[id].Atoms() {
			switch a.Kind {
			case query.Prefix:
				if !prefixSeen[a.Value] {
					prefixSeen[a.Value] = true
					prefixes = append(prefixes, a.Value)
				}
			case query.From, query.Field:
				key := a.Value
				if a.Kind == query.Field {
					key = fieldKey(a.Value)
				}
				if _, ok := authorIDs[key]; !ok {
					authorIDs[key] = int32(len(authors))
					authors = append(authors, key)
				}
			case query.Lang, query.Sentiment:
				key := a.Value
				if a.Kind == query.Sentiment {
					key = sentimentKey(a.Value)
				}
				if _, ok := langIDs[key]; !ok {
					langIDs[key] = int32(len(langs))
					langs = append(langs, key)
				}
			default:
				ix.patterns[a.Text()] = struct{}{}
			}
		}
	}
	if prev != nil && prev.auto != nil && covers(prev.auto, ix.patterns) {
		ix.auto = prev.auto
	} else {
		ix.auto = compile(ix.patterns)
	}
	ix.prefixBase = int32(len(ix.auto.patterns))
	var prefixIDs map[string]int32
	ix.prefixes, prefixIDs = newPrefixSet(prefixes)
	ix.authorBase = ix.prefixBase + int32(len(prefixes))
	ix.langBase = ix.authorBase + int32(len(authors))
	ix.atomNever = ix.langBase + int32(len(langs))
	ix.authors, ix.langs = newNameTable(authors), newNameTable(langs)
	atomID := func(a query.Atom) int32 {
		switch a.Kind {
		case query.From:
			return ix.authorBase + authorIDs[a.Value]
		case query.Field:
			return ix.authorBase + authorIDs[fieldKey(a.Value)]
		case query.Lang:
			return ix.langBase + langIDs[a.Value]
		case query.Sentiment:
			return ix.langBase + langIDs[sentimentKey(a.Value)]
		case query.Prefix:
			return ix.prefixBase + prefixIDs[a.Value]
		}
		return ix.auto.ids[a.Text()]
	}

	ix.subs = ids
	ix.posOff = make([]int32, len(ids)+1)
	ix.roots = make([]int32, len(ids))
	termIDs := map[string]int32{}
	var posts []atomPosting
	for d, id := range ids {
		q := subs[id]
		atoms := q.Atoms()
		aids := make([]int32, len(atoms))
		var dec uint32
		for j, a := range atoms {
			aids[j] = atomID(a)
			if a.Kind == query.Lang || a.Kind == query.Sentiment {
				dec |= decLangs
			}
		}
		// Atoms that share an id (the tag #go and the phrase "#go")
		// are left to the tree, whose terms are counted one by one.
		distinct := len(slices.Compact(slices.Sorted(slices.Values(aids)))) == len(aids)
		// A query with a NEAR needs the positions of its words, which
		// its tree asks for; its truth table would read NEAR as AND.
		inline := distinct && len(atoms) <= inlineOthers+1
		root := int32(-1)
		if near := hasNear(q.Root()); !inline || near {
			root = int32(len(ix.prog))
			ix.emit(q.Root(), atomID)
			if near {
				dec |= decNear
			}
		}
		ix.roots[d] = root
		if root >= 0 && ix.prog[root].op == opNear {
			// A query that is one NEAR: its table has read the NEAR
			// as AND already; its steps decide the rest.
			ix.roots[d] = nearRoot(ix.prog[root].arg)
		}
		positive, triggers := positiveAtoms(q), triggerAtoms(q)
		first := len(posts)
		for _, a := range positive {
			spelled := a.String()
			t, ok := termIDs[spelled]
			if !ok {
				t = int32(len(ix.terms))
				termIDs[spelled] = t
				ix.terms = append(ix.terms, spelled)
			}
			aid := atomID(a)
			trigger := slices.Contains(triggers, a)
			ix.positive = append(ix.positive, positiveTerm{atom: aid, term: t, trigger: trigger})
			if !trigger || slices.ContainsFunc(posts[first:], func(p atomPosting) bool { return p.atom == aid }) {
				continue // postings for triggers, one per atom id
			}
			po := qposting{sub: int32(d), term: t, dec: dec}
			if inline {
				po.dec |= smallQuery(q, a, atoms, aids, positive, triggers, ix.atomNever, &po.other)
			} else {
				po.dec |= decTree
				po.other = [inlineOthers]int32{root, ix.atomNever, ix.atomNever}
			}
			posts = append(posts, atomPosting{atom: aid, qposting: po})
		}
		ix.posOff[d+1] = int32(len(ix.positive))
	}
	// Group the postings by atom, each atom's in the order of the
	// subscribers.
	ix.postOff = make([]int32, ix.langBase+1)
	ix.posted = make([]uint64, ix.atomNever/64+1)
	for _, p := range posts {
		ix.postOff[p.atom+1]++
		ix.posted[p.atom>>6] |= 1 << (p.atom & 63)
	}
	for a := range ix.langBase {
		ix.postOff[a+1] += ix.postOff[a]
	}
	ix.posts = make([]qposting, len(posts))
	next := slices.Clone(ix.postOff[:ix.langBase])
	for _, p := range posts {
		ix.posts[next[p.atom]] = p.qposting
		next[p.atom]++
	}
	return ix
}

// smallQuery fills the other atoms of a posting of atom own of q, whose
// atoms (with their ids; positive are its positive terms, triggers its
// triggers) are at most inlineOthers+1, and returns the posting's truth
// table and masks of positive and trigger others (decTable, decPositive,
// decTrigger). For a query with a NEAR the table is an upper bound
// (bound): the query's tree decides where it says yes.
func smallQuery(q *query.Query, own query.Atom, atoms []query.Atom, aids []int32, positive, triggers []query.Atom, never int32, other *[inlineOthers]int32) uint32 {
	var others []query.Atom
	for j, a := range atoms {
		if a != own {
			other[len(others)] = aids[j]
			others = append(others, a)
		}
	}
	for j := len(others); j < inlineOthers; j++ {
		other[j] = never
	}
	var dec uint32
	for j, a := range others {
		if slices.Contains(positive, a) {
			dec |= 1 << (decPositiveShift + j)
		}
		if slices.Contains(triggers, a) {
			dec |= 1 << (decTriggerShift + j)
		}
	}
	for m := range 1 << len(others) {
		if bound(q.Root(), func(a query.Atom) bool { return a == own || m>>slices.Index(others, a)&1 == 1 }, true) {
			dec |= 1 << m
		}
	}
	return dec
}

// bound evaluates the tree at n on which atoms occur, as a bound of its
// value that holds whatever the words' positions: an upper bound when up
// (a NEAR reads as the AND of its operands), a lower one otherwise (a
// NEAR reads as false). A negation swaps them. For a tree without NEAR it
// is its value.
func bound(n *query.Node, hit func(query.Atom) bool, up bool) bool {
	switch n.Op {
	case query.OpAtom:
		return hit(n.Atom)
	case query.OpNot:
		return !bound(n.Kids[0], hit, !up)
	case query.OpNear:
		return up && n.Eval(hit)
	case query.OpAnd:
		for _, k := range n.Kids {
			if !bound(k, hit, up) {
				return false
			}
		}
		return true
	}
	for _, k := range n.Kids { // OpOr
		if bound(k, hit, up) {
			return true
		}
	}
	return false
}

// emit appends the instructions of the subtree at n.
func (ix *QueryIndex) emit(n *query.Node, atomID func(query.Atom) int32) {
	at := len(ix.prog)
	ix.prog = append(ix.prog, instr{})
	in := instr{}
	switch n.Op {
	case query.OpAtom:
		in = instr{op: opAtom, arg: atomID(n.Atom)}
	case query.OpAnd:
		in.op = opAnd
	case query.OpOr:
		in.op = opOr
	case query.OpNot:
		in.op = opNot
	case query.OpNear:
		// A NEAR is decided on its steps, which hold its operands.
		ix.prog[at] = instr{op: opNear, arg: int32(len(ix.nearSteps)), end: int32(len(ix.prog))}
		ix.nearSteps = query.AppendNear(ix.nearSteps, n, atomID)
		return
	}
	for _, k := range n.Kids {
		ix.emit(k, atomID)
	}
	in.end = int32(len(ix.prog))
	ix.prog[at] = in
}

// nameTable finds the index of a name (a from: author, a lang: code) from
// bytes of the item without allocating; it hashes as the pattern set
// hashes tokens.
type nameTable struct {
	keys  []uint64 // hash of the name in the slot, 0 if free
	idx   []int32  // the name's index
	names []string // index → name
	mask  uint64
}

func newNameTable(names []string) nameTable {
	size := 8
	for size < 2*len(names) {
		size *= 2
	}
	t := nameTable{keys: make([]uint64, size), idx: make([]int32, size), names: names, mask: uint64(size - 1)}
	var buf []byte
	for n, name := range names {
		buf = append(append(buf[:0], name...), make([]byte, 8)...)
		h := hashToken(buf, 0, len(name))
		i := h & t.mask
		for t.keys[i] != 0 {
			i = (i + 1) & t.mask
		}
		t.keys[i], t.idx[i] = h, int32(n)
	}
	return t
}

// lookup returns the index of name, or -1. name must have 8 bytes of room
// past its end, which hashing reads.
func (t *nameTable) lookup(name []byte) int32 {
	if len(t.names) == 0 {
		return -1
	}
	h := hashToken(name[:cap(name)], 0, len(name))
	for i := h & t.mask; t.keys[i] != 0; i = (i + 1) & t.mask {
		if t.keys[i] == h && string(name) == t.names[t.idx[i]] {
			return t.idx[i]
		}
	}
	return -1
}

// nearRoot encodes, in QueryIndex.roots, the offset of the steps of a
// query that is one NEAR, below -1 (the instruction indexes are 0 and up,
// -1 none).
func nearRoot(steps int32) int32 { return -2 - steps }

// hasNear reports whether the tree at n has a NEAR.
func hasNear(n *query.Node) bool {
	if n.Op == query.OpNear {
		return true
	}
	return slices.ContainsFunc(n.Kids, hasNear)
}

// positiveAtoms are the atoms of q reported as its terms when it matches,
// in the order of the canonical form (query.Query.Positive).
func positiveAtoms(q *query.Query) []query.Atom { return q.Positive() }

// triggerAtoms are positive atoms of q of which every item q matches has
// one: the atoms whose postings make a subscriber a candidate. The query
// language guarantees that there are some (every OR branch needs a
// positive term).
func triggerAtoms(q *query.Query) []query.Atom {
	atoms, _ := cover(q.Root(), false)
	return atoms
}

// cover returns atoms of n (negated if neg) one of which occurs wherever n
// holds, and whether there are such: a positive text atom or from: covers
// itself; an OR needs a cover of every branch, their union; an AND or a
// NEAR needs one of its operands', the one of the fewest atoms, the
// longest shortest atom breaking ties (longer words are rarer). Negation
// swaps AND and OR (De Morgan; a negated NEAR has no cover); a negated
// atom, lang: and sentiment: cover nothing.
func cover(n *query.Node, neg bool) ([]query.Atom, bool) {
	switch n.Op {
	case query.OpAtom:
		if neg || n.Atom.Kind == query.Lang || n.Atom.Kind == query.Sentiment {
			return nil, false
		}
		return []query.Atom{n.Atom}, true
	case query.OpNot:
		return cover(n.Kids[0], !neg)
	}
	if (n.Op == query.OpOr) != neg { // every kid must be covered
		var out []query.Atom
		for _, k := range n.Kids {
			c, ok := cover(k, neg)
			if !ok {
				return nil, false
			}
			for _, a := range c {
				if !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		}
		return out, true
	}
	var best []query.Atom
	found := false
	for _, k := range n.Kids {
		c, ok := cover(k, neg)
		if ok && (!found || len(c) < len(best) || len(c) == len(best) && shortest(c) > shortest(best)) {
			best, found = c, true
		}
	}
	return best, found
}

// shortest is the length of the shortest value among atoms.
func shortest(atoms []query.Atom) int {
	m := -1
	for _, a := range atoms {
		if l := len(a.Value); m < 0 || l < m {
			m = l
		}
	}
	return m
}
