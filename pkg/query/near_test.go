package query

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParse_NearAndPrefixCanonicalForm(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"near", "logitech NEAR/2 keyboard", "keyboard NEAR/2 logitech"},
		{"near without order sorts its operands", "b NEAR/2 a", "a NEAR/2 b"},
		{"near in order keeps them", "logitech NEAR/2f keyboard", "logitech NEAR/2f keyboard"},
		{"near in order the other way", "keyboard NEAR/2f logitech", "keyboard NEAR/2f logitech"},
		{"adjacency", "new NEAR/0 york", "new NEAR/0 york"},
		{"groups as operands", "(Orange OR apple) NEAR/5 (smartphone OR phone)", "(apple OR orange) NEAR/5 (phone OR smartphone)"},
		{"phrases and tags as operands", `#Go NEAR/3 "Black  Widow"`, `"black widow" NEAR/3 #go`},
		{"chains group from the left", "a NEAR/1 b NEAR/2 c", "a NEAR/1 b NEAR/2 c"},
		{"the group first, so a chain needs no parentheses", "c NEAR/2 (b NEAR/1 a)", "a NEAR/1 b NEAR/2 c"},
		{"a chain to the right in order keeps them", "a NEAR/2f (b NEAR/1f c)", "a NEAR/2f (b NEAR/1f c)"},
		{"nears on both sides", "(d NEAR/1 c) NEAR/3 (b NEAR/1 a)", "a NEAR/1 b NEAR/3 (c NEAR/1 d)"},
		{"a near before an or group", "(b OR a) NEAR/2 (d NEAR/1 c)", "c NEAR/1 d NEAR/2 (a OR b)"},
		{"near binds tighter than and", "x a NEAR/2 b", "a NEAR/2 b x"},
		{"near binds tighter than or", "a NEAR/2 b OR c", "a NEAR/2 b OR c"},
		{"negated near", "x -(b NEAR/2 a)", "-(a NEAR/2 b) x"},
		{"near in and and or", "(a NEAR/2 b OR c) d", "(a NEAR/2 b OR c) d"},
		{"prefix", "Kube*", "kube*"},
		{"prefix of accented letters", "CAFÉ* x", "café* x"},
		{"prefix beside words", "kube* -java", "-java kube*"},
		{"prefix in a near", "kube* NEAR/3f deploy", "kube* NEAR/3f deploy"},
		{"a star in quotes is literal", `"kube*"`, `"kube*"`},
		{"lowercase near is a word", "apple near/2 pie", "apple near/2 pie"},
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

// TestParse_LongNearChains: a chain of NEARs is bounded by the number of
// terms, not by the nesting of parentheses, and its canonical form parses
// back to itself.
func TestParse_LongNearChains(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("a NEAR/1 ", MaxAtoms-1) + "a",
		strings.Repeat("x NEAR/1 (", MaxDepth) + "y" + strings.Repeat(")", MaxDepth),
		strings.Repeat("x NEAR/1f (", MaxDepth) + "y" + strings.Repeat(")", MaxDepth),
	} {
		q, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%.40q…): %v", s, err)
		}
		again, err := Parse(q.String())
		if err != nil || again.String() != q.String() {
			t.Fatalf("canonical %.60q… parses to %v, %v", q, again, err)
		}
	}
	if _, err := Parse(strings.Repeat("a NEAR/1 ", MaxAtoms) + "a"); err == nil || !strings.Contains(err.Error(), "more than 100 terms") {
		t.Fatalf("a chain of %d terms: %v", MaxAtoms+1, err)
	}
}

// TestQuery_UUIDOfNear: equal queries written differently share a uuid;
// a NEAR in order is not the same query as its reverse.
func TestQuery_UUIDOfNear(t *testing.T) {
	uuid := func(s string) string {
		q, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		return q.UUID("twitter").String()
	}
	for _, same := range [][2]string{
		{"a NEAR/2 b", "b NEAR/2 a"},
		{"(x OR y) NEAR/1 z", "z  NEAR/1 (Y OR x)"},
		{"a NEAR/2f b c", "c AND (a NEAR/2f b)"},
		{"Kube*", "kube*"},
	} {
		if uuid(same[0]) != uuid(same[1]) {
			t.Errorf("%q and %q have different uuids", same[0], same[1])
		}
	}
	for _, differ := range [][2]string{
		{"a NEAR/2f b", "b NEAR/2f a"},
		{"a NEAR/2 b", "a NEAR/2f b"},
		{"a NEAR/2 b", "a NEAR/3 b"},
		{"a NEAR/2 b", "a b"},
		{"kube*", `"kube*"`},
		{"kube*", "kube"},
	} {
		if uuid(differ[0]) == uuid(differ[1]) {
			t.Errorf("%q and %q share a uuid", differ[0], differ[1])
		}
	}
}

func TestParse_NearAndPrefixErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no distance", "apple NEAR pie", `query: "NEAR" needs a distance (write NEAR/3, or NEAR/3f for the left term first) at column 7`},
		{"distance not a number", "apple NEAR/x pie", `query: bad distance "NEAR/x" (write NEAR/3, or NEAR/3f for the left term first) at column 7`},
		{"empty distance", "apple NEAR/ pie", `query: bad distance "NEAR/" (write NEAR/3, or NEAR/3f for the left term first) at column 7`},
		{"negative distance", "apple NEAR/-1 pie", `query: bad distance "NEAR/-1" (write NEAR/3, or NEAR/3f for the left term first) at column 7`},
		{"order flag in capitals", "apple NEAR/3F pie", `query: bad distance "NEAR/3F" (write NEAR/3, or NEAR/3f for the left term first) at column 7`},
		{"distance too large", "apple NEAR/101 pie", `query: distance of "NEAR/101" too large: at most NEAR/100 at column 7`},
		{"no left operand", "NEAR/2 pie", `query: "NEAR/2" needs a term before it at column 1`},
		{"no left operand after or", "apple OR NEAR/2 pie", `query: "NEAR/2" needs a term before it at column 10`},
		{"no right operand", "apple NEAR/2", `query: "NEAR/2" needs a term after it at column 7`},
		{"no right operand in a group", "(apple NEAR/2) pie", `query: unexpected ")" at column 14`},
		{"negation on the left", "-apple NEAR/2 pie", `query: "NEAR/2" over a negation: negate the whole instead, as in -(a NEAR/2 b) at column 1`},
		{"negation on the right", "apple NEAR/2f NOT pie", `query: "NEAR/2f" over a negation: negate the whole instead, as in -(a NEAR/2f b) at column 15`},
		{"negation in a group", "apple NEAR/2 (pie OR -tart)", `query: "NEAR/2" over a negation: negate the whole instead, as in -(a NEAR/2 b) at column 22`},
		{"and in a group", "apple NEAR/2 (pie tart)", `query: "NEAR/2" over an AND: its terms are words, phrases, #tags, @users, prefixes (kube*) and OR groups of them at column 15`},
		{"author", "apple NEAR/2 from:bob", `query: "NEAR/2" over "from:bob": its terms are words, phrases, #tags, @users, prefixes (kube*) and OR groups of them at column 14`},
		{"language", "lang:en NEAR/2 apple", `query: "NEAR/2" over "lang:en": its terms are words, phrases, #tags, @users, prefixes (kube*) and OR groups of them at column 1`},
		{"no word to count", "apple NEAR/2 ++", `query: "NEAR/2" over "++", which has no word to count at column 14`},
		{"negated near alone", "-(apple NEAR/2 pie)", `query: "-(apple NEAR/2 pie)" cannot match by itself: every OR branch needs a word, phrase, #tag, @user or from: that must occur (negations and lang: only filter)`},
		{"prefix too short", "ku*", `query: prefix "ku*" is shorter than 3 letters at column 1`},
		{"prefix of two letters and a mark", "cá* x", `query: prefix "cá*" is shorter than 3 letters at column 1`},
		{"star inside", "golang ku*be", `query: a wildcard "*" stands only at the end of a word, as in kube* at column 10`},
		{"star first", "*kube", `query: a wildcard "*" stands only at the end of a word, as in kube* at column 1`},
		{"two stars", "kube**", `query: a wildcard "*" stands only at the end of a word, as in kube* at column 5`},
		{"star alone", "golang *", `query: a wildcard "*" stands only at the end of a word, as in kube* at column 8`},
		{"prefix of punctuation", "c++*", `query: a prefix wildcard is one word of letters and digits: "c++*" at column 1`},
		{"prefix of an unspaced script", "学习中*", `query: a prefix wildcard needs a script written with spaces: each character of "学习中" is a word of its own at column 1`},
		{"prefix of a tag", "#kube*", `query: bad hashtag "#kube*" (letters, digits and _ only) at column 1`},
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

// TestQuery_MatchNear checks each proximity operator on texts, with
// words, phrases, tags, prefixes and groups as operands, both orders,
// NEAR/0 and text beyond ASCII.
func TestQuery_MatchNear(t *testing.T) {
	tests := []struct {
		query, text string
		want        bool
	}{
		// At most n words between, either order.
		{"logitech NEAR/2 keyboard", "Logitech keyboard", true},
		{"logitech NEAR/2 keyboard", "logitech solar bluetooth keyboard", true},
		{"logitech NEAR/2 keyboard", "logitech wireless solar bluetooth keyboard", false},
		{"logitech NEAR/2 keyboard", "keyboard by logitech", true},
		{"logitech NEAR/2 keyboard", "keyboard, mouse, pad and logitech", false},
		{"logitech NEAR/2 keyboard", "logitech mouse", false},
		// Punctuation and symbols are not words: they do not count.
		{"logitech NEAR/0 keyboard", "Logitech — «keyboard»!", true},
		// The word rules end a word at an apostrophe: "’s" is a word.
		{"logitech NEAR/0 keyboard", "logitech’s keyboard", false},
		{"logitech NEAR/1 keyboard", "logitech’s keyboard", true},
		// In order.
		{"logitech NEAR/2f keyboard", "logitech bluetooth keyboard", true},
		{"logitech NEAR/2f keyboard", "keyboard by logitech", false},
		{"logitech NEAR/2f keyboard", "keyboard by logitech, a great keyboard", true},
		{"logitech NEAR/0f keyboard", "logitech keyboard", true},
		{"logitech NEAR/0f keyboard", "keyboard logitech", false},
		// Adjacency: NEAR/0 is next to each other, either order.
		{"apple NEAR/0 pie", "pie apple", true},
		{"apple NEAR/0 pie", "apple crumble pie", false},
		// Phrases span their words: the words between count from the
		// phrase's ends.
		{`"new york" NEAR/1 pizza`, "new york style pizza", true},
		{`"new york" NEAR/1 pizza`, "pizza in new york", true},
		{`"new york" NEAR/0 pizza`, "pizza in new york", false},
		{`"new york" NEAR/0f pizza`, "new york pizza", true},
		{`pizza NEAR/0f "new york"`, "new york pizza", false},
		// Overlapping spans meet (Lucene's unordered test), but not in
		// order.
		{`"new york" NEAR/0 york`, "new york", true},
		{`"new york" NEAR/0f york`, "new york", false},
		{`"new york" NEAR/0f york`, "new york york", true},
		// The same word on both sides, as Lucene: without order one
		// occurrence is enough; in order it takes two.
		{"go NEAR/2 go", "go", true},
		{"go NEAR/2f go", "go", false},
		{"go NEAR/2f go", "go on, go", true},
		// Tags and mentions are at their word.
		{"#go NEAR/1 @gopher", "#Go loves @gopher", true},
		{"#go NEAR/1 @gopher", "go loves @gopher", false},
		// Groups: any of their terms, each with its own span.
		{"(apple OR orange) NEAR/2 (smartphone OR phone)", "my orange phone", true},
		{"(apple OR orange) NEAR/2 (smartphone OR phone)", "apple juice on my phone", false},
		{`("new york" OR york) NEAR/0f city`, "new york city", true},
		// Lucene's ordered iterator passes city for "new york city" and
		// misses york city; every pair is weighed here.
		{`("new york city" OR york) NEAR/0f city`, "new york city", true},
		{`(ny OR "new york") NEAR/1 pizza`, "new york x pizza", true},
		// A shorter span of a group must not borrow a longer one's reach.
		{`"p q" NEAR/1 ("x y" OR b)`, "x y q q q b c d p q", false},
		{`"p q" NEAR/1 ("x y" OR b)`, "x y q q q b c p q", true},
		// NEARs inside NEARs weigh the inner match's span.
		{"(christmas NEAR/2 gift) NEAR/2 wife", "a christmas gift for my wife", true},
		{"(christmas NEAR/2 gift) NEAR/2 wife", "christmas gift, not for my lovely wife", false},
		{"(christmas NEAR/2 gift) NEAR/2f wife", "wife: christmas gift", false},
		{"wife NEAR/2f (christmas NEAR/2 gift)", "wife: gift for christmas", true},
		// Prefixes.
		{"kube*", "Kubernetes 1.30 is out", true},
		{"kube*", "#kubectl tips", true},
		{"kube*", "kube", true},
		{"kube*", "minikube", false},
		{"kube*", "k8s", false},
		{"kube* NEAR/1f deploy*", "kubectl deployment", true},
		{"kube* NEAR/1f deploy*", "deployments with kubectl", false},
		// Text beyond ASCII: accented words, Chinese characters (each a
		// word), Cyrillic.
		{"café NEAR/1 crème", "Crème au café", true},
		{"café NEAR/0 crème", "crème brûlée café", false},
		{"café* NEAR/0 paris", "cafés paris", true},
		{"cafe* NEAR/0 paris", "cafe\u0301 paris", false},
		{"学习 NEAR/1 golang", "我学习了golang", true},
		{"学习 NEAR/0f golang", "学习golang", true},
		{"学习 NEAR/0 golang", "学习了一下golang", false},
		{"москв* NEAR/1 новости", "Москва: новости дня", true},
		// Invisible characters are not there.
		{"logitech NEAR/0 keyboard", "logi\u200btech keyboard", true},
	}
	for _, tc := range tests {
		t.Run(tc.query+" on "+tc.text, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if _, got := q.Match(Doc{Text: tc.text}); got != tc.want {
				t.Fatalf("%q on %q = %v, want %v", q, tc.text, got, tc.want)
			}
		})
	}
}

// TestQuery_MatchNearTerms: a query with NEAR reports its positive terms
// that occur, as any query does, and a negated NEAR excludes only near
// pairs.
func TestQuery_MatchNearTerms(t *testing.T) {
	for _, tt := range []struct {
		query, text string
		terms       []string
		ok          bool
	}{
		{"logitech NEAR/2 keyboard", "Logitech keyboard", []string{"keyboard", "logitech"}, true},
		{"(logitech NEAR/2 keyboard) OR mouse", "logitech far far far away keyboard and mouse", []string{"keyboard", "logitech", "mouse"}, true},
		{"kube* OR docker", "Kubernetes", []string{"kube*"}, true},
		{"apple -(apple NEAR/1 pie)", "apple and pie", nil, false},
		{"apple -(apple NEAR/1 pie)", "apple, then a tart, then pie", []string{"apple"}, true},
	} {
		q, err := Parse(tt.query)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.query, err)
		}
		terms, ok := q.Match(Doc{Text: tt.text})
		if ok != tt.ok || !slices.Equal(terms, tt.terms) {
			t.Errorf("%q on %q = %q, %v; want %q, %v", q, tt.text, terms, ok, tt.terms, tt.ok)
		}
	}
}

// TestNear_WorkIsBounded: on a text made of thousands of a query's words
// within reach of each other, nested NEARs stop weighing pairs at the
// bound and read as AND, so one query costs at most that much.
func TestNear_WorkIsBounded(t *testing.T) {
	text := strings.Repeat("a b ", 8000)
	q, err := Parse("((a NEAR/50 b) NEAR/50 (a NEAR/50 b)) NEAR/50 zzz")
	if err != nil {
		t.Fatal(err)
	}
	// zzz never occurs: Eval's reading says no before any position is
	// weighed.
	if _, ok := q.Match(Doc{Text: text}); ok {
		t.Fatal("matched without zzz")
	}
	q, err = Parse("((a NEAR/50 b) NEAR/50 (a NEAR/50 b)) NEAR/50 c")
	if err != nil {
		t.Fatal(err)
	}
	words := newTextWords(Fold(text + " c"))
	var atoms []Atom
	steps := AppendNear(nil, q.Root(), func(a Atom) int32 { atoms = append(atoms, a); return int32(len(atoms) - 1) })
	var e nearEval
	e.holds(steps, func(leaf int32) []int32 { return words.positions(atoms[leaf]) })
	if e.work <= maxNearWork {
		t.Fatalf("the nested NEARs weighed %d pairs on %d words: the text does not reach the bound", e.work, len(words.starts))
	}
	if e.work > 2*maxNearWork {
		t.Fatalf("weighing went on to %d past the bound %d", e.work, maxNearWork)
	}
	if _, ok := q.Match(Doc{Text: text + " c"}); !ok {
		t.Fatal("past the bound the NEARs read as AND, and every operand occurs")
	}
}

func ExampleQuery_Match_near() {
	q, _ := Parse("logitech NEAR/2f keyboard")
	for _, text := range []string{"Logitech Solar Keyboard", "the keyboard by Logitech"} {
		_, ok := q.Match(Doc{Text: text})
		fmt.Println(text, ok)
	}
	// Output:
	// Logitech Solar Keyboard true
	// the keyboard by Logitech false
}

// TestDecideFlat_AgreesWithTheGeneralWeighing: the pair-by-pair decision
// of NEARs of terms and OR groups gives the general weighing's answers, on
// random occurrences of terms of one and two words.
func TestDecideFlat_AgreesWithTheGeneralWeighing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	queries := []string{"a NEAR/0 b", "a NEAR/2f b", `"a x" NEAR/1 (b OR "c y")`, `(a OR "b z") NEAR/3f (c OR d OR "e w")`, "a NEAR/1 a", "a NEAR/0f a"}
	checked, held := 0, 0
	for _, s := range queries {
		q, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		var atoms []Atom
		steps := AppendNear(nil, q.Root(), func(a Atom) int32 { atoms = append(atoms, a); return int32(len(atoms) - 1) })
		for range 2000 {
			positions := map[Atom][]int32{}
			for _, a := range atoms {
				if _, ok := positions[a]; ok {
					continue
				}
				var ps []int32
				for p := int32(0); p < 12; p++ {
					if r.IntN(4) == 0 {
						ps = append(ps, p)
					}
				}
				positions[a] = ps
			}
			starts := func(leaf int32) []int32 { return positions[atoms[leaf]] }
			flat, done := decideFlat(steps, starts)
			if !done {
				continue
			}
			var e nearEval
			if general := e.holds(steps, starts); flat != general {
				t.Fatalf("%s on %v: pair by pair %v, weighed %v", q, positions, flat, general)
			}
			checked++
			if flat {
				held++
			}
		}
	}
	if checked < 5000 || held < 1000 || checked-held < 1000 {
		t.Fatalf("%d decisions checked, %d held: too few of either", checked, held)
	}
}
