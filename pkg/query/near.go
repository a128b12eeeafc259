package query

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// Proximity, as Lucene's span-near queries decide it (SpanNearQuery,
// NearSpansUnordered, NearSpansOrdered). The words of a text are numbered
// from 0 by the word rules (NextWord); an occurrence of a term is a span of
// them, [start, end): a word, #tag, @user or prefix spans one word, a
// phrase its words. An OR group's spans are its kids'; a NEAR's are the
// spans from the start of one matching pair to the end of the other.
//
//   - A NEAR/n B holds when some span a of A and b of B have at most n
//     words between them in either order, or overlap: max(a.start,
//     b.start) − min(a.end, b.end) ≤ n. That is Lucene's unordered test
//     (the width of the pair less their lengths at most the slop); "new
//     york" NEAR/0 york holds in "new york".
//   - A NEAR/nf B holds when some a ends before some b starts, with at
//     most n words between: a.end ≤ b.start ≤ a.end + n. That is Lucene's
//     ordered test (non-overlapping, in order, the gap at most the slop).
//
// Every pair of spans is weighed, so groups whose spans have different
// lengths, and NEARs inside NEARs, find every match; Lucene's span
// iterators move each operand forward only and can miss some of those.
// Why this reading and the limits: docs/decisions/0018-proximity-and-prefixes.md.

// maxNearWork bounds the pairs of spans weighed to decide one NEAR on one
// text. Texts of ordinary words never come near it (a comment's text is at
// most 32 KiB); a text made to repeat a query's words thousands of times
// within reach of each other can, and past it the NEAR is read as the AND
// of its operands (Eval's reading), so that no text can make one query
// cost more than this.
const maxNearWork = 1 << 15

// span is a run of words [start, end) of a text.
type span struct{ start, end int32 }

// Words is how many words of a text the atom spans where it occurs: 1
// for a word, #tag, @user or prefix of one word, a phrase's words (by the
// word rules: "e-mail" and "学习" are two), 0 for from: and lang: and for
// a term without a word character ("++"), which NEAR refuses.
func (a Atom) Words() int {
	if a.Kind == Prefix {
		return 1
	}
	text, n := a.Text(), 0
	for i := 0; ; n++ {
		s, e := NextWord(text, i)
		if s == len(text) {
			return n
		}
		i = e
	}
}

// HasPrefixWord reports whether word, a word of a folded text, starts
// with prefix and the prefix ends where a character of the word does: a
// combining mark after it belongs to the prefix's last letter, so cafe*
// does not match "cafe\u0301" as cafe does not.
func HasPrefixWord[T ~string | ~[]byte](word T, prefix string) bool {
	if len(word) < len(prefix) || string(word[:len(prefix)]) != prefix {
		return false
	}
	if len(word) == len(prefix) {
		return true
	}
	r, _ := runeAt(word, len(prefix))
	return classOf(r) != mark
}

// NearStep is one step of a NEAR compiled for deciding it on many texts
// (AppendNear, DecideNear): a tree of NEARs, ORs and atoms laid out in
// preorder in one slice, which a matcher of many queries keeps with the
// others' in one array instead of visiting each query's nodes.
type NearStep struct {
	Op      Op    // OpNear, OpOr or OpAtom
	Ordered bool  // OpNear: NEAR/nf
	Slop    int32 // OpNear: n
	Words   int32 // OpAtom: how many words the atom spans (Atom.Words)
	Leaf    int32 // OpAtom: the caller's number for the atom, handed to starts
	End     int32 // offset, from this step, just past its subtree
}

// AppendNear appends the steps of the NEAR n (Op OpNear) to dst, leaf
// numbering each atom for the caller.
func AppendNear(dst []NearStep, n *Node, leaf func(Atom) int32) []NearStep {
	at := len(dst)
	st := NearStep{Op: n.Op}
	switch n.Op {
	case OpAtom:
		st.Words, st.Leaf = int32(n.Atom.Words()), leaf(n.Atom)
	case OpNear:
		st.Slop, st.Ordered = int32(n.Slop), n.Ordered
	}
	dst = append(dst, st)
	for _, k := range n.Kids {
		dst = AppendNear(dst, k, leaf)
	}
	dst[at].End = int32(len(dst) - at)
	return dst
}

// DecideNear decides a NEAR compiled by AppendNear on a text, given where
// each of its atoms occurs there: starts returns, for a leaf number, the
// positions, ascending, of the first word of each occurrence of its word,
// phrase, #tag or @user, or of each word its prefix begins. It is the one
// implementation of proximity, which Match and the spawns' shared index
// both use, and allocates nothing once its pooled working memory has
// grown.
func DecideNear(steps []NearStep, starts func(leaf int32) []int32) bool {
	s := nearPool.Get().(*NearScratch)
	ok := s.Decide(steps, starts)
	nearPool.Put(s)
	return ok
}

// NearScratch is the working memory of DecideNear, for a caller that
// decides NEARs one after the other and keeps its own (the zero value is
// ready to use; one goroutine at a time).
type NearScratch struct{ e nearEval }

// Decide is DecideNear with the working memory s.
func (s *NearScratch) Decide(steps []NearStep, starts func(leaf int32) []int32) bool {
	if ok, done := decideFlat(steps, starts); done {
		return ok
	}
	e := &s.e
	e.work, e.arena = 0, e.arena[:0]
	if e.holds(steps, starts) {
		return true // a pair found holds whatever the bound
	}
	return e.over() && nearRelaxed(steps, starts)
}

// flatPairs is how many pairs of occurrences decideFlat weighs at most;
// more go to the general weighing, which sorts and bounds them.
const flatPairs = 64

// decideFlat decides, pair by pair, a NEAR whose operands are terms or OR
// groups of terms (most NEARs) with few occurrences in the text (most
// texts): done is false when it leaves the NEAR to the general weighing.
// It reads Lucene's tests as pairs does.
func decideFlat(steps []NearStep, starts func(int32) []int32) (ok, done bool) {
	second := 1 + steps[1].End
	if !flat(steps[1:]) || !flat(steps[second:]) {
		return false, false
	}
	na, nb := occurrences(steps[1:], starts), occurrences(steps[second:], starts)
	if na == 0 || nb == 0 {
		return false, true
	}
	if na*nb > flatPairs {
		return false, false
	}
	n := &steps[0]
	return eachTerm(steps[1:], func(a NearStep) bool {
		return eachTerm(steps[second:], func(b NearStep) bool {
			for _, pa := range starts(a.Leaf) {
				ea := pa + a.Words
				for _, pb := range starts(b.Leaf) {
					eb := pb + b.Words
					if n.Ordered && ea <= pb && pb-ea <= n.Slop || !n.Ordered && max(pa, pb)-min(ea, eb) <= n.Slop {
						return true
					}
				}
			}
			return false
		})
	}), true
}

// flat reports whether the subtree at steps[0] is a term or an OR of
// terms.
func flat(steps []NearStep) bool {
	switch st := steps[0]; st.Op {
	case OpAtom:
		return true
	case OpOr:
		for k := int32(1); k < st.End; k += steps[k].End {
			if steps[k].Op != OpAtom {
				return false
			}
		}
		return true
	}
	return false
}

// occurrences counts the occurrences of a flat subtree's terms.
func occurrences(steps []NearStep, starts func(int32) []int32) int {
	n := 0
	eachTerm(steps, func(st NearStep) bool { n += len(starts(st.Leaf)); return false })
	return n
}

// eachTerm calls f on each term of a flat subtree until f says true, and
// reports whether it did.
func eachTerm(steps []NearStep, f func(NearStep) bool) bool {
	if steps[0].Op == OpAtom {
		return f(steps[0])
	}
	for k := int32(1); k < steps[0].End; k += steps[k].End {
		if f(steps[k]) {
			return true
		}
	}
	return false
}

// Near decides the NEAR node n on a text (DecideNear), starts giving the
// positions of each atom.
func (n *Node) Near(starts func(Atom) []int32) bool {
	var atoms []Atom
	steps := AppendNear(make([]NearStep, 0, 8), n, func(a Atom) int32 {
		atoms = append(atoms, a)
		return int32(len(atoms) - 1)
	})
	return DecideNear(steps, func(leaf int32) []int32 { return starts(atoms[leaf]) })
}

// nearRelaxed is the NEAR of steps read as the AND of its operands.
func nearRelaxed(steps []NearStep, starts func(int32) []int32) bool {
	switch st := steps[0]; st.Op {
	case OpAtom:
		return len(starts(st.Leaf)) > 0
	case OpOr:
		for k := int32(1); k < st.End; k += steps[k].End {
			if nearRelaxed(steps[k:], starts) {
				return true
			}
		}
		return false
	}
	second := 1 + steps[1].End
	return nearRelaxed(steps[1:], starts) && nearRelaxed(steps[second:], starts)
}

// nearPool holds the working memory of DecideNear.
var nearPool = sync.Pool{New: func() any { return new(NearScratch) }}

// nearEval weighs the spans of one NEAR on one text.
type nearEval struct {
	work  int    // pairs and spans weighed so far
	arena []span // every operand's spans, one after the other
}

// over reports whether the work ran past maxNearWork.
func (e *nearEval) over() bool { return e.work > maxNearWork }

// holds reports whether the NEAR at steps[0] has a matching pair,
// stopping at the first.
func (e *nearEval) holds(steps []NearStep, starts func(int32) []int32) bool {
	second := 1 + steps[1].End
	a, b := e.spans(steps[1:], starts), e.spans(steps[second:], starts)
	found := false
	e.pairs(&steps[0], a, b, func(span) bool { found = true; return false })
	return found
}

// spans are the spans of the subtree at steps[0], sorted and without
// repeats, in e.arena; nil once the work runs past its bound. Appending
// to the arena leaves the spans returned before as they are.
func (e *nearEval) spans(steps []NearStep, starts func(int32) []int32) []span {
	if e.over() {
		return nil
	}
	st := &steps[0]
	switch st.Op {
	case OpAtom:
		at := len(e.arena)
		for _, p := range starts(st.Leaf) {
			e.arena = append(e.arena, span{p, p + st.Words})
		}
		e.work += len(e.arena) - at
		return e.arena[at:len(e.arena):len(e.arena)]
	case OpOr:
		// The kids' spans, each sorted, merge one after the other.
		var merged []span
		for k := int32(1); k < st.End; k += steps[k].End {
			ks := e.spans(steps[k:], starts)
			at := len(e.arena)
			for len(merged) > 0 || len(ks) > 0 {
				if len(ks) == 0 || len(merged) > 0 && !spanLess(ks[0], merged[0]) {
					e.arena, merged = append(e.arena, merged[0]), merged[1:]
				} else {
					e.arena, ks = append(e.arena, ks[0]), ks[1:]
				}
			}
			merged = e.sorted(at)
		}
		return merged
	case OpNear:
		second := 1 + steps[1].End
		a, b := e.spans(steps[1:], starts), e.spans(steps[second:], starts)
		at := len(e.arena)
		e.pairs(st, a, b, func(s span) bool {
			e.arena = append(e.arena, s)
			return true
		})
		slices.SortFunc(e.arena[at:], compareSpans)
		return e.sorted(at)
	}
	return nil
}

// sorted counts the spans appended to the arena since at, which are
// sorted, drops their repeats and returns them.
func (e *nearEval) sorted(at int) []span {
	e.arena = e.arena[:at+len(slices.Compact(e.arena[at:]))]
	e.work += len(e.arena) - at
	return e.arena[at:len(e.arena):len(e.arena)]
}

// compareSpans orders spans by start, then end.
func compareSpans(x, y span) int {
	if x.start != y.start {
		return int(x.start - y.start)
	}
	return int(x.end - y.end)
}

// spanLess reports whether x comes before y (compareSpans).
func spanLess(x, y span) bool { return x.start < y.start || x.start == y.start && x.end < y.end }

// pairs calls yield with the span of every pair of a (the first operand's
// spans) and b that meets the NEAR n, until yield returns false or the
// work runs past its bound. Both are sorted by start.
func (e *nearEval) pairs(n *NearStep, a, b []span, yield func(span) bool) {
	if len(a) == 0 || len(b) == 0 {
		return
	}
	slop := n.Slop
	var widest int32 // the longest span of b
	for _, s := range b {
		widest = max(widest, s.end-s.start)
	}
	i := 0
	for _, x := range a {
		// The spans of b that can meet x start from lo: for an ordered
		// NEAR at x's end, for one without order where a span of b
		// ending slop words before x's start may begin. The spans of a
		// come by start, so lo only grows for an unordered NEAR; for an
		// ordered one it is searched again.
		lo := x.end
		if !n.Ordered {
			lo = x.start - slop - widest
			for i < len(b) && b[i].start < lo {
				i++
			}
		} else {
			i = sort.Search(len(b), func(i int) bool { return b[i].start >= lo })
		}
		e.work++
		for j := i; j < len(b) && b[j].start <= x.end+slop; j++ {
			if e.work++; e.over() {
				return
			}
			y := b[j]
			if !n.Ordered && max(x.start, y.start)-min(x.end, y.end) > slop {
				continue
			}
			if !yield(span{min(x.start, y.start), max(x.end, y.end)}) {
				return
			}
		}
	}
}

// textWords are the words of a folded text, for deciding NEARs one text at
// a time (Match): their byte offsets, and the positions found per atom.
type textWords struct {
	text   string
	starts []int32 // byte offset of each word
	ends   []int32
	found  map[Atom][]int32
}

func newTextWords(folded string) *textWords {
	w := &textWords{text: folded, found: map[Atom][]int32{}}
	for i := 0; ; {
		s, e := NextWord(folded, i)
		if s == len(folded) {
			return w
		}
		w.starts, w.ends = append(w.starts, int32(s)), append(w.ends, int32(e))
		i = e
	}
}

// positions returns the positions of a's occurrences (Node.Near's starts).
func (w *textWords) positions(a Atom) []int32 {
	if p, ok := w.found[a]; ok {
		return p
	}
	var out []int32
	if a.Kind == Prefix {
		for k := range w.starts {
			if HasPrefixWord(w.text[w.starts[k]:w.ends[k]], a.Value) {
				out = append(out, int32(k))
			}
		}
	} else if text := a.Text(); text != "" {
		lead, _ := NextWord(text, 0) // bytes before the first word (#, @)
		for i := 0; i <= len(w.text)-len(text); {
			j := indexFrom(w.text, text, i)
			if j < 0 {
				break
			}
			if Bounded(w.text, j, j+len(text)) {
				if k, ok := slices.BinarySearch(w.starts, int32(j+lead)); ok {
					out = append(out, int32(k))
				}
			}
			i = j + 1
		}
	}
	w.found[a] = out
	return out
}

// indexFrom is the byte offset of the first sub in s at or after i, or -1.
func indexFrom(s, sub string, i int) int {
	j := strings.Index(s[i:], sub)
	if j < 0 {
		return -1
	}
	return i + j
}
