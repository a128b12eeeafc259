// Package match finds which subscribers of a shared data source want an
// item, in one pass over its text however many subscribers share the
// source: an Index for keyword lists, a QueryIndex for queries in the query
// language (package query). Matching is case-insensitive and whole-word,
// by the query language's word rules (query.ContainsWord). How: docs/decisions/0004-keyword-matching.md and
// docs/decisions/0005-query-index.md.
package match

import (
	"slices"
	"sync"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// reuseMinLive is the share of a pattern set's patterns that must still be
// in use for Update to keep the set instead of compiling a new one: below
// it the set carries too many dead patterns.
const reuseMinLive = 0.5

// Hit is one subscriber an item's text matched.
type Hit struct {
	// Subscriber is the id the subscriber was indexed under.
	Subscriber int64
	// Keywords are the subscriber's keywords that occur in the text, as
	// the subscriber spelled them and in its order.
	Keywords []string
}

// posting says that a pattern is keyword kw of subscriber sub (dense
// indexes into Index.subs and Index.keywords[sub]). It carries what a hit
// needs, so that Match reads a pattern's postings in one sequential sweep.
type posting struct {
	sub, kw int32
	id      int64    // Index.subs[sub]
	one     []string // Index.keywords[sub][kw:kw+1]: the hit's keywords when only this one matched
}

// Index is an immutable keyword index of many subscribers. Match is safe
// for concurrent use.
type Index struct {
	auto     *patternSet
	postings [][]posting // per pattern id
	subs     []int64     // dense index → subscriber id, ascending
	keywords [][]string  // dense index → keywords as given
	live     int         // patterns with at least one posting
	scratch  sync.Pool   // *scratch sized for this index
}

// New indexes subscribers by their keywords. Subscribers without keywords
// are left out: they want every item, and the caller handles them. Empty
// keywords never match.
func New(subs map[int64][]string) *Index {
	return build(nil, subs)
}

// Update returns an index of subs that shares this index's pattern set when
// every keyword of subs is already one of its patterns and enough of them
// are still in use; otherwise it compiles a new one. Changing which
// subscribers use a stable vocabulary of keywords is then cheap: only the
// postings are rebuilt. The receiver stays valid.
func (ix *Index) Update(subs map[int64][]string) *Index {
	return build(ix, subs)
}

func build(prev *Index, subs map[int64][]string) *Index {
	ix := &Index{}
	for id, kws := range subs {
		if len(kws) > 0 {
			ix.subs = append(ix.subs, id)
		}
	}
	slices.Sort(ix.subs)
	ix.keywords = make([][]string, len(ix.subs))
	lowered := make([][]string, len(ix.subs))
	wanted := map[string]struct{}{}
	for i, id := range ix.subs {
		ix.keywords[i] = slices.Clone(subs[id])
		lowered[i] = make([]string, len(ix.keywords[i]))
		for j, k := range ix.keywords[i] {
			lk := query.Fold(k)
			lowered[i][j] = lk
			if lk != "" {
				wanted[lk] = struct{}{}
			}
		}
	}
	if prev != nil && prev.auto != nil && covers(prev.auto, wanted) {
		ix.auto = prev.auto
	} else {
		ix.auto = compile(wanted)
	}
	ix.postings = make([][]posting, len(ix.auto.patterns))
	for i := range lowered {
		for j, lk := range lowered[i] {
			if lk == "" {
				continue
			}
			p := ix.auto.ids[lk]
			if len(ix.postings[p]) == 0 {
				ix.live++
			}
			own := ix.keywords[i]
			ix.postings[p] = append(ix.postings[p], posting{sub: int32(i), kw: int32(j), id: ix.subs[i], one: own[j : j+1 : j+1]})
		}
	}
	return ix
}

// covers reports whether a compiled pattern set holds every wanted
// pattern and enough of its patterns are wanted to be worth keeping.
func covers(a *patternSet, wanted map[string]struct{}) bool {
	if float64(len(wanted)) < reuseMinLive*float64(len(a.patterns)) {
		return false
	}
	for p := range wanted {
		if _, ok := a.ids[p]; !ok {
			return false
		}
	}
	return true
}

// Len is the number of subscribers in the index.
func (ix *Index) Len() int { return len(ix.subs) }

// Patterns is the number of distinct keywords the pattern set holds, those
// no subscriber uses any more included.
func (ix *Index) Patterns() int { return len(ix.auto.patterns) }

// scratch is the per-call working memory of Match, pooled per index.
type scratch struct {
	tokenizer
	gen      uint32
	patStamp []uint32 // pattern id → gen when found in this call
	subStamp []uint32 // dense subscriber → gen when hit in this call
	subHit   []int32  // dense subscriber → its hit's position
	occur    []int32  // pattern ids found, repeats included
	found    []int32  // pattern ids found, in order
	counts   []int32  // per hit: keywords, then the next free slot (-1: a single keyword)
	kwIdx    []int32  // per matched keyword: its index in the subscriber's list
	hitSubs  []int32  // per hit: dense subscriber
}

func (ix *Index) getScratch() *scratch {
	if s, ok := ix.scratch.Get().(*scratch); ok {
		return s
	}
	return &scratch{
		patStamp: make([]uint32, len(ix.auto.patterns)),
		subStamp: make([]uint32, len(ix.subs)),
		subHit:   make([]int32, len(ix.subs)),
	}
}

// next starts a new call: stamps from earlier calls no longer count.
func (s *scratch) next() {
	s.gen++
	if s.gen == 0 {
		clear(s.patStamp)
		clear(s.subStamp)
		s.gen = 1
	}
	s.found, s.counts, s.kwIdx, s.hitSubs = s.found[:0], s.counts[:0], s.kwIdx[:0], s.hitSubs[:0]
}

// Match returns every indexed subscriber at least one of whose keywords
// occurs in text, each with the keywords that did. Hits come in the order
// in which their first keyword was found. Match scans the text once
// whatever the number of subscribers and allocates only the result; a
// hit's Keywords may share memory with the index and must not be modified.
func (ix *Index) Match(text string) []Hit {
	return ix.AppendMatch(nil, text)
}

// AppendMatch is Match appending the hits to dst, so that a caller
// matching item after item can reuse one slice and allocate nothing for
// most items.
func (ix *Index) AppendMatch(dst []Hit, text string) []Hit {
	if ix.live == 0 {
		return dst
	}
	s := ix.getScratch()
	defer ix.scratch.Put(s)
	s.next()
	s.lower(text)
	s.occur = ix.auto.find(s.occur[:0], &s.tokenizer, nil)
	for _, p := range s.occur {
		if s.patStamp[p] == s.gen || len(ix.postings[p]) == 0 {
			continue
		}
		s.patStamp[p] = s.gen
		s.found = append(s.found, p)
	}
	if len(s.found) == 0 {
		return dst
	}
	// Which subscribers were hit, and how many of their keywords each.
	multi := 0 // keywords of hits with more than one
	for _, p := range s.found {
		for i := range ix.postings[p] {
			po := &ix.postings[p][i]
			if s.subStamp[po.sub] != s.gen {
				s.subStamp[po.sub] = s.gen
				s.subHit[po.sub] = int32(len(s.hitSubs))
				s.hitSubs = append(s.hitSubs, po.sub)
				s.counts = append(s.counts, 0)
			}
			h := s.subHit[po.sub]
			switch s.counts[h]++; s.counts[h] {
			case 2:
				multi += 2
			case 1:
			default:
				multi++
			}
		}
	}
	base := len(dst)
	dst = slices.Grow(dst, len(s.hitSubs))[:base+len(s.hitSubs)]
	hits := dst[base:]
	if multi == 0 {
		// The common case: one keyword per hit, which the hit shares
		// with the index.
		for _, p := range s.found {
			for i := range ix.postings[p] {
				po := &ix.postings[p][i]
				hits[s.subHit[po.sub]] = Hit{Subscriber: po.id, Keywords: po.one}
			}
		}
		return dst
	}
	// Some hits matched several keywords: those get their own slices of
	// one shared array, in the subscriber's keyword order.
	kws := make([]string, multi)
	off := int32(0)
	for h, n := range s.counts {
		if n > 1 {
			s.counts[h] = off // from here on: the hit's next free slot
			off += n
		} else {
			s.counts[h] = -1
		}
	}
	s.kwIdx = slices.Grow(s.kwIdx[:0], multi)[:multi]
	for _, p := range s.found {
		for i := range ix.postings[p] {
			po := &ix.postings[p][i]
			h := s.subHit[po.sub]
			if s.counts[h] < 0 {
				hits[h] = Hit{Subscriber: po.id, Keywords: po.one}
				continue
			}
			s.kwIdx[s.counts[h]] = po.kw
			s.counts[h]++
			hits[h].Subscriber = po.id
		}
	}
	start := int32(0)
	for h, sub := range s.hitSubs {
		end := s.counts[h]
		if end < 0 {
			continue
		}
		idx := s.kwIdx[start:end]
		slices.Sort(idx)
		own := ix.keywords[sub]
		for i, k := range idx {
			kws[int(start)+i] = own[k]
		}
		hits[h].Keywords = kws[start:end:end]
		start = end
	}
	return dst
}

// Keywords returns the keywords that occur in text by the package's rule,
// in the order given: the one-subscriber form of Index.Match.
func Keywords(text string, keywords []string) []string {
	if len(keywords) == 0 {
		return nil
	}
	lower := query.Fold(text)
	var matched []string
	for _, k := range keywords {
		if k != "" && ContainsWord(lower, query.Fold(k)) {
			matched = append(matched, k)
		}
	}
	return matched
}

// ContainsWord reports whether word occurs in text as whole words. Both
// must already be folded (query.Fold). It is query.ContainsWord, the one
// whole-word rule of the system.
func ContainsWord(text, word string) bool {
	return query.ContainsWord(text, word)
}
