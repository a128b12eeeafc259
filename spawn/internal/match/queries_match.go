package match

import (
	"strings"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Len is the number of subscribers in the index.
func (ix *QueryIndex) Len() int { return len(ix.subs) }

// Patterns is the number of distinct text atoms the pattern set holds, those
// no subscriber uses any more included.
func (ix *QueryIndex) Patterns() int { return len(ix.auto.patterns) }

// candidate is a subscriber with a positive term in this call's item.
type candidate struct {
	*qposting       // its first hit
	n         int32 // positive terms that occurred
	last      int32 // the last of them (term id)
}

// candSlot is a slot of the table that finds a subscriber's candidate,
// valid when gen is the call's generation.
type candSlot struct {
	gen     uint32
	sub, at int32 // dense subscriber, index in cands
}

// minCandSlots is the initial size of the candidate table: an item has
// tens of candidates, and the table is small enough to stay in the
// processor's fastest cache, unlike an array over all subscribers.
const minCandSlots = 64

// queryScratch is the per-call working memory of AppendMatch.
type queryScratch struct {
	tokenizer
	gen       uint32
	occur     []int32     // pattern ids found, repeats included
	patStamp  []uint32    // pattern id → gen when found whole-word in this call
	candSlots []candSlot  // dense subscriber → its index in cands; a power of two
	cands     []candidate // in the order of their first term
	multi     []int32     // dense index of each hit with several terms
	langStamp []uint32    // code id → gen when langOK was computed
	langOK    []bool      // code id → the item's language matches the code
	author    int32       // author id of the item, -1 if no query names it
	lang      string
}

func (ix *QueryIndex) getScratch() *queryScratch {
	if s, ok := ix.scratch.Get().(*queryScratch); ok {
		return s
	}
	return &queryScratch{
		patStamp:  make([]uint32, len(ix.auto.patterns)),
		candSlots: make([]candSlot, minCandSlots),
		langStamp: make([]uint32, len(ix.langs)),
		langOK:    make([]bool, len(ix.langs)),
	}
}

func (s *queryScratch) next() {
	s.gen++
	if s.gen == 0 {
		clear(s.patStamp)
		clear(s.candSlots)
		clear(s.langStamp)
		s.gen = 1
	}
	s.cands, s.multi = s.cands[:0], s.multi[:0]
}

// hit records that a positive term of a subscriber occurred.
func (s *queryScratch) hit(p *qposting) {
	mask := uint32(len(s.candSlots) - 1)
	for i := uint32(p.sub) * 0x9e3779b1 & mask; ; i = (i + 1) & mask {
		sl := &s.candSlots[i]
		if sl.gen != s.gen {
			if 2*len(s.cands) >= len(s.candSlots) {
				s.growCands()
				s.hit(p)
				return
			}
			*sl = candSlot{gen: s.gen, sub: p.sub, at: int32(len(s.cands))}
			s.cands = append(s.cands, candidate{qposting: p, n: 1, last: p.term})
			return
		}
		if sl.sub == p.sub {
			c := &s.cands[sl.at]
			c.n++
			c.last = p.term
			return
		}
	}
}

// growCands doubles the candidate table.
func (s *queryScratch) growCands() {
	s.candSlots = make([]candSlot, 2*len(s.candSlots))
	mask := uint32(len(s.candSlots) - 1)
	for at, c := range s.cands {
		i := uint32(c.sub) * 0x9e3779b1 & mask
		for s.candSlots[i].gen == s.gen {
			i = (i + 1) & mask
		}
		s.candSlots[i] = candSlot{gen: s.gen, sub: c.sub, at: int32(at)}
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
		s.lower(it.Text)
		s.occur = ix.auto.find(s.occur[:0], &s.tokenizer)
		for _, p := range s.occur {
			if s.patStamp[p] == s.gen {
				continue
			}
			s.patStamp[p] = s.gen
			for i := range ix.postings[p] {
				s.hit(&ix.postings[p][i])
			}
		}
	}
	s.author = -1
	if it.Author != "" && len(ix.authors) > 0 {
		if id, ok := ix.authors[normalAuthor(it.Author)]; ok {
			s.author = id
			for i := range ix.byAuthor[id] {
				s.hit(&ix.byAuthor[id][i])
			}
		}
	}
	if len(s.cands) == 0 {
		return dst
	}
	if len(ix.langs) > 0 {
		s.lang = strings.ToLower(it.Lang)
	}
	// Decide the candidates; a hit with one term shares it with the
	// index.
	base := len(dst)
	multi := 0
	for i := range s.cands {
		c := &s.cands[i]
		switch {
		case c.need > 0:
			if c.n < c.need {
				continue
			}
		case c.need < 0:
			if !ix.evalTable(s, c.qposting) {
				continue
			}
		default:
			if !ix.eval(s, c.root) {
				continue
			}
		}
		var one []string
		if c.n == 1 {
			one = ix.terms[c.last : c.last+1 : c.last+1]
		} else {
			multi += int(c.n)
			s.multi = append(s.multi, c.sub)
		}
		dst = append(dst, QueryHit{Subscriber: c.id, Terms: one})
	}
	if multi == 0 {
		return dst
	}
	// Hits with several terms get their own slices of one array, in the
	// order of the canonical form.
	terms := make([]string, 0, multi)
	k := 0
	for h := range dst[base:] {
		hit := &dst[base+h]
		if hit.Terms != nil {
			continue
		}
		start := len(terms)
		for _, t := range ix.positive[s.multi[k]] {
			if s.occurred(t) {
				terms = append(terms, ix.terms[t.term])
			}
		}
		k++
		hit.Terms = terms[start:len(terms):len(terms)]
	}
	return dst
}

// occurred reports whether a positive term occurred in this call's item.
func (s *queryScratch) occurred(t positiveTerm) bool {
	if t.pat >= 0 {
		return s.patStamp[t.pat] == s.gen
	}
	return t.author == s.author
}

// evalTable evaluates a small query by its truth table.
func (ix *QueryIndex) evalTable(s *queryScratch, po *qposting) bool {
	m := 0
	for j, r := range po.atoms[:-po.need] {
		id := int32(r & refID)
		var ok bool
		switch r &^ refID {
		case refText:
			ok = s.patStamp[id] == s.gen
		case refFrom:
			ok = s.author == id
		default:
			ok = s.langMatches(ix, id)
		}
		if ok {
			m |= 1 << j
		}
	}
	return po.table>>m&1 == 1
}

// langMatches reports whether the item's language matches code id.
func (s *queryScratch) langMatches(ix *QueryIndex, id int32) bool {
	if s.langStamp[id] != s.gen {
		s.langStamp[id] = s.gen
		s.langOK[id] = LangMatches(s.lang, ix.langs[id])
	}
	return s.langOK[id]
}

// eval evaluates the subtree at instruction i for the item of this call.
func (ix *QueryIndex) eval(s *queryScratch, i int32) bool {
	in := ix.prog[i]
	switch in.op {
	case opText:
		return s.patStamp[in.arg] == s.gen
	case opFrom:
		return s.author == in.arg
	case opLang:
		return s.langMatches(ix, in.arg)
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
