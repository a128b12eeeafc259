package query

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/streamserver"
)

func mustParse(t testing.TB, s string) *Query {
	t.Helper()
	q, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return q
}

func TestTrackTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"golang", []string{"golang"}},
		{"golang,new release", []string{"golang", "new release"}},
		{"a OR b c", []string{"a", "b c"}},
		{"golang -java lang:en", []string{"golang"}},
		{`"new york" #nyc @mayor`, []string{"#nyc @mayor new york"}},
		{"(a OR b) (c OR d)", []string{"a c", "a d", "b c", "b d"}},
		{"a OR a b", []string{"a"}},
		{"go from:alice", []string{"go"}},
		{`"hello, world"`, []string{"hello world"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := TrackTerms(mustParse(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	for _, in := range []string{"from:alice", "golang OR from:alice", strings.Repeat("x", 61)} {
		if got, err := TrackTerms(mustParse(t, in)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("TrackTerms(%q) = %q, %v, want ErrUnsupported", in, got, err)
		}
	}
}

func TestTrackTerms_FitTheLimits(t *testing.T) {
	words := make([]string, 30)
	for i := range words {
		words[i] = strings.Repeat(string(rune('a'+i%26)), 5+i%3) + "x"
	}
	got, err := TrackTerms(mustParse(t, strings.Join(words, " ")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) > trackMaxTermBytes {
		t.Fatalf("got %q, want one term of at most %d bytes", got, trackMaxTermBytes)
	}
	// Five groups of five: 3,125 conjunctions, more than track takes; the
	// cover stays within the limit by leaving some groups out.
	var b strings.Builder
	for g := range 5 {
		b.WriteString("(")
		for i := range 5 {
			if i > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString(string(rune('a'+g)) + string(rune('a'+i)))
		}
		b.WriteString(") ")
	}
	got, err = TrackTerms(mustParse(t, b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > trackMaxTerms {
		t.Fatalf("%d terms, at most %d", len(got), trackMaxTerms)
	}
}

func TestCSDL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"golang", `interaction.content contains "golang"`},
		{"rust OR golang", `interaction.content contains "golang" or interaction.content contains "rust"`},
		{`go "new york" -nyc`, `interaction.content contains "new york"`},
		{`#go OR @alice`, `interaction.content contains "#go" or interaction.content contains "@alice"`},
		{`back\slash`, `interaction.content contains "back\\slash"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := CSDL(mustParse(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			// The local stream server accepts it.
			if _, err := streamserver.ParseCSDL(got); err != nil {
				t.Fatalf("stream server refuses %s: %v", got, err)
			}
		})
	}
	if _, err := CSDL(mustParse(t, "from:alice OR go")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("from: alone: got %v, want ErrUnsupported", err)
	}
}

func TestXRule(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"golang", "golang"},
		{"a OR b c", "a OR b c"},
		{"(a OR b) c", "(a OR b) c"},
		{`"New York" -#nyc lang:EN`, `"new york" -#nyc lang:en`},
		{"x -(a OR b)", "-a -b x"},
		{"x -(a b)", "(-a OR -b) x"},
		{"c++ from:alice", `"c++" from:alice`},
		{"from:alice", "from:alice"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := XRule(mustParse(t, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	var long []string
	for i := range MaxAtoms {
		long = append(long, fmt.Sprintf("word%d", i))
	}
	for _, in := range []string{"@alice.bsky.social", strings.Join(long, " ")} {
		if _, err := XRule(mustParse(t, in)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("XRule(%q): got %v, want ErrUnsupported", in, err)
		}
	}
}

// randomQuery writes a random query over a small vocabulary, so that atoms
// repeat and random texts hit them.
func randomQuery(r *rand.Rand, depth int) string {
	vocab := []string{"go", "rust", "new", "york", "#go", "@bob", `"new york"`, "from:bob", "lang:en", "c++"}
	if depth == 0 || r.IntN(3) == 0 {
		return vocab[r.IntN(len(vocab))]
	}
	switch r.IntN(4) {
	case 0:
		return "-" + randomQuery(r, depth-1)
	case 1:
		return "(" + randomQuery(r, depth-1) + " OR " + randomQuery(r, depth-1) + ")"
	case 2:
		return randomQuery(r, depth-1) + "," + randomQuery(r, depth-1)
	}
	return "(" + randomQuery(r, depth-1) + " " + randomQuery(r, depth-1) + ")"
}

// randomText writes a text from words near the vocabulary's.
func randomText(r *rand.Rand) string {
	words := []string{"go", "Go", "#go", "golang", "rust", "new", "York", "new york", "c++", "@bob", "bob", "x", "#gopher"}
	seps := []string{" ", ", ", "! ", "_", "-"}
	var b strings.Builder
	for i := r.IntN(6); i >= 0; i-- {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteString(seps[r.IntN(len(seps))])
	}
	return b.String()
}

// TestCompilers_Cover checks that every text a query matches contains one
// of its track terms (all of their words) and one of its CSDL phrases.
func TestCompilers_Cover(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	checked := 0
	for range 3000 {
		q, err := Parse(randomQuery(r, 4))
		if err != nil {
			continue
		}
		terms, terr := TrackTerms(q)
		def, cerr := CSDL(q)
		var phrases [][]string
		if cerr == nil {
			if phrases, err = streamserver.ParseCSDL(def); err != nil {
				t.Fatalf("stream server refuses %s: %v", def, err)
			}
		}
		for range 20 {
			text := randomText(r)
			lower := strings.ToLower(text)
			author, lang := []string{"bob", "alice"}[r.IntN(2)], []string{"en", "fr"}[r.IntN(2)]
			if !q.Eval(func(a Atom) bool {
				switch a.Kind {
				case From:
					return a.Value == author
				case Lang:
					return a.Value == lang
				}
				return ContainsWord(lower, a.Text())
			}) {
				continue
			}
			checked++
			if terr == nil && !slices.ContainsFunc(terms, func(term string) bool {
				for _, w := range strings.Fields(term) {
					if !ContainsWord(lower, w) {
						return false
					}
				}
				return true
			}) {
				t.Fatalf("%q matches %q but none of its track terms %q", q, text, terms)
			}
			if cerr == nil && !slices.ContainsFunc(phrases, func(p []string) bool { return ContainsWord(lower, strings.Join(p, " ")) }) {
				t.Fatalf("%q matches %q but none of its CSDL phrases %s", q, text, def)
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d matching texts checked", checked)
	}
}
