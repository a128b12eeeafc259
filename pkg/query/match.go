package query

import (
	"slices"
	"strings"
)

// Doc is what a query is evaluated against: a comment's text, its author's
// handle and account id (from: matches either), its language tag and the
// fields of its source kind.
type Doc struct {
	Text   string
	Author string // the author's handle; a leading '@' and case are ignored
	// AuthorID is the author's account id (a DID, a user id) when the
	// source has one.
	AuthorID string
	Lang     string // a language tag ("en", "pt-BR"); case is ignored
	// Fields are the item's fields a Field atom tests, by name
	// (subreddit → golang); case is ignored.
	Fields map[string]string
	// Sentiment is the label of the item's sentiment ("negative"), ""
	// when it has none; a sentiment: atom tests it.
	Sentiment string
}

// FieldMatches reports whether a Field atom's value ("name:value")
// names one of fields, case ignored.
func FieldMatches(fields map[string]string, atom string) bool {
	name, want, _ := strings.Cut(atom, ":")
	v, ok := fields[name]
	return ok && Fold(v) == want
}

// Match reports whether d matches q, and the positive terms of q that
// occur in it (words, phrases, #tags, @users, prefixes and from:, in
// canonical spelling and in the order of the canonical form; a NEAR's
// terms are reported wherever they occur once the query matches). It evaluates q
// directly, one query against one document: the spawns' query index
// gives the same answers for many queries at once, and the hub's match
// alerts use this.
func (q *Query) Match(d Doc) ([]string, bool) {
	lower := Fold(d.Text)
	author, authorID, lang := Fold(strings.TrimPrefix(d.Author, "@")), Fold(d.AuthorID), strings.ToLower(d.Lang)
	var words *textWords // cut when a prefix or a NEAR needs them
	occurs := func(a Atom) bool {
		switch a.Kind {
		case From:
			return author == a.Value || authorID != "" && authorID == a.Value
		case Lang:
			return LangMatches(lang, a.Value)
		case Prefix:
			if words == nil {
				words = newTextWords(lower)
			}
			return len(words.positions(a)) > 0
		case Field:
			return FieldMatches(d.Fields, a.Value)
		case Sentiment:
			return d.Sentiment == a.Value
		}
		return ContainsWord(lower, a.Text())
	}
	near := func(n *Node) bool {
		if words == nil {
			words = newTextWords(lower)
		}
		return n.Near(words.positions)
	}
	if !q.root.EvalNear(occurs, near) {
		return nil, false
	}
	var terms []string
	for _, a := range q.Positive() {
		if occurs(a) {
			terms = append(terms, a.String())
		}
	}
	return terms, true
}

// Positive lists the atoms of q not under a negation, lang: codes and
// sentiment: labels excepted, in the order of the canonical form: the
// terms whose occurrence can make q match.
func (q *Query) Positive() []Atom {
	positive := map[Atom]bool{}
	var walk func(n *Node, neg bool)
	walk = func(n *Node, neg bool) {
		switch n.Op {
		case OpAtom:
			if !neg && n.Atom.Kind != Lang && n.Atom.Kind != Sentiment {
				positive[n.Atom] = true
			}
		case OpNot:
			walk(n.Kids[0], !neg)
		default:
			for _, k := range n.Kids {
				walk(k, neg)
			}
		}
	}
	walk(q.Root(), false)
	var out []Atom
	for _, a := range q.Atoms() {
		if positive[a] {
			out = append(out, a)
		}
	}
	return out
}

// LangMatches reports whether a language tag (lowercased) is the code of
// a lang: atom or one of its subtags: lang:en matches "en" and "en-gb",
// lang:pt-br only "pt-br" and its own subtags.
func LangMatches(lang, code string) bool {
	return lang == code || len(lang) > len(code) && lang[len(code)] == '-' && lang[:len(code)] == code
}

// FieldValues lists, sorted and without repeats, the values of the
// positive Field atoms of name in q (subreddit:golang → golang): where a
// source kind reads from.
func (q *Query) FieldValues(name string) []string {
	var out []string
	for _, a := range q.Positive() {
		if a.Kind != Field {
			continue
		}
		if v, ok := strings.CutPrefix(a.Value, name+":"); ok {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RequiresField reports whether q can match only an item whose field name
// one of its positive Field atoms names: every OR branch needs one (a
// Reddit query must say which subreddits it reads, in every branch).
func (q *Query) RequiresField(name string) bool {
	var need func(n *Node, neg bool) bool
	need = func(n *Node, neg bool) bool {
		switch n.Op {
		case OpAtom:
			return !neg && n.Atom.Kind == Field && strings.HasPrefix(n.Atom.Value, name+":")
		case OpNot:
			return need(n.Kids[0], !neg)
		case OpAnd, OpOr:
			// Under a negation AND and OR swap (De Morgan).
			all := (n.Op == OpOr) != neg
			for _, k := range n.Kids {
				if need(k, neg) != all {
					return !all
				}
			}
			return all
		}
		return false
	}
	return need(q.Root(), false)
}
