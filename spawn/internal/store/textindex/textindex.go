// Package textindex is what a store's search index holds of a comment,
// and what it looks up for a query of the query language: the comment's
// index terms (the words of its text cut by the query language's own word
// rule, its author and account id, its language) and, for a query, the
// terms a comment must hold to be able to match it. The index only
// narrows: a store reads the comments an index finds and keeps those
// Query.Match keeps, so a term set never decides a match, it only must
// never leave a matching comment out. Why the terms are cut here and not
// by the engine: docs/decisions/0020-comments-found-by-their-own-row.md.
package textindex

import (
	"encoding/hex"
	"hash/fnv"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

const (
	// MaxTermBytes caps one term: a longer one is kept as its first bytes
	// and a hash of the whole, the same for a comment and a query, so an
	// index's limits on a term's size never leave a comment out.
	MaxTermBytes = 128
	// keptBytes is how much of a long term is kept before its hash.
	keptBytes = MaxTermBytes - 1 - 16
	// MaxAlternatives caps the OR of a plan: a query that needs more
	// lookups than this is read without the index.
	MaxAlternatives = 8
	// MaxConjunction caps the terms one lookup asks for together: the
	// longest are kept (any of them narrows; the longest is likeliest to
	// be rare). One: Cassandra's storage-attached index intersects the
	// terms of a lookup by reading every one of them, so a common term
	// beside a rare one makes the lookup cost the common one (a word in
	// every comment AND a word in 1 of 100: 4–6 s for 20 matches at
	// 200,000 comments, against 50–140 ms for the second alone); the
	// matcher checks the rest.
	MaxConjunction = 1
)

// Prefixes of the terms that are not words (a word never holds ':').
const (
	fromPrefix = "from:"
	langPrefix = "lang:"
)

// Term is s as an index holds it: s itself, or for a long s its first
// bytes (whole characters), '#' and a hash of s.
func Term(s string) string {
	if len(s) <= MaxTermBytes {
		return s
	}
	cut := keptBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return s[:cut] + "#" + hex.EncodeToString(h.Sum(nil))
}

// Terms are the index terms of a comment, each once: the words of its
// text as query.NextWord cuts its folded text, "from:" and its author's
// handle (folded, without a leading '@') and account id, "lang:" and its
// language tag lowercased and each of the tag's prefixes before a '-'.
func Terms(c *api.Comment) []string {
	seen := make(map[string]struct{}, 32)
	out := make([]string, 0, 32)
	add := func(t string) {
		t = Term(t)
		if _, ok := seen[t]; !ok {
			seen[t] = struct{}{}
			out = append(out, t)
		}
	}
	text := query.Fold(c.Text)
	for i := 0; ; {
		start, end := query.NextWord(text, i)
		if start == len(text) {
			break
		}
		add(text[start:end])
		i = end
	}
	if a := query.Fold(strings.TrimPrefix(c.Author, "@")); a != "" {
		add(fromPrefix + a)
	}
	if id := query.Fold(c.AuthorID); id != "" {
		add(fromPrefix + id)
	}
	if lang := strings.ToLower(c.Lang); lang != "" {
		add(langPrefix + lang)
		for i := range len(lang) {
			if lang[i] == '-' && i > 0 {
				add(langPrefix + lang[:i])
			}
		}
	}
	return out
}

// Plan is what an index looks up for a query: the comments holding every
// term of at least one of its conjunctions. A nil Plan cannot narrow (the
// query may match a comment that holds none of its terms, as a negation
// alone does): the store reads every comment instead.
type Plan [][]string

// PlanOf is the plan of q: every comment q matches holds all the terms of
// one of the plan's conjunctions (the converse is left to Query.Match).
// Atoms the index knows nothing of (kinds added to the language later)
// narrow nothing, as negations do.
func PlanOf(q *query.Query) Plan {
	if q == nil {
		return nil
	}
	p, ok := plan(q.Root())
	if !ok || len(p) == 0 {
		return nil
	}
	out := p[:0]
	for _, conj := range p {
		conj = keepLongest(conj)
		// Two alternatives cut to the same lookup are one.
		if !slices.ContainsFunc(out, func(c []string) bool { return slices.Equal(c, conj) }) {
			out = append(out, conj)
		}
	}
	return out
}

// plan is the plan of the subtree n; ok is false when n can match a
// comment whatever terms it holds (nothing to narrow by).
func plan(n *query.Node) (Plan, bool) {
	switch n.Op {
	case query.OpAtom:
		ts := atomTerms(n.Atom)
		if len(ts) == 0 {
			return nil, false
		}
		return Plan{ts}, true
	case query.OpOr:
		var out Plan
		for _, k := range n.Kids {
			p, ok := plan(k)
			if !ok {
				return nil, false
			}
			out = append(out, p...)
			if len(out) > MaxAlternatives {
				return nil, false
			}
		}
		return out, true
	case query.OpAnd, query.OpNear:
		// A NEAR matches only where both its kids match: an AND, as far
		// as the terms a comment holds go.
		var out Plan
		var kids []Plan
		for _, k := range n.Kids {
			if p, ok := plan(k); ok {
				kids = append(kids, p)
			}
		}
		if len(kids) == 0 {
			return nil, false
		}
		// The AND of the kids' plans, while it stays small; past that,
		// the plan of one kid alone narrows (less, but never wrongly):
		// the one with the fewest alternatives.
		out = Plan{nil}
		for _, p := range kids {
			var next Plan
			for _, a := range out {
				for _, b := range p {
					next = append(next, union(a, b))
				}
			}
			if len(next) > MaxAlternatives {
				return fewest(kids), true
			}
			out = next
		}
		return out, true
	}
	// OpNot, and operators the index does not know.
	return nil, false
}

// atomTerms are the terms a comment matching the atom holds: the words of
// what it finds in the text (query.ContainsWord finds it only where those
// words stand whole), or its from: or lang: term.
func atomTerms(a query.Atom) []string {
	switch a.Kind {
	case query.Word, query.Phrase, query.Tag, query.Mention:
		text := a.Text()
		var out []string
		for i := 0; ; {
			start, end := query.NextWord(text, i)
			if start == len(text) {
				break
			}
			if t := Term(text[start:end]); !slices.Contains(out, t) {
				out = append(out, t)
			}
			i = end
		}
		return out
	case query.From:
		return []string{Term(fromPrefix + a.Value)}
	case query.Lang:
		return []string{Term(langPrefix + a.Value)}
	}
	return nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, t := range b {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func fewest(ps []Plan) Plan {
	best := ps[0]
	for _, p := range ps[1:] {
		if len(p) < len(best) {
			best = p
		}
	}
	return slices.Clone(best)
}

// keepLongest keeps at most MaxConjunction terms of a conjunction, the
// longest (the likeliest to be rare), in a stable order.
func keepLongest(conj []string) []string {
	if len(conj) <= MaxConjunction {
		return conj
	}
	sorted := slices.Clone(conj)
	slices.SortStableFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	return sorted[:MaxConjunction]
}

// AuthorKey is how an author's handle is looked up without regard to case
// (as store.SameAuthor compares them, strings.EqualFold): every character
// replaced by the smallest of its simple case folding orbit, so two
// handles have the same key exactly when EqualFold holds; a long key is
// cut as Term cuts a term.
func AuthorKey(handle string) string {
	if handle == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(handle))
	for _, r := range handle {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return Term(b.String())
}
