package query

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tokAtom   tokKind = iota + 1 // a word, phrase, #tag, @user, from:user or lang:code
	tokLParen                    // (
	tokRParen                    // )
	tokNot                       // - or NOT
	tokAnd                       // AND
	tokOr                        // OR
	tokNear                      // NEAR/n or NEAR/nf
)

// token is one lexical token; pos is its byte offset in the whole input,
// so errors can name its column.
type token struct {
	kind    tokKind
	atom    Atom
	pos     int
	raw     string
	slop    int  // tokNear: n
	ordered bool // tokNear: f
}

// lexer splits src[start:end] into tokens; positions are offsets into src.
type lexer struct {
	src    string
	fields []string // Field names (ParseFields)
	toks   []token
}

// isSpace is the separator between tokens.
func isSpace(r rune) bool { return unicode.IsSpace(r) }

// ends reports whether the byte at i ends a bare word.
func (l *lexer) endsWord(i int) bool {
	switch l.src[i] {
	case '(', ')', '"', ',':
		return true
	}
	r, _ := utf8.DecodeRuneInString(l.src[i:])
	return isSpace(r)
}

func (l *lexer) lex(start, end int) error {
	for i, r := range l.src[start:end] {
		if Invisible(r) {
			return errAt(l.src, start+i, fmt.Sprintf("invisible character U+%04X (it would never match: matching ignores it)", r))
		}
	}
	for i := start; i < end; {
		r, size := utf8.DecodeRuneInString(l.src[i:end])
		switch {
		case isSpace(r):
			i += size
		case r == '(':
			l.toks = append(l.toks, token{kind: tokLParen, pos: i, raw: "("})
			i++
		case r == ')':
			l.toks = append(l.toks, token{kind: tokRParen, pos: i, raw: ")"})
			i++
		case r == '"':
			j := strings.IndexByte(l.src[i+1:end], '"')
			if j < 0 {
				return errAt(l.src, end, fmt.Sprintf(`unclosed quote at column %d: '"' missing`, column(l.src, i)))
			}
			words := strings.Fields(strings.ToLower(l.src[i+1 : i+1+j]))
			if len(words) == 0 {
				return errAt(l.src, i, "empty phrase")
			}
			a := Atom{Kind: Phrase, Value: strings.Join(words, " ")}
			if len(words) == 1 && bareWord(a.Value) {
				a.Kind = Word
			}
			l.toks = append(l.toks, token{kind: tokAtom, atom: a, pos: i, raw: l.src[i : i+j+2]})
			i += j + 2
		case r == '-':
			if i+1 == end || l.endsWord(i+1) && l.src[i+1] != '(' && l.src[i+1] != '"' {
				return errAt(l.src, i, `"-" needs a term right after it`)
			}
			l.toks = append(l.toks, token{kind: tokNot, pos: i, raw: "-"})
			i++
		default:
			j := i
			for j < end && !l.endsWord(j) {
				_, n := utf8.DecodeRuneInString(l.src[j:end])
				j += n
			}
			raw := l.src[i:j]
			tok := token{kind: tokAtom, pos: i, raw: raw}
			switch raw {
			case "OR":
				tok.kind = tokOr
			case "AND":
				tok.kind = tokAnd
			case "NOT":
				tok.kind = tokNot
			default:
				if raw == "NEAR" || strings.HasPrefix(raw, "NEAR/") {
					slop, ordered, msg := nearOp(raw)
					if msg != "" {
						return errAt(l.src, i, msg)
					}
					tok.kind, tok.slop, tok.ordered = tokNear, slop, ordered
					break
				}
				a, msg, at := l.word(raw)
				if msg != "" {
					return errAt(l.src, i+at, msg)
				}
				tok.atom = a
			}
			l.toks = append(l.toks, tok)
			i = j
		}
	}
	return nil
}

// word classifies a bare word: NAME:VALUE as a Field atom for the
// lexer's field names, a prefix wildcard as wildcard does, the rest as
// word does. A non-empty msg says what is wrong, at byte offset at of raw.
func (l *lexer) word(raw string) (a Atom, msg string, at int) {
	lw := strings.ToLower(raw)
	for _, f := range l.fields {
		if v, ok := strings.CutPrefix(lw, f+":"); ok {
			if !validName(v, ".-_") {
				return Atom{}, "bad " + f + " " + quote(raw) + " (letters, digits, '.', '-' and '_' only)", 0
			}
			return Atom{Kind: Field, Value: f + ":" + v}, "", 0
		}
	}
	if a, msg, at = wildcard(raw); msg != "" || a.Kind != 0 {
		return a, msg, at
	}
	a, msg = word(raw)
	return a, msg, 0
}

// word classifies a bare word: #tag, @user, from:user, lang:code or a
// plain word. A non-empty msg says what is wrong with it.
func word(raw string) (Atom, string) {
	lw := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lw, "#"):
		v := lw[1:]
		if !IsWord(v) {
			return Atom{}, "bad hashtag " + quote(raw) + " (letters, digits and _ only)"
		}
		return Atom{Kind: Tag, Value: v}, ""
	case strings.HasPrefix(lw, "@"):
		v := lw[1:]
		if !validUser(v) {
			return Atom{}, "bad user " + quote(raw)
		}
		return Atom{Kind: Mention, Value: v}, ""
	case strings.HasPrefix(lw, "from:"):
		v := strings.TrimPrefix(lw[len("from:"):], "@")
		if !validAuthor(v) {
			return Atom{}, "bad user " + quote(raw)
		}
		return Atom{Kind: From, Value: v}, ""
	case strings.HasPrefix(lw, "lang:"):
		v := lw[len("lang:"):]
		if !validLang(v) {
			return Atom{}, "bad language code " + quote(raw) + " (like lang:en or lang:pt-br)"
		}
		return Atom{Kind: Lang, Value: v}, ""
	case strings.HasPrefix(lw, "sentiment:"):
		v := lw[len("sentiment:"):]
		if v != "positive" && v != "neutral" && v != "negative" {
			return Atom{}, "bad sentiment " + quote(raw) + " (sentiment:positive, sentiment:neutral or sentiment:negative)"
		}
		return Atom{Kind: Sentiment, Value: v}, ""
	}
	return Atom{Kind: Word, Value: lw}, ""
}

// nearOp reads the proximity operator NEAR/n or NEAR/nf: the distance
// and whether its order counts. A non-empty msg says what is wrong.
func nearOp(raw string) (slop int, ordered bool, msg string) {
	const form = " (write NEAR/3, or NEAR/3f for the left term first)"
	d, ok := strings.CutPrefix(raw, "NEAR/")
	if !ok {
		return 0, false, quote(raw) + " needs a distance" + form
	}
	d, ordered = strings.CutSuffix(d, "f")
	if d == "" || len(d) > 4 || strings.Trim(d, "0123456789") != "" {
		return 0, false, "bad distance " + quote(raw) + form
	}
	for _, c := range d {
		slop = slop*10 + int(c-'0')
	}
	if slop > MaxNear {
		return 0, false, fmt.Sprintf("distance of %s too large: at most NEAR/%d", quote(raw), MaxNear)
	}
	return slop, ordered, ""
}

// wildcard reads a bare word that holds a '*': a prefix wildcard (kube*),
// one word of at least MinPrefix letters followed by one '*'. A word
// without '*', and a #tag, @user, from: or lang: (which word refuses
// whole), is left to word: Kind is 0 and msg empty. A non-empty msg says
// what is wrong, at byte offset at of raw.
func wildcard(raw string) (a Atom, msg string, at int) {
	star := strings.IndexByte(raw, '*')
	if star < 0 || raw[0] == '#' || raw[0] == '@' {
		return Atom{}, "", 0
	}
	lw := strings.ToLower(raw)
	if strings.HasPrefix(lw, "from:") || strings.HasPrefix(lw, "lang:") {
		return Atom{}, "", 0
	}
	if star != len(raw)-1 {
		return Atom{}, `a wildcard "*" stands only at the end of a word, as in kube*`, star
	}
	v := lw[:star]
	if v == "" {
		return Atom{}, `a wildcard "*" stands only at the end of a word, as in kube*`, star
	}
	for _, r := range v {
		if Unspaced(r) {
			return Atom{}, "a prefix wildcard needs a script written with spaces: each character of " + quote(raw[:star]) + " is a word of its own", 0
		}
	}
	if s, e := NextWord(v, 0); s != 0 || e != len(v) || !IsWord(v) {
		return Atom{}, "a prefix wildcard is one word of letters and digits: " + quote(raw), 0
	}
	letters := 0
	for _, r := range v {
		if classOf(r) != mark {
			letters++
		}
	}
	if letters < MinPrefix {
		return Atom{}, fmt.Sprintf("prefix %s is shorter than %d letters", quote(raw), MinPrefix), 0
	}
	return Atom{Kind: Prefix, Value: v}, "", 0
}

// bareWord reports whether a lowercased word prints as itself: it lexes
// back as one plain word.
func bareWord(v string) bool {
	if v == "" || v[0] == '-' || v[0] == '#' || v[0] == '@' ||
		strings.HasPrefix(v, "from:") || strings.HasPrefix(v, "lang:") {
		return false
	}
	for _, r := range v {
		if r == '(' || r == ')' || r == '"' || r == ',' || r == '*' || isSpace(r) {
			return false
		}
	}
	if a, msg := word(v); msg != "" || a.Kind != Word || a.Value != v {
		return false
	}
	return true
}

// validUser accepts the user names of the sources: word characters, with
// '.', '-' and '@' inside (bluesky handles, mastodon accounts).
func validUser(v string) bool {
	return validName(v, ".-@")
}

// validName reports whether v is word characters (IsWordRune), first and
// last, with the characters of inner between.
func validName(v, inner string) bool {
	if v == "" || len(v) > maxUserBytes {
		return false
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	if !IsWordRune(first) || !IsWordRune(last) {
		return false
	}
	for _, r := range v {
		if !IsWordRune(r) && !strings.ContainsRune(inner, r) {
			return false
		}
	}
	return true
}

// validAuthor accepts what from: may name: a user name as validUser does,
// or an account id (a DID such as did:plc:…, an X user id, a Mastodon
// account URI), which also carry ':', '/', '%', '~' and '_' inside.
func validAuthor(v string) bool {
	return validName(v, ".-@:/%~")
}

// validLang accepts a BCP 47-like tag: a letter first, then letters, digits
// and inner hyphens.
func validLang(v string) bool {
	if v == "" || len(v) > maxLangBytes || v[0] < 'a' || v[0] > 'z' || v[len(v)-1] == '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// quote shows a piece of input in an error, clipped.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return `"` + s + `"`
}
