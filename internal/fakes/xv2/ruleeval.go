package xv2

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/textmatch"
)

// This file is the server's own reading of X's rule syntax, written apart
// from the product's query compiler so that a misunderstanding of the
// syntax shows up as a disagreement between the two instead of hiding in
// shared code. It covers what a spawn's rules use: words, "phrases", #tags,
// @mentions, from:, lang:, juxtaposition for AND, OR, - for negation and
// parentheses. X applies AND before OR when a rule mixes them without
// parentheses, and so does this parser.

// maxUsernameChars is the longest user name X has; a from: or @ operand
// longer than this cannot name an account.
const maxUsernameChars = 15

// langCodes are the languages the lang: operator accepts (X's list of
// supported BCP 47 codes, abridged to the common ones); any other code is
// an invalid rule.
var langCodes = []string{
	"am", "ar", "bg", "bn", "cs", "cy", "da", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fr",
	"gu", "he", "hi", "hr", "ht", "hu", "hy", "id", "is", "it", "ja", "ka", "kn", "ko", "lo",
	"lt", "lv", "ml", "mr", "ms", "my", "ne", "nl", "no", "or", "pa", "pl", "ps", "pt", "ro",
	"ru", "si", "sk", "sl", "sr", "sv", "ta", "te", "th", "tl", "tr", "uk", "ur", "vi", "zh",
}

// errRule is wrapped by every syntax error of a rule.
var errRule = errors.New("invalid rule")

type nodeKind uint8

const (
	nWord nodeKind = iota // a keyword, matched as a whole word
	nPhrase
	nTag
	nMention
	nFrom
	nLang
	nNot
	nAnd
	nOr
)

// node is a parsed rule.
type node struct {
	kind  nodeKind
	value string // lowercased operand of a leaf
	kids  []*node
}

// tok is one token of a rule: "(", ")", "OR", "-", a quoted phrase (with
// quoted set) or a bare term.
type tok struct {
	text   string
	quoted bool
	pos    int
}

func tokenize(rule string) ([]tok, error) {
	var out []tok
	rs := []rune(rule)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '(' || r == ')':
			out = append(out, tok{text: string(r), pos: i + 1})
			i++
		case r == '-' && i+1 < len(rs) && !unicode.IsSpace(rs[i+1]):
			out = append(out, tok{text: "-", pos: i + 1})
			i++
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				j++
			}
			if j == len(rs) {
				return nil, fmt.Errorf("%w: unterminated quote (at position %d)", errRule, i+1)
			}
			out = append(out, tok{text: string(rs[i+1 : j]), quoted: true, pos: i + 1})
			i = j + 1
		default:
			j := i
			for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != '(' && rs[j] != ')' && rs[j] != '"' {
				j++
			}
			out = append(out, tok{text: string(rs[i:j]), pos: i + 1})
			i = j
		}
	}
	return out, nil
}

type ruleParser struct {
	toks []tok
	i    int
}

// parseRule reads a rule and checks what X checks: balanced groups, no
// dangling OR, known operators with valid operands, and at least one term
// that is neither negated nor lang: alone.
func parseRule(rule string) (*node, error) {
	toks, err := tokenize(rule)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("%w: empty rule", errRule)
	}
	p := &ruleParser{toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("%w: unexpected %q (at position %d)", errRule, p.toks[p.i].text, p.toks[p.i].pos)
	}
	if !positive(n) {
		return nil, fmt.Errorf("%w: Rules must contain a non-negation term that is not lang: alone", errRule)
	}
	return n, nil
}

func (p *ruleParser) peek() (tok, bool) {
	if p.i >= len(p.toks) {
		return tok{}, false
	}
	return p.toks[p.i], true
}

func (p *ruleParser) or() (*node, error) {
	first, err := p.and()
	if err != nil {
		return nil, err
	}
	kids := []*node{first}
	for {
		t, ok := p.peek()
		if !ok || t.quoted || t.text != "OR" {
			break
		}
		p.i++
		next, err := p.and()
		if err != nil {
			return nil, err
		}
		kids = append(kids, next)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return &node{kind: nOr, kids: kids}, nil
}

func (p *ruleParser) and() (*node, error) {
	var kids []*node
	for {
		t, ok := p.peek()
		if !ok || !t.quoted && (t.text == ")" || t.text == "OR") {
			break
		}
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	switch len(kids) {
	case 0:
		t, ok := p.peek()
		if !ok {
			return nil, fmt.Errorf("%w: the rule ends where a term is expected", errRule)
		}
		return nil, fmt.Errorf("%w: a term is expected before %q (at position %d)", errRule, t.text, t.pos)
	case 1:
		return kids[0], nil
	}
	return &node{kind: nAnd, kids: kids}, nil
}

func (p *ruleParser) unary() (*node, error) {
	t := p.toks[p.i]
	p.i++
	switch {
	case t.quoted:
		if strings.TrimSpace(t.text) == "" {
			return nil, fmt.Errorf("%w: empty phrase (at position %d)", errRule, t.pos)
		}
		return &node{kind: nPhrase, value: strings.ToLower(t.text)}, nil
	case t.text == "-":
		if nt, ok := p.peek(); !ok || !nt.quoted && (nt.text == ")" || nt.text == "OR") {
			return nil, fmt.Errorf("%w: nothing to negate (at position %d)", errRule, t.pos)
		}
		k, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &node{kind: nNot, kids: []*node{k}}, nil
	case t.text == "(":
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if c, ok := p.peek(); !ok || c.quoted || c.text != ")" {
			return nil, fmt.Errorf("%w: unbalanced parentheses (at position %d)", errRule, t.pos)
		}
		p.i++
		return n, nil
	case t.text == ")":
		return nil, fmt.Errorf("%w: unbalanced parentheses (at position %d)", errRule, t.pos)
	}
	return leaf(t)
}

// leaf reads a bare term: an operator with its operand or a keyword.
func leaf(t tok) (*node, error) {
	v := strings.ToLower(t.text)
	switch {
	case strings.HasPrefix(v, "#"):
		if len(v) == 1 {
			return nil, fmt.Errorf("%w: empty hashtag (at position %d)", errRule, t.pos)
		}
		return &node{kind: nTag, value: v[1:]}, nil
	case strings.HasPrefix(v, "@"):
		if !username(v[1:]) {
			return nil, fmt.Errorf("%w: %q is not a valid user name (at position %d)", errRule, t.text, t.pos)
		}
		return &node{kind: nMention, value: v[1:]}, nil
	}
	if op, arg, ok := strings.Cut(v, ":"); ok && op != "" {
		switch op {
		case "from":
			if !username(arg) {
				return nil, fmt.Errorf("%w: %q is not a valid user name (at position %d)", errRule, t.text, t.pos)
			}
			return &node{kind: nFrom, value: arg}, nil
		case "lang":
			if !slices.Contains(langCodes, arg) {
				return nil, fmt.Errorf("%w: %q is not a supported language (at position %d)", errRule, arg, t.pos)
			}
			return &node{kind: nLang, value: arg}, nil
		}
		return nil, fmt.Errorf("%w: Reference to invalid operator '%s' (at position %d)", errRule, op, t.pos)
	}
	return &node{kind: nWord, value: v}, nil
}

func username(s string) bool {
	if s == "" || len(s) > maxUsernameChars {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z') {
			return false
		}
	}
	return true
}

// positive reports whether every way n can match needs a term that is
// neither negated nor lang: (X's "standalone operator").
func positive(n *node) bool {
	switch n.kind {
	case nNot, nLang:
		return false
	case nAnd:
		return slices.ContainsFunc(n.kids, positive)
	case nOr:
		for _, k := range n.kids {
			if !positive(k) {
				return false
			}
		}
		return true
	}
	return true
}

// post is what a rule is evaluated against.
type post struct {
	text     string // lowercased
	username string // lowercased
	lang     string // lowercased
}

// matches evaluates n on p. Keywords, phrases, #tags and @mentions match
// whole words of the text, case-insensitively.
func (n *node) matches(p post) bool {
	switch n.kind {
	case nWord, nPhrase:
		return textmatch.ContainsPhrase(p.text, n.value)
	case nTag:
		return textmatch.ContainsPhrase(p.text, "#"+n.value)
	case nMention:
		return textmatch.ContainsPhrase(p.text, "@"+n.value)
	case nFrom:
		return p.username == n.value
	case nLang:
		return p.lang == n.value || strings.HasPrefix(p.lang, n.value+"-")
	case nNot:
		return !n.kids[0].matches(p)
	case nAnd:
		for _, k := range n.kids {
			if !k.matches(p) {
				return false
			}
		}
		return true
	case nOr:
		return slices.ContainsFunc(n.kids, func(k *node) bool { return k.matches(p) })
	}
	return false
}

// RuleSelects reports whether a filtered-stream rule, read as this server
// reads X's syntax, selects a post of the given text, author user name and
// language, and refuses a rule X would refuse. Tests of the product's rule
// compiler check with it that a compiled rule selects what its query
// matches.
func RuleSelects(rule, text, username, lang string) (bool, error) {
	n, err := parseRule(rule)
	if err != nil {
		return false, err
	}
	return n.matches(post{text: textmatch.Fold(text), username: strings.ToLower(username), lang: strings.ToLower(lang)}), nil
}
