package match

import (
	"math"
	"math/bits"
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
	langsDone  bool    // the item's language stamped its lang: codes
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
	return ix.appendMatch(s, dst, it)
}

// appendMatch is AppendMatch with the working memory s.
func (ix *QueryIndex) appendMatch(s *queryScratch, dst []QueryHit, it Item) []QueryHit {
	s.occur = s.occur[:0]
	if len(ix.auto.patterns) > 0 {
		s.lower(it.Text)
		s.occur = ix.auto.find(s.occur, &s.tokenizer)
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
	s.begin(len(s.occur) + 3 + len(it.Lang) + len(it.Fields))
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
	s.lang, s.langsDone = it.Lang, false
	// Decide the subscribers of each found atom; a hit with one term
	// shares it with the index.
	base, multi := len(dst), 0
	s.multi = s.multi[:0]
	stamp, since := s.stamp, uint64(s.base)
	for _, a := range s.found {
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
				if before&positive != 0 || po.dec>>occurred&1 == 0 {
					continue // decided on an earlier term, or no match
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
// terms occurred, or 0 when an earlier one decides it or it does not
// match.
func (ix *QueryIndex) decideTree(s *queryScratch, po *qposting, own uint32) int {
	n := 0
	for _, t := range ix.positive[ix.posOff[po.sub]:ix.posOff[po.sub+1]] {
		if v := s.stamp[t.atom]; v > s.base {
			if v < own {
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
	}
	return false
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
