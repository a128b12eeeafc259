package match

import (
	"slices"
	"strings"
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
	opFrom                  // the item's author is val
	opLang                  // the item's language is val or a subtag of it
	opAnd
	opOr
	opNot
)

type instr struct {
	op  uint8
	pat int32  // opText: pattern id
	end int32  // index just past this instruction's subtree
	val string // opFrom, opLang
}

// trigger is a positive atom of a subscriber's query: a hit on it makes
// the subscriber a candidate and names the term in the hit.
type trigger struct {
	pat  int32    // text atom's pattern id, or -1 for from:
	from string   // from: value
	one  []string // the term's canonical spelling, a one-element slice a hit may share
}

// QueryIndex is an immutable index of many subscribers' queries. Every
// text atom of every query (words, phrases, and #tags and @users as the
// text tokens "#tag" and "@user") is one pattern of a single Aho-Corasick
// automaton, so an item's text is scanned once whatever the number of
// subscribers. Only subscribers with a hit on a positive atom — a text
// atom or from: not under a negation — are candidates, and only their
// boolean trees are evaluated; the query language guarantees that a query
// cannot match without one. AppendMatch is safe for concurrent use.
type QueryIndex struct {
	auto     *automaton
	postings [][]int32           // pattern id → dense subscribers it triggers
	byAuthor map[string][]int32  // from: value → dense subscribers it triggers
	subs     []int64             // dense index → subscriber id, ascending
	roots    []int32             // dense index → first instruction of its query
	triggers [][]trigger         // dense index → positive atoms
	prog     []instr             // all queries' instructions
	queries  []*query.Query      // dense index → query
	scratch  sync.Pool           // *queryScratch sized for this index
	patterns map[string]struct{} // text patterns in use
}

// NewQueries indexes subscribers by their parsed queries. Subscribers
// with a nil query are left out: they want every item, and the caller
// handles them.
func NewQueries(subs map[int64]*query.Query) *QueryIndex {
	return buildQueries(nil, subs)
}

// Update returns an index of subs that shares this index's automaton when
// it holds every text atom of subs and enough of its patterns are still in
// use, as Index.Update does; only the queries are compiled again. The
// receiver stays valid.
func (ix *QueryIndex) Update(subs map[int64]*query.Query) *QueryIndex {
	return buildQueries(ix, subs)
}

func buildQueries(prev *QueryIndex, subs map[int64]*query.Query) *QueryIndex {
	ix := &QueryIndex{byAuthor: map[string][]int32{}, patterns: map[string]struct{}{}}
	for id, q := range subs {
		if q != nil {
			ix.subs = append(ix.subs, id)
		}
	}
	slices.Sort(ix.subs)
	ix.queries = make([]*query.Query, len(ix.subs))
	for i, id := range ix.subs {
		ix.queries[i] = subs[id]
		for _, a := range subs[id].Atoms() {
			if t := a.Text(); t != "" {
				ix.patterns[t] = struct{}{}
			}
		}
	}
	if prev != nil && prev.auto != nil && covers(prev.auto, ix.patterns) {
		ix.auto = prev.auto
	} else {
		ix.auto = compile(ix.patterns)
	}
	ix.postings = make([][]int32, len(ix.auto.patterns))
	ix.roots = make([]int32, len(ix.subs))
	ix.triggers = make([][]trigger, len(ix.subs))
	for i, q := range ix.queries {
		ix.roots[i] = int32(len(ix.prog))
		ix.emit(q.Root())
		ix.addTriggers(int32(i), q)
	}
	return ix
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
			in = instr{op: opFrom, val: a.Value}
		case query.Lang:
			in = instr{op: opLang, val: a.Value}
		default:
			in = instr{op: opText, pat: ix.auto.ids[a.Text()]}
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

// addTriggers records the positive atoms of q for dense subscriber d.
func (ix *QueryIndex) addTriggers(d int32, q *query.Query) {
	for _, a := range positiveAtoms(q) {
		t := trigger{pat: -1, one: []string{a.String()}}
		if a.Kind == query.From {
			t.from = a.Value
			ix.byAuthor[a.Value] = append(ix.byAuthor[a.Value], d)
		} else {
			t.pat = ix.auto.ids[a.Text()]
			ix.postings[t.pat] = append(ix.postings[t.pat], d)
		}
		ix.triggers[d] = append(ix.triggers[d], t)
	}
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

// Len is the number of subscribers in the index.
func (ix *QueryIndex) Len() int { return len(ix.subs) }

// Patterns is the number of distinct text atoms the automaton holds, those
// no subscriber uses any more included.
func (ix *QueryIndex) Patterns() int { return len(ix.auto.patterns) }

// queryScratch is the per-call working memory of AppendMatch.
type queryScratch struct {
	gen      uint32
	text     []byte
	patStamp []uint32 // pattern id → gen when found whole-word in this call
	subStamp []uint32 // dense subscriber → gen when a candidate in this call
	cands    []int32  // candidates in the order of their first trigger
	matched  []int32  // per hit: number of its terms that occurred
	author   string
	lang     string
}

func (ix *QueryIndex) getScratch() *queryScratch {
	if s, ok := ix.scratch.Get().(*queryScratch); ok {
		return s
	}
	return &queryScratch{
		patStamp: make([]uint32, len(ix.auto.patterns)),
		subStamp: make([]uint32, len(ix.subs)),
	}
}

func (s *queryScratch) next() {
	s.gen++
	if s.gen == 0 {
		clear(s.patStamp)
		clear(s.subStamp)
		s.gen = 1
	}
	s.cands, s.matched = s.cands[:0], s.matched[:0]
}

func (s *queryScratch) candidate(d int32) {
	if s.subStamp[d] != s.gen {
		s.subStamp[d] = s.gen
		s.cands = append(s.cands, d)
	}
}

// Match returns every indexed subscriber whose query the item matches,
// each with the positive terms that occur. Hits come in the order in which
// their first positive term was found (from: after the text). A hit's
// Terms may share memory with the index and must not be modified.
func (ix *QueryIndex) Match(it Item) []QueryHit {
	return ix.AppendMatch(nil, it)
}

// AppendMatch is Match appending the hits to dst, so that a caller
// matching item after item can reuse one slice; it allocates only when a
// hit has more than one term.
func (ix *QueryIndex) AppendMatch(dst []QueryHit, it Item) []QueryHit {
	if len(ix.subs) == 0 {
		return dst
	}
	s := ix.getScratch()
	defer ix.scratch.Put(s)
	s.next()
	if len(ix.auto.patterns) > 0 {
		s.text = appendLower(s.text[:0], it.Text)
		lower := s.text
		scan := ix.auto.ac.IterOverlappingByte(lower)
		for m := scan.Next(); m != nil; m = scan.Next() {
			p := m.Pattern()
			if s.patStamp[p] == s.gen || !bounded(lower, m.Start(), m.End()) {
				continue
			}
			s.patStamp[p] = s.gen
			for _, d := range ix.postings[p] {
				s.candidate(d)
			}
		}
	}
	s.author, s.lang = "", ""
	if it.Author != "" {
		s.author = normalAuthor(it.Author)
		for _, d := range ix.byAuthor[s.author] {
			s.candidate(d)
		}
	}
	if len(s.cands) == 0 {
		return dst
	}
	s.lang = strings.ToLower(it.Lang)
	// Evaluate the candidates; count the terms of each hit.
	base, multi := len(dst), 0
	for _, d := range s.cands {
		if !ix.eval(s, ix.roots[d]) {
			continue
		}
		n := int32(0)
		var one []string
		for i := range ix.triggers[d] {
			if t := &ix.triggers[d][i]; ix.occurred(s, t) {
				n++
				one = t.one
			}
		}
		if n > 1 {
			multi += int(n)
			one = nil
		}
		dst = append(dst, QueryHit{Subscriber: ix.subs[d], Terms: one})
		s.matched = append(s.matched, n)
	}
	if multi == 0 {
		return dst
	}
	// Hits with several terms get their own slices of one array.
	terms := make([]string, 0, multi)
	for h := range dst[base:] {
		hit := &dst[base+h]
		if s.matched[h] < 2 {
			continue
		}
		d, _ := slices.BinarySearch(ix.subs, hit.Subscriber)
		start := len(terms)
		for i := range ix.triggers[d] {
			if t := &ix.triggers[d][i]; ix.occurred(s, t) {
				terms = append(terms, t.one[0])
			}
		}
		hit.Terms = terms[start:len(terms):len(terms)]
	}
	return dst
}

func (ix *QueryIndex) occurred(s *queryScratch, t *trigger) bool {
	if t.pat >= 0 {
		return s.patStamp[t.pat] == s.gen
	}
	return t.from == s.author
}

// eval evaluates the subtree at instruction i for the item of this call.
func (ix *QueryIndex) eval(s *queryScratch, i int32) bool {
	in := &ix.prog[i]
	switch in.op {
	case opText:
		return s.patStamp[in.pat] == s.gen
	case opFrom:
		return s.author == in.val
	case opLang:
		return LangMatches(s.lang, in.val)
	case opNot:
		return !ix.eval(s, i+1)
	case opAnd:
		for j := i + 1; j < in.end; j = ix.prog[j].end {
			if !ix.eval(s, j) {
				return false
			}
		}
		return true
	case opOr:
		for j := i + 1; j < in.end; j = ix.prog[j].end {
			if ix.eval(s, j) {
				return true
			}
		}
	}
	return false
}

// normalAuthor is an author as from: compares it: lowercased, without a
// leading '@'.
func normalAuthor(a string) string {
	return strings.ToLower(strings.TrimPrefix(a, "@"))
}

// LangMatches reports whether an item's language tag (lowercased) is the
// code of a lang: atom or one of its subtags: lang:en matches "en" and
// "en-gb", lang:pt-br only "pt-br" and its own subtags.
func LangMatches(lang, code string) bool {
	return lang == code || len(lang) > len(code) && lang[len(code)] == '-' && lang[:len(code)] == code
}

// MatchQuery is the one-subscriber form of QueryIndex.Match: whether the
// item matches q, and the positive terms of q that occur in it. It
// evaluates q directly, for a subscriber that is not worth an index.
func MatchQuery(q *query.Query, it Item) ([]string, bool) {
	lower := strings.ToLower(it.Text)
	author, lang := normalAuthor(it.Author), strings.ToLower(it.Lang)
	occurs := func(a query.Atom) bool {
		switch a.Kind {
		case query.From:
			return author == a.Value
		case query.Lang:
			return LangMatches(lang, a.Value)
		}
		return query.ContainsWord(lower, a.Text())
	}
	if !q.Eval(occurs) {
		return nil, false
	}
	var terms []string
	for _, a := range positiveAtoms(q) {
		if occurs(a) {
			terms = append(terms, a.String())
		}
	}
	return terms, true
}
