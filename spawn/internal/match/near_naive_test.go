package match

import (
	"slices"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// The reference semantics of NEAR, written apart from package query's:
// words and occurrences by the fakes' rune-by-rune rules (textmatch), and
// Lucene's tests spelled as Lucene spells them.

// The naive evaluator is slow by design (rune slices, Unicode tables); the
// property tests weigh 50 queries on each text, so what it finds on the
// last text is kept: the text folded, its words and each phrase's
// occurrences. The tests run one at a time.
var memo struct {
	text, folded string
	words        [][2]int
	contains     map[string]bool
	occurrences  map[string][]int
}

// memoText makes the memo that of text.
func memoText(text string) {
	if memo.contains != nil && memo.text == text {
		return
	}
	memo.text, memo.folded = text, naiveFold(text)
	memo.words = textmatch.Words(memo.folded)
	memo.contains, memo.occurrences = map[string]bool{}, map[string][]int{}
}

// memoFold is naiveFold(text), remembered.
func memoFold(text string) string {
	memoText(text)
	return memo.folded
}

// memoContains is naiveContains(naiveFold(text), word), remembered.
func memoContains(text, word string) bool {
	memoText(text)
	c, ok := memo.contains[word]
	if !ok {
		c = naiveContains(memo.folded, word)
		memo.contains[word] = c
	}
	return c
}

// naiveSpan is a run of words [start, end).
type naiveSpan struct{ start, end int }

// naivePositions are the word positions, in a folded text, at which an
// atom's occurrences start: for a prefix, the words it begins; for a
// text atom, the word its first word is where it occurs whole.
func naivePositions(a query.Atom, text string) []int {
	var words [][2]int
	var occurrences func(string) []int
	if memo.contains != nil && memo.folded == text {
		words = memo.words
		occurrences = func(p string) []int {
			o, ok := memo.occurrences[p]
			if !ok {
				o = textmatch.Occurrences(text, p)
				memo.occurrences[p] = o
			}
			return o
		}
	} else {
		words = textmatch.Words(text)
		occurrences = func(p string) []int { return textmatch.Occurrences(text, p) }
	}
	rs := []rune(text)
	var out []int
	if a.Kind == query.Prefix {
		for k, w := range words {
			if textmatch.HasPrefix(string(rs[w[0]:w[1]]), a.Value) {
				out = append(out, k)
			}
		}
		return out
	}
	pattern := a.Text()
	own := textmatch.Words(pattern)
	if len(own) == 0 {
		return nil
	}
	for _, i := range occurrences(pattern) {
		for k, w := range words {
			if w[0] == i+own[0][0] {
				out = append(out, k)
			}
		}
	}
	return out
}

// naiveWidth is how many words an atom spans.
func naiveWidth(a query.Atom) int {
	if a.Kind == query.Prefix {
		return 1
	}
	return len(textmatch.Words(a.Text()))
}

// naiveSpans are every span of a NEAR operand in a folded text.
func naiveSpans(n *query.Node, text string) []naiveSpan {
	var out []naiveSpan
	switch n.Op {
	case query.OpAtom:
		for _, p := range naivePositions(n.Atom, text) {
			out = append(out, naiveSpan{p, p + naiveWidth(n.Atom)})
		}
	case query.OpOr:
		for _, k := range n.Kids {
			out = append(out, naiveSpans(k, text)...)
		}
	case query.OpNear:
		for _, a := range naiveSpans(n.Kids[0], text) {
			for _, b := range naiveSpans(n.Kids[1], text) {
				if naiveMeets(n, a, b) {
					out = append(out, naiveSpan{min(a.start, b.start), max(a.end, b.end)})
				}
			}
		}
	}
	return out
}

// naiveMeets is Lucene's test of a pair: in order (NearSpansOrdered), the
// second starts at or after the first's end and the words between are at
// most the slop; without (NearSpansUnordered), the pair's width less the
// lengths of both is at most the slop.
func naiveMeets(n *query.Node, a, b naiveSpan) bool {
	if n.Ordered {
		return b.start >= a.end && b.start-a.end <= n.Slop
	}
	return max(a.end, b.end)-min(a.start, b.start)-(a.end-a.start)-(b.end-b.start) <= n.Slop
}

// naiveNear decides a NEAR on a folded text.
func naiveNear(n *query.Node, text string) bool {
	return slices.ContainsFunc(naiveSpans(n.Kids[0], text), func(a naiveSpan) bool {
		return slices.ContainsFunc(naiveSpans(n.Kids[1], text), func(b naiveSpan) bool { return naiveMeets(n, a, b) })
	})
}
