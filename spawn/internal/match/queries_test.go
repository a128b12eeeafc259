package match

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

func parseAll(t testing.TB, subs map[int64]string) map[int64]*query.Query {
	t.Helper()
	out := make(map[int64]*query.Query, len(subs))
	for id, s := range subs {
		q, err := query.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		out[id] = q
	}
	return out
}

func queryHitMap(hits []QueryHit) map[int64][]string {
	out := make(map[int64][]string, len(hits))
	for _, h := range hits {
		out[h.Subscriber] = h.Terms
	}
	return out
}

func TestQueryIndex_Match(t *testing.T) {
	tests := []struct {
		name string
		subs map[int64]string
		item Item
		want map[int64][]string
	}{
		{
			name: "or and and",
			subs: map[int64]string{1: "golang OR rust", 2: "golang rust", 3: "golang zig"},
			item: Item{Text: "Golang and Rust"},
			want: map[int64][]string{1: {"golang", "rust"}, 2: {"golang", "rust"}},
		},
		{
			name: "negation excludes",
			subs: map[int64]string{1: "golang -java", 2: "golang -rust"},
			item: Item{Text: "golang and rust"},
			want: map[int64][]string{1: {"golang"}},
		},
		{
			name: "negated text atoms are found though they trigger nobody",
			subs: map[int64]string{1: "go -(rust OR zig)"},
			item: Item{Text: "go, zig"},
			want: map[int64][]string{},
		},
		{
			name: "hashtag rule",
			subs: map[int64]string{1: "#go", 2: "go", 3: "#golang"},
			item: Item{Text: "#go is not go#lang"},
			want: map[int64][]string{1: {"#go"}, 2: {"go"}},
		},
		{
			name: "tag does not match the bare word",
			subs: map[int64]string{1: "#go", 2: "go"},
			item: Item{Text: "let's go"},
			want: map[int64][]string{2: {"go"}},
		},
		{
			name: "mention is text, from is the author",
			subs: map[int64]string{1: "@alice", 2: "from:alice", 3: "from:bob"},
			item: Item{Text: "thanks @Alice", Author: "@Bob"},
			want: map[int64][]string{1: {"@alice"}, 3: {"from:bob"}},
		},
		{
			name: "from matches the handle or the account id",
			subs: map[int64]string{1: "from:alice.bsky.social", 2: "from:did:plc:abc123", 3: "from:bob", 4: "from:did:plc:abc123 OR from:alice.bsky.social"},
			item: Item{Text: "hello", Author: "alice.bsky.social", AuthorID: "did:plc:ABC123"},
			want: map[int64][]string{1: {"from:alice.bsky.social"}, 2: {"from:did:plc:abc123"}, 4: {"from:alice.bsky.social", "from:did:plc:abc123"}},
		},
		{
			name: "lang filters",
			subs: map[int64]string{1: "golang lang:en", 2: "golang lang:fr", 3: "golang lang:en-gb", 4: "golang -lang:en"},
			item: Item{Text: "golang", Lang: "en-GB"},
			want: map[int64][]string{1: {"golang"}, 3: {"golang"}},
		},
		{
			name: "phrase is whole and in a row",
			subs: map[int64]string{1: `"new york"`, 2: "new york", 3: `"york new"`},
			item: Item{Text: "New York, newer york"},
			want: map[int64][]string{1: {`"new york"`}, 2: {"new", "york"}},
		},
		{
			name: "from with text",
			subs: map[int64]string{1: "from:alice (golang OR rust)", 2: "from:alice OR golang"},
			item: Item{Text: "rust!", Author: "alice"},
			want: map[int64][]string{1: {"from:alice", "rust"}, 2: {"from:alice"}},
		},
		{
			name: "a tag and a phrase of the same text",
			subs: map[int64]string{1: `#go "#go"`, 2: `"#go" OR zig`, 3: `#go -"#go"`},
			item: Item{Text: "#go zig"},
			want: map[int64][]string{1: {`"#go"`, "#go"}, 2: {`"#go"`, "zig"}},
		},
		{
			name: "large queries are evaluated as trees",
			subs: map[int64]string{1: "a OR b OR c OR d OR e", 2: "(a b) OR (c -d) OR from:x", 3: "a b c d -e", 4: "a b c d e"},
			item: Item{Text: "a, b, c and d", Author: "X"},
			want: map[int64][]string{1: {"a", "b", "c", "d"}, 2: {"c", "a", "b", "from:x"}, 3: {"a", "b", "c", "d"}},
		},
		{
			name: "lang prefixes",
			subs: map[int64]string{1: "a lang:pt", 2: "a lang:pt-br", 3: "a lang:pt-br-x", 4: "a lang:br"},
			item: Item{Text: "a", Lang: "PT-BR"},
			want: map[int64][]string{1: {"a"}, 2: {"a"}},
		},
		{
			name: "near either order, near in order",
			subs: map[int64]string{1: "logitech NEAR/2 keyboard", 2: "logitech NEAR/2f keyboard", 3: "keyboard NEAR/2f logitech", 4: "logitech NEAR/0 keyboard"},
			item: Item{Text: "The keyboard, by Logitech"},
			want: map[int64][]string{1: {"keyboard", "logitech"}, 3: {"keyboard", "logitech"}},
		},
		{
			name: "near with phrases, tags and groups",
			subs: map[int64]string{1: `"new york" NEAR/1 pizza`, 2: `(#ny OR "new york") NEAR/0f style`, 3: "(pizza OR bagel) NEAR/0 #ny", 4: `pizza NEAR/0f "new york"`},
			item: Item{Text: "New York style pizza #NY"},
			want: map[int64][]string{1: {`"new york"`, "pizza"}, 2: {`"new york"`, "#ny", "style"}, 3: {"pizza", "#ny"}},
		},
		{
			name: "near inside near and beside other terms",
			subs: map[int64]string{1: "(christmas NEAR/2 gift) NEAR/2 wife", 2: "(christmas NEAR/0 gift) wife", 3: "gift -(christmas NEAR/1 gift)", 4: "wife OR (christmas NEAR/0f gift) OR from:bob"},
			item: Item{Text: "a christmas gift for my wife", Author: "bob"},
			want: map[int64][]string{1: {"christmas", "gift", "wife"}, 2: {"christmas", "gift", "wife"}, 4: {"christmas", "gift", "from:bob", "wife"}},
		},
		{
			name: "prefixes",
			subs: map[int64]string{1: "kube*", 2: "kube* -mini*", 3: "kubernetes OR dock*", 4: "kub* NEAR/0f deploy*", 5: "cafe*"},
			item: Item{Text: "Kubectl deployments on minikube, café"},
			want: map[int64][]string{1: {"kube*"}, 4: {"kub*", "deploy*"}},
		},
		{
			name: "near beyond ASCII",
			subs: map[int64]string{1: "学习 NEAR/1 golang", 2: "学习 NEAR/0 golang", 3: "café NEAR/1 crème", 4: "москв* NEAR/0f новости"},
			item: Item{Text: "我学习了golang, crème au café, Москва новости"},
			want: map[int64][]string{1: {"golang", "学习"}, 3: {"café", "crème"}, 4: {"москв*", "новости"}},
		},
		{
			name: "nil queries are left out",
			subs: map[int64]string{1: "golang"},
			item: Item{Text: "golang"},
			want: map[int64][]string{1: {"golang"}},
		},
		{
			name: "no candidates",
			subs: map[int64]string{1: "golang"},
			item: Item{Text: "nothing", Author: "golang"},
			want: map[int64][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs := parseAll(t, tt.subs)
			qs[99] = nil
			ix := NewQueries(qs)
			if ix.Len() != len(tt.subs) {
				t.Fatalf("Len = %d, want %d", ix.Len(), len(tt.subs))
			}
			got := queryHitMap(ix.Match(tt.item))
			if !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("Match(%+v) = %v, want %v", tt.item, got, tt.want)
			}
			for id, q := range qs {
				if q == nil {
					continue
				}
				terms, ok := MatchQuery(q, tt.item)
				if want, wantOK := tt.want[id]; ok != wantOK || !slices.Equal(terms, want) {
					t.Fatalf("MatchQuery(%q) = %q, %v, want %q, %v", q, terms, ok, want, wantOK)
				}
			}
		})
	}
}

func TestQueryIndex_UpdateReusesThePatternSet(t *testing.T) {
	ix := NewQueries(parseAll(t, map[int64]string{1: "golang OR rust", 2: "zig -java"}))
	up := ix.Update(parseAll(t, map[int64]string{3: "rust -java", 4: "zig OR golang"}))
	if up.auto != ix.auto {
		t.Fatal("pattern set compiled again for known atoms")
	}
	if got := queryHitMap(up.Match(Item{Text: "zig and rust"})); !maps.EqualFunc(got, map[int64][]string{3: {"rust"}, 4: {"zig"}}, slices.Equal) {
		t.Fatalf("updated index matched %v", got)
	}
	if up2 := up.Update(parseAll(t, map[int64]string{5: "kotlin"})); up2.auto == ix.auto {
		t.Fatal("pattern set reused without the new atom")
	}
}

// naiveEval is the reference semantics, written independently of the
// index: a recursive walk that looks each atom up in the item with
// naiveContains, and decides a NEAR by weighing every pair of its
// operands' spans (naiveNear).
func naiveEval(n *query.Node, it Item) bool {
	switch n.Op {
	case query.OpNear:
		return naiveNear(n, memoFold(it.Text))
	case query.OpNot:
		return !naiveEval(n.Kids[0], it)
	case query.OpAnd:
		for _, k := range n.Kids {
			if !naiveEval(k, it) {
				return false
			}
		}
		return true
	case query.OpOr:
		for _, k := range n.Kids {
			if naiveEval(k, it) {
				return true
			}
		}
		return false
	}
	a := n.Atom
	switch a.Kind {
	case query.From:
		return strings.EqualFold(strings.TrimPrefix(it.Author, "@"), a.Value)
	case query.Lang:
		lang := strings.ToLower(it.Lang)
		return lang == a.Value || strings.HasPrefix(lang, a.Value+"-")
	case query.Tag:
		return memoContains(it.Text, "#"+a.Value)
	case query.Mention:
		return memoContains(it.Text, "@"+a.Value)
	case query.Prefix:
		return len(naivePositions(a, memoFold(it.Text))) > 0
	case query.Field:
		name, value, _ := strings.Cut(a.Value, ":")
		v, ok := it.Fields[name]
		return ok && strings.EqualFold(v, value)
	}
	return memoContains(it.Text, a.Value)
}

// propFields are the field names random queries may use (subreddit:golang).
var propFields = []string{"subreddit"}

// propVocab is small, so that random queries and texts share atoms.
var propVocab = []string{"go", "golang", "rust", "new", "york", "café", "c++", "x", "学习", "学", "ไทย", "java’s", "gopher", "rustacean", "cafe\u0301"}

// propPrefixes start words of propVocab, and some of none.
var propPrefixes = []string{"gol", "gop", "rus", "rust", "caf", "café", "yor", "new", "xyz", "jav"}

// randomNearOperand writes an operand of a NEAR: a word, phrase, #tag,
// @user or prefix, an OR group of them, or a NEAR.
func randomNearOperand(r *rand.Rand, depth int) string {
	if depth > 0 {
		switch r.IntN(4) {
		case 0:
			return "(" + randomNearOperand(r, depth-1) + " OR " + randomNearOperand(r, depth-1) + ")"
		case 1:
			return "(" + randomNear(r, depth-1) + ")"
		}
	}
	w := propVocab[r.IntN(len(propVocab))]
	switch r.IntN(7) {
	case 0:
		return "#" + strings.TrimSuffix(w, "++")
	case 1:
		return "@" + strings.TrimSuffix(w, "++")
	case 2:
		return `"` + w + " " + propVocab[r.IntN(len(propVocab))] + `"`
	case 3:
		return propPrefixes[r.IntN(len(propPrefixes))] + "*"
	}
	return w
}

// randomNear writes a NEAR of small distance, in order or not.
func randomNear(r *rand.Rand, depth int) string {
	op := fmt.Sprintf(" NEAR/%d", r.IntN(4))
	if r.IntN(2) == 0 {
		op += "f"
	}
	return randomNearOperand(r, depth) + op + " " + randomNearOperand(r, depth)
}

func randomQuery(r *rand.Rand, depth int) string {
	if depth == 0 || r.IntN(3) == 0 {
		w := propVocab[r.IntN(len(propVocab))]
		switch r.IntN(13) {
		case 10, 11:
			return "(" + randomNear(r, min(depth, 2)) + ")"
		case 12:
			return propPrefixes[r.IntN(len(propPrefixes))] + "*"
		case 0:
			return "#" + strings.TrimSuffix(w, "++")
		case 1:
			return "@" + strings.TrimSuffix(w, "++")
		case 2:
			return `"` + w + " " + propVocab[r.IntN(len(propVocab))] + `"`
		case 3:
			return "from:" + []string{"alice", "bob"}[r.IntN(2)]
		case 4:
			return "lang:" + []string{"en", "fr", "en-gb"}[r.IntN(3)]
		case 5:
			return "subreddit:" + []string{"golang", "rust"}[r.IntN(2)]
		}
		return w
	}
	switch r.IntN(5) {
	case 0:
		return "-" + randomQuery(r, depth-1)
	case 1:
		return "NOT (" + randomQuery(r, depth-1) + ")"
	case 2:
		return "(" + randomQuery(r, depth-1) + " OR " + randomQuery(r, depth-1) + ")"
	}
	return "(" + randomQuery(r, depth-1) + " " + randomQuery(r, depth-1) + ")"
}

func randomItem(r *rand.Rand) Item {
	seps := []string{" ", " ", ", ", "#", "@", "_", "é", "! ", "’", "—", "\u00a0", "«", "» ", "…", "。", "学", "\u0301", "\u200b", "🚀", "ж", "2"}
	var b strings.Builder
	for i := r.IntN(8); i >= 0; i-- {
		w := propVocab[r.IntN(len(propVocab))]
		if r.IntN(4) == 0 {
			w = strings.ToUpper(w)
		}
		b.WriteString(w)
		b.WriteString(seps[r.IntN(len(seps))])
	}
	return Item{
		Text:   b.String(),
		Author: []string{"", "alice", "@Bob", "carol"}[r.IntN(4)],
		Lang:   []string{"", "en", "EN-GB", "fr"}[r.IntN(4)],
		Fields: []map[string]string{nil, {"subreddit": "GoLang"}, {"subreddit": "rust"}, {"flair": "golang"}}[r.IntN(4)],
	}
}

// TestQueryIndex_AgreesWithNaiveEvaluation indexes random queries and
// checks on random items that the index reports exactly the subscribers
// the naive evaluator says match, with the positive terms that occur.
func TestQueryIndex_AgreesWithNaiveEvaluation(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	matched, nearMatched, placed := 0, 0, 0
	for round := range 40 {
		qs := map[int64]*query.Query{}
		for id := int64(0); len(qs) < 50; id++ {
			if q, err := query.ParseFields([]string{randomQuery(r, 1+round%5)}, propFields); err == nil {
				qs[id] = q
			}
		}
		ix := NewQueries(qs)
		var buf []QueryHit
		for range 200 {
			it := randomItem(r)
			buf = ix.AppendMatch(buf[:0], it)
			got := queryHitMap(buf)
			if len(got) != len(buf) {
				t.Fatalf("a subscriber reported twice: %v", buf)
			}
			for id, q := range qs {
				want := naiveEval(q.Root(), it)
				terms, ok := got[id]
				if ok != want {
					t.Fatalf("query %q on %+v: index %v, naive %v", q, it, ok, want)
				}
				if hasNear(q.Root()) {
					// Where the words' places decided: the query with
					// each NEAR read as AND says otherwise.
					if q.Eval(func(a query.Atom) bool { return naiveEval(&query.Node{Op: query.OpAtom, Atom: a}, it) }) != want {
						placed++
					}
					if want {
						nearMatched++
					}
				}
				if !ok {
					if _, one := MatchQuery(q, it); one {
						t.Fatalf("MatchQuery(%q, %+v) matches; the index and the naive evaluator do not", q, it)
					}
					continue
				}
				matched++
				var wantTerms []string
				for _, a := range positiveAtoms(q) {
					if naiveEval(&query.Node{Op: query.OpAtom, Atom: a}, it) {
						wantTerms = append(wantTerms, a.String())
					}
				}
				if !slices.Equal(terms, wantTerms) {
					t.Fatalf("query %q on %+v: terms %q, want %q", q, it, terms, wantTerms)
				}
				if one, ok := MatchQuery(q, it); !ok || !slices.Equal(one, terms) {
					t.Fatalf("MatchQuery(%q, %+v) = %q, %v; index says %q", q, it, one, ok, terms)
				}
			}
		}
	}
	if matched < 1000 || nearMatched < 300 || placed < 300 {
		t.Fatalf("only %d matches checked, %d of queries with NEAR, %d decided by the words' places: the random workload is too sparse", matched, nearMatched, placed)
	}
	t.Logf("%d matches checked, %d of queries with NEAR; the places of words decided %d times", matched, nearMatched, placed)
}

// FuzzQueryIndex checks the index against the naive evaluator on queries
// (separated by '|') dealt to subscribers and a text.
func FuzzQueryIndex(f *testing.F) {
	f.Add("Golang and #Rust, @alice", "golang -rust|#rust OR x|@alice lang:en|from:bob")
	f.Add("new york café", `"new york" -café|café|"york café" OR c++`)
	f.Add("#go go #Go", `#go "#go"|"#go" -go|a OR b OR c OR d OR #go`)
	f.Add("Logitech solar keyboard, keyboard by logitech", "logitech NEAR/1f keyboard|keyboard NEAR/0 logitech|(logitech OR mouse) NEAR/2 (#keyboard OR keyboard*)")
	f.Add("new york style pizza in new york", `"new york" NEAR/1 pizza|("new york" OR york) NEAR/0f style|(new NEAR/0 york) NEAR/2f pizza`)
	f.Add("Kubernetes kubectl minikube 学习golang café crème", "kube* -mini*|kube* NEAR/0f kubectl|学习 NEAR/0 golang|caf* NEAR/1 crème")
	f.Fuzz(func(t *testing.T, text, queries string) {
		qs := map[int64]*query.Query{}
		for i, s := range strings.Split(queries, "|") {
			if q, err := query.ParseFields([]string{s}, propFields); err == nil {
				qs[int64(i)] = q
			}
		}
		it := Item{Text: text, Author: "bob", Lang: "en", Fields: map[string]string{"subreddit": "GoLang"}}
		got := queryHitMap(NewQueries(qs).Match(it))
		for id, q := range qs {
			if _, ok := got[id]; ok != naiveEval(q.Root(), it) {
				t.Fatalf("query %q on %q: index %v", q, text, ok)
			}
		}
	})
}

// TestQueryIndex_StampsWrapAround matches with stamps about to run out,
// which start again from zero without stale stamps counting.
func TestQueryIndex_StampsWrapAround(t *testing.T) {
	ix := NewQueries(parseAll(t, map[int64]string{1: "golang -rust", 2: "rust lang:en", 3: "from:alice OR zig"}))
	s := ix.getScratch()
	items := []Item{
		{Text: "golang and rust", Lang: "en-GB", Author: "alice"},
		{Text: "golang", Lang: "fr"},
		{Text: "rust zig", Lang: "en"},
	}
	for round := range 3 {
		for i, it := range items {
			if i == 1 {
				s.tick = math.MaxUint32 - 3
			}
			got := queryHitMap(ix.appendMatch(s, nil, it))
			want := queryHitMap(NewQueries(parseAll(t, map[int64]string{1: "golang -rust", 2: "rust lang:en", 3: "from:alice OR zig"})).Match(it))
			if !maps.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("round %d, %+v: got %v, want %v", round, it, got, want)
			}
		}
	}
}

// TestQueryIndex_ShortTokensAndPrefixes: a token shorter than every
// prefix is weighed with bytes past its end, which never make it match.
func TestQueryIndex_ShortTokensAndPrefixes(t *testing.T) {
	ix := NewQueries(parseAll(t, map[int64]string{1: "rust*", 2: "gola*", 3: "caf*"}))
	for text, want := range map[string][]int64{
		"ru":          nil,
		"rus":         nil,
		"ru st rus,t": nil,
		"go la gol a": nil,
		"ca fé c afé": nil,
		"rust":        {1},
		"rustacean":   {1},
		"a golang":    {2},
		"café":        {3},
		"r rusty ca":  {1},
	} {
		var got []int64
		for _, h := range ix.Match(Item{Text: text}) {
			got = append(got, h.Subscriber)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", text, got, want)
		}
	}
}
