package query

import (
	"errors"
	"strings"
	"testing"
)

func TestParse_CanonicalForm(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"one word", "Golang", "golang"},
		{"or sorted", "rust OR golang", "golang OR rust"},
		{"group of one unwrapped", "(golang OR  Rust)", "golang OR rust"},
		{"juxtaposition is and", "b a", "a b"},
		{"explicit and", "b AND a", "a b"},
		{"and binds tighter than or", "a OR b c", "a OR b c"},
		{"or inside and keeps parentheses", "c (b OR a)", "(a OR b) c"},
		{"minus binds to the atom", "-a b", "-a b"},
		{"not is minus", "NOT a b", "-a b"},
		{"negated group", "x -(a b)", "-(a b) x"},
		{"double negation removed", "--a b", "a b"},
		{"NOT NOT", "NOT NOT a", "a"},
		{"negated double negation inside and", "x -(-(a b))", "a b x"},
		{"nested and merged", "a (b (c d))", "a b c d"},
		{"nested or merged", "a OR (b OR (c OR d))", "a OR b OR c OR d"},
		{"duplicates removed", "a a OR a a", "a"},
		{"lowercase operators are words", "cats or dogs and not mice", "and cats dogs mice not or"},
		{"phrase spaces folded", `"New   York"  city`, `"new york" city`},
		{"one-word phrase is a word", `"golang"`, "golang"},
		{"one-word phrase that is not a bare word", `"-golang" x`, `"-golang" x`},
		{"phrase with a comma", `"hello, world"`, `"hello, world"`},
		{"tags and users", "#Go @Alice from:@Bob lang:EN", "#go @alice from:bob lang:en"},
		{"prefixes are case-insensitive", "FROM:Bob Lang:PT-BR", "from:bob lang:pt-br"},
		{"punctuation in words", "c++ e-mail don't", "c++ don't e-mail"},
		{"legacy comma list", "golang,new release", "golang OR new release"},
		{"legacy list with spaces and empty terms", " golang , ,Rust,", "golang OR rust"},
		{"legacy terms are queries", "a OR b,c -d", "-d c OR a OR b"},
		{"comma inside quotes is no separator", `"a, b" c`, `"a, b" c`},
		{"parentheses touching words", "(a)(b)", "a b"},
		{"unicode lowercased", "MÜNCHEN Café", "café münchen"},
		{"user names of other sources", "@alice.bsky.social from:bob@mastodon.social", "@alice.bsky.social from:bob@mastodon.social"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := q.String(); got != tc.want {
				t.Fatalf("Parse(%q) = %q, want %q", tc.in, got, tc.want)
			}
			again, err := Parse(q.String())
			if err != nil || again.String() != q.String() {
				t.Fatalf("canonical %q parses to %v, %v", q.String(), again, err)
			}
		})
	}
}

func TestParse_Precedence(t *testing.T) {
	tests := []struct{ a, b string }{
		{"a OR b c", "a OR (b AND c)"},
		{"a b OR c", "(a b) OR c"},
		{"-a b", "(NOT a) AND b"},
		{"NOT a OR b", "(-a) OR b"},
		{"a AND b OR c AND d", "(a b) OR (c d)"},
		{"-(a OR b)", "NOT (b OR a)"},
	}
	for _, tc := range tests {
		t.Run(tc.a, func(t *testing.T) {
			// Queries of negations only are refused: test each
			// beside a required word.
			qa, err := Parse("z (" + tc.a + ")")
			if err != nil {
				t.Fatal(err)
			}
			qb, err := Parse("z (" + tc.b + ")")
			if err != nil {
				t.Fatal(err)
			}
			if qa.String() != qb.String() {
				t.Fatalf("%q reads as %q, %q as %q", tc.a, qa, tc.b, qb)
			}
		})
	}
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "  ", "query: empty"},
		{"only commas", " , ,", "query: empty"},
		{"unclosed paren", "golang (rust OR go", `query: unclosed "(" at column 8: ")" missing at column 19`},
		{"unclosed nested paren", "golang ((a) b", `query: unclosed "(" at column 8: ")" missing at column 14`},
		{"unexpected close", "a b) c", `query: unexpected ")" at column 4`},
		{"close first", ")", `query: unexpected ")" at column 1`},
		{"empty phrase", `a "" b`, "query: empty phrase at column 3"},
		{"blank phrase", `a "   "`, "query: empty phrase at column 3"},
		{"unclosed quote", `a "new york`, `query: unclosed quote at column 3: '"' missing at column 12`},
		{"empty parentheses", "a ()", "query: empty parentheses at column 3"},
		{"or first", "OR a", `query: unexpected "OR" at column 1`},
		{"or twice", "a OR OR b", `query: unexpected "OR" at column 6`},
		{"or last", "a OR", `query: "OR" needs a term after it at column 3`},
		{"and last", "a AND", `query: "AND" needs a term after it at column 3`},
		{"not last", "a NOT", `query: "NOT" needs a term after it at column 3`},
		{"lonely minus", "a - b", `query: "-" needs a term right after it at column 3`},
		{"minus at the end", "a -", `query: "-" needs a term right after it at column 3`},
		{"bad hashtag", "#go!", `query: bad hashtag "#go!" (letters, digits and _ only) at column 1`},
		{"empty hashtag", "a #", `query: bad hashtag "#" (letters, digits and _ only) at column 3`},
		{"empty user", "a @", `query: bad user "@" at column 3`},
		{"empty from", "a from:", `query: bad user "from:" at column 3`},
		{"bad language", "a lang:e_n", `query: bad language code "lang:e_n" (like lang:en or lang:pt-br) at column 3`},
		{"columns count characters", "café (x", `query: unclosed "(" at column 6: ")" missing at column 8`},
		{"columns span legacy terms", "golang,(rust", `query: unclosed "(" at column 8: ")" missing at column 13`},
		{"negation only", "-java", `query: "-java" cannot match by itself: every OR branch needs a word, phrase, #tag, @user or from: that must occur (negations and lang: only filter)`},
		{"negation in one branch", "NOT a OR -b", `query: "NOT a OR -b" cannot match by itself: every OR branch needs a word, phrase, #tag, @user or from: that must occur (negations and lang: only filter)`},
		{"branch of negations", "golang OR -java", `query: "golang OR -java" cannot match by itself: every OR branch needs a word, phrase, #tag, @user or from: that must occur (negations and lang: only filter)`},
		{"lang alone", "lang:en", `query: "lang:en" cannot match by itself: every OR branch needs a word, phrase, #tag, @user or from: that must occur (negations and lang: only filter)`},
		{"negated and", "-(a b)", `query: "-(a b)" cannot match by itself: every OR branch needs a word, phrase, #tag, @user or from: that must occur (negations and lang: only filter)`},
		{"contradiction", "a -a", `query: "a -a" never matches: it requires a term and its negation`},
		{"too deep", strings.Repeat("(", MaxDepth+1) + "a" + strings.Repeat(")", MaxDepth+1), `query: nested deeper than 16 at column 17`},
		{"too many negations", strings.Repeat("-", MaxDepth+1) + "a", `query: nested deeper than 16 at column 17`},
		{"too many atoms", strings.Repeat("a ", MaxAtoms+1), `query: more than 100 terms at column 201`},
		{"too long", strings.Repeat("a", MaxQueryLength+1), `query: longer than 4096 bytes`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want error %q", tc.in, q, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%q) error\n got %s\nwant %s", tc.in, err, tc.want)
			}
		})
	}
}

// TestParse_ErrorsNameWhereTheProblemIs: an unclosed "(" or quote is
// missing its close at the end of the term, and the error's column says
// so, naming where the open one stands too.
func TestParse_ErrorsNameWhereTheProblemIs(t *testing.T) {
	tests := []struct {
		in     string
		column int
		msg    string
	}{
		{"(golang", 8, `query: unclosed "(" at column 1: ")" missing at column 8`},
		{"(golang OR rust   ", 16, `query: unclosed "(" at column 1: ")" missing at column 16`},
		{`"golang`, 8, `query: unclosed quote at column 1: '"' missing at column 8`},
		{"rust,(golang,go", 13, `query: unclosed "(" at column 6: ")" missing at column 13`},
	}
	for _, tc := range tests {
		_, err := Parse(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Column != tc.column || err.Error() != tc.msg {
			t.Errorf("Parse(%q) = %v, want column %d: %s", tc.in, err, tc.column, tc.msg)
		}
	}
}

func TestParse_NegationsNeedAPositiveTerm(t *testing.T) {
	for _, ok := range []string{"golang -java", "golang -java lang:en", "from:alice", "from:alice -lang:en", "a OR (b -c)", "-(-a) x", "-(a OR -b)", "(a OR -b) b"} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
}

func TestParseList_IsTheOrOfItsTerms(t *testing.T) {
	q, err := ParseList([]string{"golang", "new release", `"a, b" OR c`})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"a, b" OR c OR golang OR new release`; q.String() != want {
		t.Fatalf("got %q, want %q", q, want)
	}
	_, err = ParseList([]string{"golang", "(rust"})
	if want := `query: unclosed "(" at column 8: ")" missing at column 13`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestQuery_AtomsAndEval(t *testing.T) {
	q, err := Parse(`golang OR "new york" -#nyc lang:en`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range q.Atoms() {
		got = append(got, a.String())
	}
	if want := `"new york" #nyc lang:en golang`; strings.Join(got, " ") != want {
		t.Fatalf("Atoms = %q, want %s", got, want)
	}
	tests := []struct {
		hits map[string]bool
		want bool
	}{
		{map[string]bool{"golang": true}, true},
		{map[string]bool{`"new york"`: true}, false},
		{map[string]bool{`"new york"`: true, "lang:en": true}, true},
		{map[string]bool{`"new york"`: true, "lang:en": true, "#nyc": true}, false},
		{map[string]bool{}, false},
	}
	for _, tc := range tests {
		if got := q.Eval(func(a Atom) bool { return tc.hits[a.String()] }); got != tc.want {
			t.Errorf("Eval(%v) = %v, want %v", tc.hits, got, tc.want)
		}
	}
}

func TestAtom_Text(t *testing.T) {
	tests := []struct {
		in   string
		text string
	}{
		{"go", "go"}, {`"new york"`, "new york"}, {"#go", "#go"}, {"@alice", "@alice"}, {"from:alice", ""},
	}
	for _, tc := range tests {
		q, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Atoms()[0].Text(); got != tc.text {
			t.Errorf("Text of %s = %q, want %q", tc.in, got, tc.text)
		}
	}
}

func TestContainsWord(t *testing.T) {
	tests := []struct {
		text, word string
		want       bool
	}{
		{"i like go!", "go", true},
		{"#go rocks", "go", true},
		{"#go rocks", "#go", true},
		{"go rocks", "#go", false},
		{"#golang", "#go", false},
		{"a#go", "#go", false},
		{"golangs and golang", "golang", true},
		{"go_lang", "go", false},
		{"café", "caf", false},
		{"new york city", "new york", true},
		{"anything", "", false},
	}
	for _, tc := range tests {
		if got := ContainsWord(tc.text, tc.word); got != tc.want {
			t.Errorf("ContainsWord(%q, %q) = %v, want %v", tc.text, tc.word, got, tc.want)
		}
	}
}
