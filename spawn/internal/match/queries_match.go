package match

import (
	"math"
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
	// stamp says when each atom occurred: an atom occurred in this call
	// when its stamp is above base, and of two that did, the one with
	// the lower stamp was found first. Stamps only grow, so nothing is
	// cleared between calls.
	stamp      []uint32
	tick, base uint32
	multi      []int32 // dense index of each hit with several terms
	name       []byte  // the item's author or language, lowercased
	lang       string  // the item's language
	sentiment  string  // the item's sentiment label
	langsDone  bool    // the item's language and sentiment stamped their atoms
	// occurAt is the token of each of occur, -1 for none, kept when the
	// index has NEARs. When a NEAR first asks in the call, posAt holds
	// each found atom's tokens, ascending, from posOff[atom] (valid for
	// the atoms stamped in the call), posLen[atom] of them.
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
	return &queryScratch{stamp: make([]uint32, ix.atomNever+1)}
}

// begin starts the stamps of a call that stamps at most n atoms.
func (s *queryScratch) begin(n int) {
	if uint64(s.tick)+uint64(n) > math.MaxUint32 {
		clear(s.stamp)
		s.tick = 0
	}
	s.base = s.tick
}

// mark stamps an atom as occurring now.
func (s *queryScratch) mark(atom int32) {
	s.tick++
	s.stamp[atom] = s.tick
}

// normalName sets s.name to name folded (query.Fold), with the room past
// its end that hashing reads.
func (s *queryScratch) normalName(name string) []byte {
	s.name = query.AppendFold(s.name[:0], name)
	n := len(s.name)
	s.name = append(s.name, 0, 0, 0, 0, 0, 0, 0, 0)[:n]
	return s.name
}

// stampLangs stamps the lang: codes the item's language matches: the
// language itself and each prefix of it that ends before a '-' (see
// LangMatches).
func (s *queryScratch) stampLangs(ix *QueryIndex) {
	s.langsDone = true
	lang := s.normalName(s.lang)
	for k := range len(lang) + 1 {
		if k == len(lang) || lang[k] == '-' {
			if c := ix.langs.lookup(lang[:k:cap(lang)]); c >= 0 {
				s.mark(ix.langBase + c)
			}
		}
	}
	if s.sentiment != "" {
		if c := ix.langs.lookup(s.normalName(sentimentKey(s.sentiment))); c >= 0 {
			s.mark(ix.langBase + c)
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
	// Stamp what occurred: the patterns, then the author, then (when a
	// query asks) the language's codes.
	s.begin(len(s.occur) + 4 + len(it.Lang) + len(it.Fields))
	s.found = s.found[:0]
	for _, p := range s.occur {
		if s.stamp[p] <= s.base {
			s.mark(p)
			s.found = append(s.found, p)
		}
	}
	for _, a := range [2]int32{author, authorID} {
		if a >= 0 {
			s.mark(ix.authorBase + a)
			s.found = append(s.found, ix.authorBase+a)
		}
	}
	if len(it.Fields) > 0 && len(ix.authors.names) > 0 {
		// Field atoms share the table of from: names (fieldKey).
		for name, v := range it.Fields {
			if f := ix.authors.lookup(s.normalName(fieldKey(name + ":" + v))); f >= 0 && s.stamp[ix.authorBase+f] <= s.base {
				s.mark(ix.authorBase + f)
				s.found = append(s.found, ix.authorBase+f)
			}
		}
	}
	s.lang, s.sentiment, s.langsDone = it.Lang, it.Sentiment, false
	// Decide the subscribers of each found atom; a hit with one term
	// shares it with the index.
	base, multi := len(dst), 0
	s.multi = s.multi[:0]
	stamp, since := s.stamp, uint64(s.base)
	for _, a := range s.found {
		if ix.posted[a>>6]&(1<<(a&63)) == 0 {
			continue // an atom no query is triggered by
		}
		own := uint64(stamp[a])
		for i := ix.postOff[a]; i < ix.postOff[a+1]; i++ {
			po := &ix.posts[i]
			n := 1
			if po.dec&decTree != 0 {
				if n = ix.decideTree(s, po, uint32(own)); n == 0 {
					continue
				}
			} else {
				if po.dec&decLangs != 0 && !s.langsDone {
					s.stampLangs(ix)
				}
				// For each other atom: whether it occurred, and whether
				// it did before this posting's atom; a stamp above
				// since is below it in uint64 arithmetic.
				v0, v1, v2 := uint64(stamp[po.other[0]]), uint64(stamp[po.other[1]]), uint64(stamp[po.other[2]])
				occurred := (since-v0)>>63 | (since-v1)>>63<<1 | (since-v2)>>63<<2
				before := occurred & ((v0-own)>>63 | (v1-own)>>63<<1 | (v2-own)>>63<<2)
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
			dst = append(dst, QueryHit{Subscriber: ix.subs[po.sub], Terms: one})
		}
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
			if s.stamp[t.atom] > s.base {
				terms = append(terms, ix.terms[t.term])
			}
		}
		k++
		hit.Terms = terms[start:len(terms):len(terms)]
	}
	return dst
}

// decideTree decides a query too large for its postings on the posting
// of an atom stamped own: it returns how many of the query's positive
// terms occurred, or 0 when an earlier trigger decides it or it does not
// match.
func (ix *QueryIndex) decideTree(s *queryScratch, po *qposting, own uint32) int {
	n := 0
	for _, t := range ix.positive[ix.posOff[po.sub]:ix.posOff[po.sub+1]] {
		if v := s.stamp[t.atom]; v > s.base {
			if t.trigger && v < own {
				return 0
			}
			n++
		}
	}
	if po.dec&decLangs != 0 && !s.langsDone {
		s.stampLangs(ix)
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
		return s.stamp[in.arg] > s.base
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
// stamps alone.
func (ix *QueryIndex) relaxed(s *queryScratch, steps []query.NearStep) bool {
	switch st := &steps[0]; st.Op {
	case query.OpAtom:
		return s.stamp[st.Leaf] > s.base
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
	if len(s.posOff) < len(s.stamp) {
		s.posOff, s.posLen = make([]int32, len(s.stamp)), make([]int32, len(s.stamp))
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
	if s.stamp[atom] <= s.base {
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
