package textindex

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// pieces make texts, handles and queries that mix scripts, punctuation,
// spaces of many kinds, marks, ideographs and invisible characters.
var pieces = []string{"go", "golang", "Go", "GOLANG", "java", "x", "_", "2", "3.14", "é", "e\u0301", "\u0301", "ж", "Ж", "学", "习", "东京",
	"ไทย", "カ", "ー", " ", "  ", "\u00a0", ",", "’", "'", "—", "-", "«", "»", "…", "。", "#", "@", ".", "🚀", "\u200b", "\ufe0f", "ß", "ẞ", "ſ", "K", "\u212a"}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// queryPieces build queries of the language at random; many do not
// parse, and are skipped.
var queryPieces = []string{"go", "golang", "java", "x", "2", "é", "ж", "学", "学习", "カー", `"go lang"`, `"学 习"`, `"go, java"`, "#go", "#golang", "@go", "@gopher",
	"from:alice", "from:did:plc:abc", "lang:en", "lang:pt", "lang:pt-br", "OR", "AND", "-", "NOT", "(", ")", " ", " ", " "}

func randomQuery(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(8) {
		b.WriteString(queryPieces[r.IntN(len(queryPieces))])
		b.WriteByte(' ')
	}
	return b.String()
}

var (
	authors   = []string{"", "alice", "@Alice", "ALICE", "gopher.bsky.social", "Ålice", "Straße", "STRASSE", "\u212aelvin", "kelvin"}
	authorIDs = []string{"", "did:plc:abc", "DID:PLC:ABC", "12345"}
	langs     = []string{"", "en", "EN-gb", "pt-BR", "pt", "zh-hant-tw"}
)

// holds reports whether terms hold every term of one conjunction of p.
func holds(p Plan, terms []string) bool {
	for _, conj := range p {
		all := true
		for _, t := range conj {
			if !slices.Contains(terms, t) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// TestPlan_NeverLeavesAMatchOut: whatever the comment and the query, a
// comment the query matches holds the terms of one of the plan's
// conjunctions, so a store that reads only what the index finds misses
// nothing Query.Match would keep.
func TestPlan_NeverLeavesAMatchOut(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 39))
	matched, narrowed := 0, 0
	for range 60_000 {
		q, err := query.Parse(randomQuery(r))
		if err != nil {
			continue
		}
		c := api.Comment{Text: randomText(r, 1+r.IntN(12)), Author: authors[r.IntN(len(authors))],
			AuthorID: authorIDs[r.IntN(len(authorIDs))], Lang: langs[r.IntN(len(langs))]}
		p := PlanOf(q)
		if p != nil {
			narrowed++
		}
		if _, ok := q.Match(query.Doc{Text: c.Text, Author: c.Author, AuthorID: c.AuthorID, Lang: c.Lang}); !ok {
			continue
		}
		matched++
		if p != nil && !holds(p, Terms(&c)) {
			t.Fatalf("query %q matches %+v (terms %q) but the plan %q finds it not", q, c, Terms(&c), p)
		}
	}
	if matched < 500 || narrowed < 5_000 {
		t.Fatalf("only %d matches and %d narrowing plans: the generator tests too little", matched, narrowed)
	}
}

// TestPlan_WordsCutFromTheTextAreFound: a word or phrase cut at random
// from a text, wherever the query language finds it there, is found by the
// index too.
func TestPlan_WordsCutFromTheTextAreFound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	found := 0
	for range 40_000 {
		text := randomText(r, 1+r.IntN(12))
		folded := query.Fold(text)
		i, j := r.IntN(len(folded)+1), r.IntN(len(folded)+1)
		if i >= j || !utf8.ValidString(folded[i:j]) {
			continue
		}
		word := folded[i:j]
		if !query.ContainsWord(folded, word) {
			continue
		}
		ts := atomTerms(query.Atom{Kind: query.Phrase, Value: word})
		if len(ts) == 0 {
			continue
		}
		found++
		c := api.Comment{Text: text}
		if !holds(Plan{ts}, Terms(&c)) {
			t.Fatalf("%q stands whole in %q, but its terms %q are not among the text's %q", word, folded, ts, Terms(&c))
		}
	}
	if found < 500 {
		t.Fatalf("only %d words found: the generator tests too little", found)
	}
}

func TestPlanOf(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want Plan
	}{
		{"golang", Plan{{"golang"}}},
		{`"new york" -#nyc`, Plan{{"york"}}}, // one term a lookup: the longest
		{"golang OR rust", Plan{{"golang"}, {"rust"}}},
		{"(a OR b) (c OR d)", Plan{{"a"}, {"b"}}},
		{"(golang OR rust) (compiler OR go)", Plan{{"compiler"}, {"golang"}, {"rust"}}},
		{"from:Alice lang:en", Plan{{"from:alice"}}},
		{"@gopher.bsky.social", Plan{{"gopher"}}},
		{"golang OR (java -rust)", Plan{{"golang"}, {"java"}}},
		{"a OR b OR c OR d OR e OR f OR g OR h OR i", nil}, // more lookups than a plan makes
		{"NOT (a b) c", Plan{{"c"}}},
		{"golang NEAR/3 compiler", Plan{{"compiler"}}},
		{"kube* NEAR/2 cluster", Plan{{"cluster"}}},
		{"kube*", nil}, // a prefix is no one term
		{"kube* OR cluster", nil},
	} {
		q, err := query.Parse(tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		got := PlanOf(q)
		norm := func(p Plan) []string {
			var out []string
			for _, c := range p {
				c = slices.Clone(c)
				slices.Sort(c)
				out = append(out, strings.Join(c, "+"))
			}
			slices.Sort(out)
			return out
		}
		if !slices.Equal(norm(got), norm(tc.want)) {
			t.Errorf("PlanOf(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestTerms(t *testing.T) {
	c := api.Comment{Text: "Golang’s «new» release — 学习golang!", Author: "@Gopher", AuthorID: "did:plc:X", Lang: "pt-BR"}
	want := []string{"golang", "s", "new", "release", "学", "习", "from:gopher", "from:did:plc:x", "lang:pt-br", "lang:pt"}
	if got := Terms(&c); !slices.Equal(got, want) {
		t.Fatalf("Terms = %q, want %q", got, want)
	}
	long := strings.Repeat("ж", 200)
	got := Terms(&api.Comment{Text: long})
	if len(got) != 1 || len(got[0]) > MaxTermBytes || !utf8.ValidString(got[0]) || got[0] != Term(long) || Term(long) == Term(long+"ж") {
		t.Fatalf("a long word: %q", got)
	}
}

func TestAuthorKey_IsEqualFold(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for range 50_000 {
		a, b := randomText(r, 1+r.IntN(3)), randomText(r, 1+r.IntN(3))
		if r.IntN(2) == 0 {
			b = strings.ToUpper(a)
		}
		if eq, same := strings.EqualFold(a, b), AuthorKey(a) == AuthorKey(b); eq != same && len(AuthorKey(a)) < MaxTermBytes {
			t.Fatalf("EqualFold(%q, %q) = %v but keys %q and %q", a, b, eq, AuthorKey(a), AuthorKey(b))
		}
	}
}
