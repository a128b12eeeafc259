package query

import (
	"slices"
	"sort"
	"strings"
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
// Why this reading and the limits: docs/decisions/0017-proximity-and-prefixes.md.

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

// Near decides the NEAR node n (Op OpNear) on a text, given where each of
// its atoms occurs there: starts returns the positions, ascending, of the
// first word of each occurrence of a word, phrase, #tag or @user, and of
// each word a prefix begins. It is the one implementation of proximity:
// Match and the spawns' shared index both call it.
func (n *Node) Near(starts func(Atom) []int32) bool {
	e := nearEval{starts: starts}
	ok := e.holds(n)
	if e.work > maxNearWork {
		return n.EvalNear(func(a Atom) bool { return len(starts(a)) > 0 }, nil)
	}
	return ok
}

// nearEval weighs the spans of one NEAR on one text.
type nearEval struct {
	starts func(Atom) []int32
	work   int // pairs and spans weighed so far
}

// over reports whether the work ran past maxNearWork.
func (e *nearEval) over() bool { return e.work > maxNearWork }

// holds reports whether the NEAR n has a matching pair, stopping at the
// first.
func (e *nearEval) holds(n *Node) bool {
	a, b := e.spans(n.Kids[0]), e.spans(n.Kids[1])
	found := false
	e.pairs(n, a, b, func(span) bool { found = true; return false })
	return found
}

// spans are the spans of n, sorted and without repeats; nil once the work
// runs past its bound.
func (e *nearEval) spans(n *Node) []span {
	if e.over() {
		return nil
	}
	var out []span
	switch n.Op {
	case OpAtom:
		w := int32(n.Atom.Words())
		for _, p := range e.starts(n.Atom) {
			out = append(out, span{p, p + w})
		}
		e.work += len(out)
		return out
	case OpOr:
		for _, k := range n.Kids {
			out = append(out, e.spans(k)...)
		}
	case OpNear:
		a, b := e.spans(n.Kids[0]), e.spans(n.Kids[1])
		e.pairs(n, a, b, func(s span) bool {
			out = append(out, s)
			return true
		})
	}
	e.work += len(out)
	slices.SortFunc(out, func(x, y span) int {
		if x.start != y.start {
			return int(x.start - y.start)
		}
		return int(x.end - y.end)
	})
	return slices.Compact(out)
}

// pairs calls yield with the span of every pair of a (the first operand's
// spans) and b that meets the NEAR n, until yield returns false or the
// work runs past its bound. Both are sorted by start.
func (e *nearEval) pairs(n *Node, a, b []span, yield func(span) bool) {
	if len(a) == 0 || len(b) == 0 {
		return
	}
	slop := int32(n.Slop)
	var widest int32 // the longest span of b
	for _, s := range b {
		widest = max(widest, s.end-s.start)
	}
	for _, x := range a {
		// The spans of b that can meet x start from lo: for an ordered
		// NEAR at x's end, for one without order where a span of b
		// ending slop words before x's start may begin.
		lo := x.end
		if !n.Ordered {
			lo = x.start - slop - widest
		}
		i := sort.Search(len(b), func(i int) bool { return b[i].start >= lo })
		e.work++
		for ; i < len(b) && b[i].start <= x.end+slop; i++ {
			if e.work++; e.over() {
				return
			}
			y := b[i]
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
