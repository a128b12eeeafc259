package match

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Len is the number of subscribers in the index.
func (ix *QueryIndex) Len() int { return len(ix.subs) }

// Patterns is the number of distinct text atoms the pattern set holds, those
// no subscriber uses any more included.
func (ix *QueryIndex) Patterns() int { return len(ix.auto.patterns) }

// queryScratch is the per-call working memory of AppendMatch.
type queryScratch struct {
	tokenizer
	occur []int32 // pattern ids found, repeats included
	found []int32 // atom ids found, in the order found
	// seen holds two bits per atom id, in pairs of words so that both
	// of an atom are in one cache line: word 2w has bit a%64 set when
	// atom a = 64w + a%64 occurred in this call, word 2w+1 when its
	// postings have been read (it was found before the atom whose
	// postings are being read). A few KiB for 10,000 queries, it stays
	// in the processor's fastest cache where an array of a word per atom
	// would not. The words of the atoms set (found and langs) are
	// cleared when the call starts.
	seen      []uint64
	langAtoms []int32 // lang: and sentiment: atoms set in this call
	multi     []int32 // dense index of each hit with several terms
	name      []byte  // the item's author or language, lowercased
	lang      string  // the item's language
	sentiment string  // the item's sentiment label
	langsDone bool    // the item's language and sentiment set their atoms
	// occurAt is the token of each of occur, -1 for none, kept when the
	// index has NEARs. When a NEAR first asks in the call, posAt holds
	// each found atom's tokens, ascending, from posOff[atom] (valid for
	// the atoms found in the call), posLen[atom] of them.
	near           query.NearScratch
	occurAt        []int32
	posDone        bool
	posAt          []int32
	posOff, posLen []int32
}

func (ix *QueryIndex) getScratch() *queryScratch {
	if s, ok := ix.scratch.Get().(*queryScratch); ok {
		return s
	}
	return &queryScratch{seen: make([]uint64, 2*(ix.atomNever/64+1))}
}

// begin starts a call: what the last one set no longer counts.
func (s *queryScratch) begin() {
	for _, a := range s.found {
		s.seen[2*(a>>6)], s.seen[2*(a>>6)+1] = 0, 0
	}
	for _, a := range s.langAtoms {
		s.seen[2*(a>>6)] = 0
	}
	s.found, s.langAtoms = s.found[:0], s.langAtoms[:0]
}

// occurred reports whether an atom occurred in this call.
func (s *queryScratch) occurred(atom int32) bool {
	return s.seen[2*(atom>>6)]>>(atom&63)&1 != 0
}

// foundBefore reports whether an atom's postings have been read in this
// call: it was found before the one being decided.
func (s *queryScratch) foundBefore(atom int32) bool {
	return s.seen[2*(atom>>6)+1]>>(atom&63)&1 != 0
}

// find notes that an atom occurred, once: it reports whether it is new.
func (s *queryScratch) find(atom int32) bool {
	w, b := &s.seen[2*(atom>>6)], uint64(1)<<(atom&63)
	if *w&b != 0 {
		return false
	}
	*w |= b
	s.found = append(s.found, atom)
	return true
}

// markLang notes that a lang: or sentiment: atom occurred.
func (s *queryScratch) markLang(atom int32) {
	s.seen[2*(atom>>6)] |= 1 << (atom & 63)
	s.langAtoms = append(s.langAtoms, atom)
}

// normalName sets s.name to name folded (query.Fold), with the room past
// its end that hashing reads.
func (s *queryScratch) normalName(name string) []byte {
	s.name = query.AppendFold(s.name[:0], name)
	n := len(s.name)
	s.name = append(s.name, 0, 0, 0, 0, 0, 0, 0, 0)[:n]
	return s.name
}

// setLangs sets the lang: codes the item's language matches: the
// language itself and each prefix of it that ends before a '-' (see
// LangMatches), and its sentiment: label.
func (s *queryScratch) setLangs(ix *QueryIndex) {
	s.langsDone = true
	lang := s.normalName(s.lang)
	for k := range len(lang) + 1 {
		if k == len(lang) || lang[k] == '-' {
			if c := ix.langs.lookup(lang[:k:cap(lang)]); c >= 0 {
				s.markLang(ix.langBase + c)
			}
		}
	}
	if s.sentiment != "" {
		if c := ix.langs.lookup(s.normalName(sentimentKey(s.sentiment))); c >= 0 {
			s.markLang(ix.langBase + c)
		}
	}
}

// Match returns every indexed subscriber whose query the item matches,
// each with the positive terms that occur. Hits come in the order in which
// their first trigger (queries.go) was found (from: after the text). A hit's
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
	return ix.appendMatch(s, dst, it)
}

// appendMatch is AppendMatch with the working memory s.
func (ix *QueryIndex) appendMatch(s *queryScratch, dst []QueryHit, it Item) []QueryHit {
	s.begin()
	s.occur, s.occurAt, s.posDone = s.occur[:0], s.occurAt[:0], false
	if len(ix.auto.patterns) > 0 || ix.prefixes != nil {
		s.lower(it.Text)
		// Where each occurs is kept only for the NEARs.
		var at *[]int32
		if len(ix.nearSteps) > 0 {
			at = &s.occurAt
		}
		s.occur = ix.auto.find(s.occur, &s.tokenizer, at)
		if ix.prefixes != nil {
			s.occur = ix.prefixes.find(s.occur, &s.tokenizer, ix.prefixBase, at)
		}
	}
	author, authorID := int32(-1), int32(-1)
	if len(ix.authors.names) > 0 {
		// from: names the author by handle or by account id: either
		// may be the one a query wrote.
		if it.Author != "" {
			author = ix.authors.lookup(s.normalName(strings.TrimPrefix(it.Author, "@")))
		}
		if it.AuthorID != "" && it.AuthorID != it.Author {
			if authorID = ix.authors.lookup(s.normalName(it.AuthorID)); authorID == author {
				authorID = -1
			}
		}
	}
	// Note what occurred: the patterns, then the author, then (when a
	// query asks) the language's codes.
	for _, p := range s.occur {
		s.find(p)
	}
	for _, a := range [2]int32{author, authorID} {
		if a >= 0 {
			s.find(ix.authorBase + a)
		}
	}
	if len(it.Fields) > 0 && len(ix.authors.names) > 0 {
		// Field atoms share the table of from: names (fieldKey).
		for name, v := range it.Fields {
			if f := ix.authors.lookup(s.normalName(fieldKey(name + ":" + v))); f >= 0 {
				s.find(ix.authorBase + f)
			}
		}
	}
	s.lang, s.sentiment, s.langsDone = it.Lang, it.Sentiment, false
	// Decide the subscribers of each found atom; a hit with one term
	// shares it with the index.
	base, multi := len(dst), 0
	s.multi = s.multi[:0]
	seen := s.seen
	for _, a := range s.found {
		if ix.posted[a>>6]&(1<<(a&63)) == 0 {
			seen[2*(a>>6)+1] |= 1 << (a & 63)
			continue // an atom no query is triggered by
		}
		for i := ix.postOff[a]; i < ix.postOff[a+1]; i++ {
			po := &ix.posts[i]
			n := 1
			if po.dec&decTree != 0 {
				if n = ix.decideTree(s, po); n == 0 {
					continue
				}
			} else {
				if po.dec&decLangs != 0 && !s.langsDone {
					s.setLangs(ix)
				}
				// For each other atom: whether it occurred, and whether
				// it was found before this posting's atom.
				o0, o1, o2 := po.other[0], po.other[1], po.other[2]
				w0, w1, w2 := seen[2*(o0>>6):][:2], seen[2*(o1>>6):][:2], seen[2*(o2>>6):][:2]
				occurred := w0[0]>>(o0&63)&1 | w1[0]>>(o1&63)&1<<1 | w2[0]>>(o2&63)&1<<2
				before := w0[1]>>(o0&63)&1 | w1[1]>>(o1&63)&1<<1 | w2[1]>>(o2&63)&1<<2
				positive := uint64(po.dec&decPositive) >> decPositiveShift
				trigger := uint64(po.dec&decTrigger) >> decTriggerShift
				if before&trigger != 0 || po.dec>>occurred&1 == 0 {
					continue // decided on an earlier trigger, or no match
				}
				if po.dec&decNear != 0 && !ix.decideNear(s, ix.roots[po.sub]) {
					continue // its NEAR does not hold
				}
				n += bits.OnesCount64(occurred & positive)
			}
			var one []string
			if n == 1 {
				one = ix.terms[po.term : po.term+1 : po.term+1]
			} else {
				multi += n
				s.multi = append(s.multi, po.sub)
			}
			dst = append(dst, QueryHit{Subscriber: po.id, Terms: one})
		}
		seen[2*(a>>6)+1] |= 1 << (a & 63)
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
		d := s.multi[k]
		for _, t := range ix.positive[ix.posOff[d]:ix.posOff[d+1]] {
			if s.occurred(t.atom) {
				terms = append(terms, ix.terms[t.term])
			}
		}
		k++
		hit.Terms = terms[start:len(terms):len(terms)]
	}
	return dst
}

// decideTree decides a query too large for its postings on the posting
// of the atom whose postings are being read: it returns how many of the
// query's positive terms occurred, or 0 when an earlier trigger decides
// it or it does not match.
func (ix *QueryIndex) decideTree(s *queryScratch, po *qposting) int {
	n := 0
	for _, t := range ix.positive[ix.posOff[po.sub]:ix.posOff[po.sub+1]] {
		if s.occurred(t.atom) {
			if t.trigger && s.foundBefore(t.atom) {
				return 0
			}
			n++
		}
	}
	if po.dec&decLangs != 0 && !s.langsDone {
		s.setLangs(ix)
	}
	if !ix.eval(s, po.other[0]) {
		return 0
	}
	return n
}

// eval evaluates the subtree at instruction i for the item of this call.
func (ix *QueryIndex) eval(s *queryScratch, i int32) bool {
	in := ix.prog[i]
	switch in.op {
	case opAtom:
		return s.occurred(in.arg)
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
	case opNear:
		steps := ix.nearSteps[in.arg:]
		return ix.relaxed(s, steps) && ix.near(s, steps)
	}
	return false
}

// decideNear decides, with the words' positions, a query with a NEAR
// whose truth table said it may hold: root is its QueryIndex.roots entry.
func (ix *QueryIndex) decideNear(s *queryScratch, root int32) bool {
	if root < -1 {
		return ix.near(s, ix.nearSteps[-2-root:])
	}
	return ix.eval(s, root)
}

// relaxed reads the NEAR whose steps start at steps[0], and what is under
// it, as the AND of its operands: what must hold for it to hold, from the
// atoms that occurred alone.
func (ix *QueryIndex) relaxed(s *queryScratch, steps []query.NearStep) bool {
	switch st := &steps[0]; st.Op {
	case query.OpAtom:
		return s.occurred(st.Leaf)
	case query.OpOr:
		for k := int32(1); k < st.End; k += steps[k].End {
			if ix.relaxed(s, steps[k:]) {
				return true
			}
		}
		return false
	}
	return ix.relaxed(s, steps[1:]) && ix.relaxed(s, steps[1+steps[1].End:])
}

// near decides the NEAR whose steps start at steps[0] on the item of
// this call, from the positions of its atoms.
func (ix *QueryIndex) near(s *queryScratch, steps []query.NearStep) bool {
	if !s.posDone {
		s.positions()
	}
	return s.near.Decide(steps, s.positionsOf)
}

// positions groups the tokens where each found atom occurs by atom, for
// the NEARs of the call. A pattern's occurrences come token by token, and
// so do a prefix's: each atom's tokens stay ascending.
func (s *queryScratch) positions() {
	s.posDone = true
	if n := 64 * len(s.seen) / 2; len(s.posOff) < n {
		s.posOff, s.posLen = make([]int32, n), make([]int32, n)
	}
	for _, a := range s.found {
		s.posLen[a] = 0
	}
	for k, a := range s.occur {
		if s.occurAt[k] >= 0 {
			s.posLen[a]++
		}
	}
	off := int32(0)
	for _, a := range s.found {
		s.posOff[a] = off
		off += s.posLen[a]
		s.posLen[a] = 0
	}
	s.posAt = slices.Grow(s.posAt[:0], int(off))[:off]
	for k, a := range s.occur {
		if at := s.occurAt[k]; at >= 0 {
			s.posAt[s.posOff[a]+s.posLen[a]] = at
			s.posLen[a]++
		}
	}
}

// positionsOf returns the tokens at which an atom occurs, ascending.
func (s *queryScratch) positionsOf(atom int32) []int32 {
	if !s.occurred(atom) {
		return nil
	}
	start := s.posOff[atom]
	end := start + s.posLen[atom]
	return s.posAt[start:end:end]
}

// normalAuthor is an author as from: compares it: lowercased, without a
// leading '@'.
func normalAuthor(a string) string {
	return strings.ToLower(strings.TrimPrefix(a, "@"))
}

// LangMatches reports whether an item's language tag (lowercased) is the
// code of a lang: atom or one of its subtags (query.LangMatches).
func LangMatches(lang, code string) bool { return query.LangMatches(lang, code) }

// MatchQuery is the one-subscriber form of QueryIndex.Match: whether the
// item matches q, and the positive terms of q that occur in it. It is
// query.Query.Match, which the hub's match alerts share.
func MatchQuery(q *query.Query, it Item) ([]string, bool) { return q.Match(query.Doc(it)) }
