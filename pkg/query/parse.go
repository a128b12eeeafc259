package query

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on a query in the language, so that one crawler cannot make a
// data source, a service rule or the shared index unbounded.
const (
	// MaxQueryLength caps the bytes of a query as written (commas and
	// spaces included) and of its canonical form: services cap their
	// rules far below it.
	MaxQueryLength = 4096
	// MaxAtoms caps the words, phrases, tags, users and codes of a query
	// as written, duplicates included; it matches MaxTerms of a list.
	MaxAtoms = 100
	// MaxDepth caps the nesting of parentheses and negations, which bounds
	// the parser's recursion and every walk of the tree.
	MaxDepth = 16
	// maxUserBytes caps a user name (@user, from:user); the longest
	// handles of the sources (bluesky domains) fit.
	maxUserBytes = 253
	// maxLangBytes caps a language code (lang:zh-hant-tw fits).
	maxLangBytes = 16
	// MaxNear caps the distance of NEAR/n: a hundred words is a long
	// paragraph, and the distance bounds the work of deciding one.
	MaxNear = 100
	// MinPrefix is the fewest letters a prefix wildcard may have: shorter
	// prefixes match too many words to mean anything.
	MinPrefix = 3
)

// Kind is the kind of an atom.
type Kind uint8

// Kinds of atoms. Word, Phrase, Tag and Mention match the text of an item;
// From and Lang test its author and language.
const (
	Word    Kind = iota + 1 // golang: one word, matched whole
	Phrase                  // "new york": words in a row, matched whole
	Tag                     // #golang: the text token "#golang"
	Mention                 // @golang: the text token "@golang"
	From                    // from:golang: the item's author
	Lang                    // lang:en: the item's language
	Prefix                  // kube*: any word that starts with the letters
	// Field is a field atom of the source kind the query is for
	// (subreddit:golang): Value is "name:value", and it tests the item's
	// field of that name. Only ParseFields reads one, for the names the
	// kind declares (api.SourceInfo.QueryFields); elsewhere the same
	// characters are a word.
	Field
	// Sentiment is sentiment:negative: the label of the sentiment the
	// spawn scored the item with (positive, neutral or negative); an item
	// without a sentiment (a language the product does not score) has
	// none of them.
	Sentiment
)

// Atom is a leaf of a query. Value is lowercased and carries no prefix:
// the Tag of "#Go" has Value "go", the Prefix of "Kube*" has Value "kube";
// a phrase's words are separated by single spaces.
type Atom struct {
	Kind  Kind
	Value string
}

// String is the atom as the canonical form writes it.
func (a Atom) String() string {
	switch a.Kind {
	case Word:
		return a.Value
	case Phrase:
		return `"` + a.Value + `"`
	case Tag:
		return "#" + a.Value
	case Mention:
		return "@" + a.Value
	case From:
		return "from:" + a.Value
	case Lang:
		return "lang:" + a.Value
	case Prefix:
		return a.Value + "*"
	case Field:
		return a.Value
	case Sentiment:
		return "sentiment:" + a.Value
	}
	return "?" + a.Value
}

// Text is what the atom finds in an item's text, lowercased, or "" for the
// atoms that test a field (From, Lang, Field) and for a Prefix, which finds
// no one text but any word that starts with its Value (HasPrefixWord). A
// word or phrase matches where it
// occurs bounded by non-word bytes (ContainsWord); so does "#tag" and
// "@user", which is why the word go matches "#go" but the tag #go does not
// match a bare "go".
func (a Atom) Text() string {
	switch a.Kind {
	case Word, Phrase:
		return a.Value
	case Tag:
		return "#" + a.Value
	case Mention:
		return "@" + a.Value
	}
	return ""
}

// Op is the operator of a node.
type Op uint8

// Operators of the tree.
const (
	OpAtom Op = iota + 1 // a leaf: Node.Atom
	OpAnd                // every kid
	OpOr                 // some kid
	OpNot                // not the one kid
	OpNear               // the two kids within Slop words of each other
)

// Node is a node of a query's tree. The tree of a parsed Query is
// canonical and shared: it must not be modified.
type Node struct {
	Op   Op
	Atom Atom    // OpAtom
	Kids []*Node // OpAnd, OpOr (two or more), OpNot (one), OpNear (two)
	// Slop is an OpNear's distance: at most Slop words between its kids'
	// spans (Lucene's span-near slop).
	Slop int
	// Ordered makes an OpNear's first kid come before its second
	// (NEAR/nf).
	Ordered bool
}

// SyntaxError is an invalid query. It wraps ErrInvalid; Column is the
// 1-based column (in characters) of the place it names, 0 if none.
type SyntaxError struct {
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.Column == 0 {
		return "query: " + e.Msg
	}
	return fmt.Sprintf("query: %s at column %d", e.Msg, e.Column)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *SyntaxError) Unwrap() error { return ErrInvalid }

// errAt is an error at byte offset pos of src.
func errAt(src string, pos int, msg string) error {
	return &SyntaxError{Column: column(src, pos), Msg: msg}
}

// column is the 1-based column, in characters, of byte offset pos of src.
func column(src string, pos int) int {
	return utf8.RuneCountInString(src[:pos]) + 1
}

func errf(format string, args ...any) error {
	return &SyntaxError{Msg: fmt.Sprintf(format, args...)}
}

// Parse reads a query of the language and returns it in canonical form.
// A comma outside quotes makes it the legacy comma form: each
// comma-separated term is a query of its own and the query is their OR
// (so "golang,new release" is golang OR (new AND release), as Twitter's
// track reads it).
func Parse(s string) (*Query, error) {
	if len(s) > MaxQueryLength {
		return nil, errf("longer than %d bytes", MaxQueryLength)
	}
	p := &parser{src: s}
	if err := p.terms(0, len(s)); err != nil {
		return nil, err
	}
	return p.finish()
}

// ParseList reads a query given as a list of terms (the API's and the
// command line's comma-separated form): each term is a query of the
// language, commas inside a term separate terms too, and the query is the
// OR of them all. Columns in errors count in the terms joined by commas, as
// typed on the command line.
func ParseList(terms []string) (*Query, error) { return ParseFields(terms, nil) }

// ParseFields is ParseList for a source kind whose items carry fields of
// their own (api.SourceInfo.QueryFields): NAME:VALUE for one of the
// names is a Field atom (subreddit:golang), which may match by itself as
// from: does.
func ParseFields(terms []string, fields []string) (*Query, error) {
	src := strings.Join(terms, ",")
	if len(src) > MaxQueryLength {
		return nil, errf("longer than %d bytes", MaxQueryLength)
	}
	p := &parser{src: src, fields: fields}
	off := 0
	for _, t := range terms {
		if err := p.terms(off, off+len(t)); err != nil {
			return nil, err
		}
		off += len(t) + 1
	}
	return p.finish()
}

// parser is the recursive-descent parser of one query.
type parser struct {
	src    string
	fields []string // the Field names this query may use (ParseFields)
	toks   []token
	i      int
	depth  int
	atoms  int
	ors    []*Node       // one per comma-separated term
	at     map[*Node]int // where each node of the tree starts, for errors
	again  bool          // parsing a canonical form, to check it parses
}

// terms parses src[start:end], split at commas outside quotes.
func (p *parser) terms(start, end int) error {
	from, quoted := start, false
	for i := start; i <= end; i++ {
		if i < end && p.src[i] == '"' {
			quoted = !quoted
		}
		if i == end || p.src[i] == ',' && !quoted {
			if err := p.term(from, i); err != nil {
				return err
			}
			from = i + 1
		}
	}
	return nil
}

// term parses one comma-free term; a blank one is skipped.
func (p *parser) term(start, end int) error {
	l := lexer{src: p.src, fields: p.fields}
	if err := l.lex(start, end); err != nil {
		return err
	}
	if len(l.toks) == 0 {
		return nil
	}
	p.toks, p.i = l.toks, 0
	n, err := p.or()
	if err != nil {
		return err
	}
	if p.i < len(p.toks) {
		return p.unexpected(p.toks[p.i])
	}
	p.ors = append(p.ors, n)
	return nil
}

func (p *parser) finish() (*Query, error) {
	if len(p.ors) == 0 {
		return nil, errf("empty")
	}
	root := p.ors[0]
	if len(p.ors) > 1 {
		root = &Node{Op: OpOr, Kids: p.ors}
	}
	root = normalize(root)
	if !required(root, false) {
		return nil, errf("%s cannot match by itself: every OR branch needs a word, phrase, #tag, @user or from: that must occur (negations and lang: only filter)", quote(p.src))
	}
	if q := root.String(); len(q) > MaxQueryLength {
		// Lowercasing and " OR " for commas can lengthen a query: its
		// canonical form must parse again.
		return nil, errf("canonical form longer than %d bytes", MaxQueryLength)
	}
	if contradiction(root) {
		return nil, errf("%s never matches: it requires a term and its negation", quote(p.src))
	}
	q := newQuery(root)
	if !p.again {
		// Sorting a NEAR's operands can move parentheses: the canonical
		// form must parse again, within the limits.
		again := &parser{src: q.text, fields: p.fields, again: true}
		if err := again.terms(0, len(q.text)); err != nil {
			return nil, errf("canonical form nested deeper than %d", MaxDepth)
		}
	}
	return q, nil
}

func (p *parser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func (p *parser) unexpected(t token) error {
	return errAt(p.src, t.pos, "unexpected "+quote(t.raw))
}

// end is the offset just past the last token, for errors at the end.
func (p *parser) end() int {
	t := p.toks[len(p.toks)-1]
	return t.pos + len(t.raw)
}

// or := and ( "OR" and )*
func (p *parser) or() (*Node, error) {
	n, err := p.and()
	if err != nil {
		return nil, err
	}
	kids := []*Node{n}
	for {
		t, ok := p.peek()
		if !ok || t.kind != tokOr {
			break
		}
		p.i++
		if _, ok := p.peek(); !ok {
			return nil, errAt(p.src, t.pos, `"OR" needs a term after it`)
		}
		n, err := p.and()
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return p.node(&Node{Op: OpOr, Kids: kids}, p.at[kids[0]]), nil
}

// and := near ( ["AND"] near )*
func (p *parser) and() (*Node, error) {
	n, err := p.near()
	if err != nil {
		return nil, err
	}
	kids := []*Node{n}
	for {
		t, ok := p.peek()
		if !ok || t.kind == tokOr || t.kind == tokRParen {
			break
		}
		if t.kind == tokAnd {
			p.i++
			if _, ok := p.peek(); !ok {
				return nil, errAt(p.src, t.pos, `"AND" needs a term after it`)
			}
		}
		n, err := p.near()
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return p.node(&Node{Op: OpAnd, Kids: kids}, p.at[kids[0]]), nil
}

// near := unary ( NEAR/n unary )*, grouped from the left: a NEAR/1 b
// NEAR/2 c is (a NEAR/1 b) NEAR/2 c.
func (p *parser) near() (*Node, error) {
	n, err := p.unary()
	if err != nil {
		return nil, err
	}
	// A chain of NEARs is a loop, not a recursion: MaxAtoms bounds it.
	for {
		t, ok := p.peek()
		if !ok || t.kind != tokNear {
			return n, nil
		}
		p.i++
		if _, ok := p.peek(); !ok {
			return nil, errAt(p.src, t.pos, quote(t.raw)+" needs a term after it")
		}
		if err := p.nearOperand(t, n); err != nil {
			return nil, err
		}
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		if err := p.nearOperand(t, r); err != nil {
			return nil, err
		}
		n = p.node(&Node{Op: OpNear, Kids: []*Node{n, r}, Slop: t.slop, Ordered: t.ordered}, p.at[n])
	}
}

// nearOperand refuses what a NEAR cannot weigh, naming its column: a
// negation, an AND, from:, lang: and field atoms (no words of the text)
// and a term without a word to count ("++"). Words, phrases, #tags,
// @users, prefixes, OR groups of them and NEARs have spans of words.
func (p *parser) nearOperand(op token, n *Node) error {
	const what = ": its terms are words, phrases, #tags, @users, prefixes (kube*) and OR groups of them"
	switch n.Op {
	case OpNot:
		return errAt(p.src, p.at[n], quote(op.raw)+" over a negation: negate the whole instead, as in -(a "+op.raw+" b)")
	case OpAnd:
		return errAt(p.src, p.at[n], quote(op.raw)+" over an AND"+what)
	case OpOr:
		for _, k := range n.Kids {
			if err := p.nearOperand(op, k); err != nil {
				return err
			}
		}
	case OpAtom:
		switch {
		case n.Atom.Kind == From || n.Atom.Kind == Lang || n.Atom.Kind == Field || n.Atom.Kind == Sentiment:
			return errAt(p.src, p.at[n], quote(op.raw)+" over "+quote(n.Atom.String())+what)
		case n.Atom.Words() == 0:
			return errAt(p.src, p.at[n], quote(op.raw)+" over "+quote(n.Atom.String())+", which has no word to count")
		}
	}
	return nil
}

// node records where n starts in the source, for errors about it.
func (p *parser) node(n *Node, pos int) *Node {
	if p.at == nil {
		p.at = map[*Node]int{}
	}
	p.at[n] = pos
	return n
}

// unary := ( "-" | "NOT" ) unary | atom
// atom  := WORD | PREFIX | PHRASE | #TAG | @USER | from:USER | lang:CODE | "(" query ")"
func (p *parser) unary() (*Node, error) {
	t, ok := p.peek()
	if !ok {
		return nil, errAt(p.src, p.end(), "a term is missing")
	}
	switch t.kind {
	case tokNot:
		p.i++
		if _, ok := p.peek(); !ok {
			return nil, errAt(p.src, t.pos, quote(t.raw)+" needs a term after it")
		}
		if err := p.deeper(t); err != nil {
			return nil, err
		}
		n, err := p.unary()
		p.depth--
		if err != nil {
			return nil, err
		}
		return p.node(&Node{Op: OpNot, Kids: []*Node{n}}, t.pos), nil
	case tokLParen:
		p.i++
		if err := p.deeper(t); err != nil {
			return nil, err
		}
		if c, ok := p.peek(); ok && c.kind == tokRParen {
			return nil, errAt(p.src, t.pos, "empty parentheses")
		}
		if _, ok := p.peek(); !ok {
			return nil, p.unclosed(t)
		}
		n, err := p.or()
		p.depth--
		if err != nil {
			return nil, err
		}
		if c, ok := p.peek(); !ok || c.kind != tokRParen {
			return nil, p.unclosed(t)
		}
		p.i++
		return n, nil
	case tokAtom:
		p.i++
		if p.atoms++; p.atoms > MaxAtoms {
			return nil, errAt(p.src, t.pos, fmt.Sprintf("more than %d terms", MaxAtoms))
		}
		return p.node(&Node{Op: OpAtom, Atom: t.atom}, t.pos), nil
	case tokNear:
		return nil, errAt(p.src, t.pos, quote(t.raw)+" needs a term before it")
	}
	return nil, p.unexpected(t)
}

// unclosed is the error of a "(" without its ")": it names the column of
// the "(" and the place where the ")" is missing, the end of the term.
func (p *parser) unclosed(open token) error {
	return errAt(p.src, p.end(), fmt.Sprintf(`unclosed "(" at column %d: ")" missing`, column(p.src, open.pos)))
}

func (p *parser) deeper(t token) error {
	if p.depth++; p.depth > MaxDepth {
		return errAt(p.src, t.pos, fmt.Sprintf("nested deeper than %d", MaxDepth))
	}
	return nil
}

// required reports whether n (negated if neg) can hold only when one of
// its candidate atoms — a text atom or from:, not under an odd number of
// negations — hits. The shared index finds a subscriber's candidates from
// those hits alone, so a query must need one in every OR branch. The test
// is structural (AND needs one kid to need one, OR all of them), hence
// sound: it may refuse a contrived query that could not match without a
// candidate anyway, never accept one that could.
func required(n *Node, neg bool) bool {
	switch n.Op {
	case OpAtom:
		return !neg && n.Atom.Kind != Lang && n.Atom.Kind != Sentiment
	case OpNot:
		return required(n.Kids[0], !neg)
	}
	all := (n.Op == OpOr) != neg // OR, or AND under negation (De Morgan)
	for _, k := range n.Kids {
		r := required(k, neg)
		if all && !r {
			return false
		}
		if !all && r {
			return true
		}
	}
	return all
}

// contradiction reports the obvious never-matching query: an AND that has
// both a kid and its negation (`golang -golang`). Deeper contradictions
// are legal and simply never match.
func contradiction(n *Node) bool {
	if n.Op == OpAnd {
		seen := make(map[string]bool, len(n.Kids))
		for _, k := range n.Kids {
			seen[k.String()] = true
		}
		for _, k := range n.Kids {
			if k.Op == OpNot && seen[k.Kids[0].String()] {
				return true
			}
		}
	}
	for _, k := range n.Kids {
		if contradiction(k) {
			return true
		}
	}
	return false
}
