package terms

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func texts(ts []Term) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Text
	}
	return out
}

func TestTerms(t *testing.T) {
	tests := []struct {
		name, text, lang string
		want             []string
	}{
		{"hashtags mentions words and phrases", "Go 1.23 is out! #GoLang @gopher Release notes",
			"", []string{"#golang", "@gopher", "release", "release notes", "notes"}},
		{"stop-words break phrases", "the price of bitcoin rises", "", []string{"price", "bitcoin", "bitcoin rises", "rises"}},
		{"punctuation breaks phrases", "bitcoin, rises", "", []string{"bitcoin", "rises"}},
		{"a term counts once", "bitcoin bitcoin #btc #btc", "", []string{"bitcoin", "bitcoin bitcoin", "#btc"}},
		{"urls are skipped", "visit https://example.com/golang/news now golang", "", []string{"visit", "golang"}},
		{"numbers and short words are not terms", "2024 42 ok go crypto", "", []string{"crypto"}},
		{"per-language stop-words", "la casa de papel", "es", []string{"casa", "papel"}},
		{"per-language stop-words by region", "isso não tem preço", "pt-BR", []string{"preço"}},
		{"common English words are no trends", "many people talk well and long", "", []string{"people", "people talk", "talk"}},
		{"words keep non-ASCII letters", "Café Müller öffnet", "de", []string{"café", "café müller", "müller", "müller öffnet", "öffnet"}},
		{"apostrophes split as the query's word rule does", "don't panic", "", []string{"panic"}},
		{"empty", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := texts(Terms(tt.text, tt.lang))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestTerms_Bounded(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "#tag%d word%c%c ", i, 'a'+i%26, 'a'+i/26%26)
	}
	if got := Terms(b.String(), ""); len(got) != maxTermsPerComment {
		t.Fatalf("%d terms, want the bound %d", len(got), maxTermsPerComment)
	}
	long := strings.Repeat("é", maxTextBytes) // two bytes a rune: the cut falls inside one
	for _, term := range Terms(long+" tail", "") {
		if strings.ContainsRune(term.Text, '\uFFFD') || strings.Contains(term.Text, "tail") {
			t.Fatalf("term %q: the text was not cut on a rune boundary", term.Text)
		}
	}
}

func TestEngagement(t *testing.T) {
	tests := []struct {
		reposts, likes int64
		known          bool
		want           float64
	}{
		{0, 0, false, 0.5},
		{0, 0, true, 0},
		{1, 5, true, 10 / (10 + 10*math.Exp(-0.1))},
		{100, 0, true, 500 / (500 + 10*math.Exp(-5))},
	}
	for _, tt := range tests {
		if got := Engagement(tt.reposts, tt.likes, tt.known); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Engagement(%d, %d, %v) = %v, want %v", tt.reposts, tt.likes, tt.known, got, tt.want)
		}
	}
	if a, b := Engagement(0, 10, true), Engagement(0, 11, true); !(a < b && b < 1) {
		t.Errorf("engagement must rise and stay below 1: %v, %v", a, b)
	}
}

func TestBuilder(t *testing.T) {
	at := time.Date(2025, 3, 1, 10, 59, 30, 0, time.UTC)
	b := NewBuilder()
	comments := []api.Comment{
		{Author: "ann", Text: "#golang generics landed", FetchedAt: at, Matched: []string{"generics"}},
		{Author: "bob", Text: "#golang release notes", FetchedAt: at.Add(10 * time.Second), Matched: []string{`"release notes"`}},
		{Author: "ann", Text: "#rust release", FetchedAt: at.Add(40 * time.Second)},
	}
	for i := range comments {
		b.Add(&comments[i], at)
	}
	a := b.Build()
	if len(a.Minutes) != 2 || a.Minutes[0].Comments != 2 || a.Minutes[1].Comments != 1 {
		t.Fatalf("minutes = %+v", a.Minutes)
	}
	var sk hyperloglog.Sketch
	if err := sk.UnmarshalBinary(a.Minutes[0].Authors); err != nil || sk.Estimate() != 2 {
		t.Fatalf("authors of the first minute: %v, estimate %d", err, sk.Estimate())
	}
	if len(a.Terms) != 2 || a.Terms[0].At != at.Truncate(time.Hour) {
		t.Fatalf("hours = %+v", a.Terms)
	}
	if got := a.Terms[0].Terms[0]; got != (api.TermCount{Term: "#golang", Count: 2}) {
		t.Fatalf("top term %+v", got)
	}
	var cands []string
	for _, c := range a.Candidates {
		cands = append(cands, c.Term)
	}
	// #golang twice (1.0) first; "generics landed" and "release notes"
	// contain a term their comment matched; "#rust" is in the next hour
	// but candidates do not care.
	if want := []string{"#golang", "#rust"}; !slices.Equal(cands, want) {
		t.Fatalf("candidates = %v, want %v", cands, want)
	}
	if a.Candidates[0].Score != 1 || a.Candidates[0].Count != 2 {
		t.Fatalf("candidate %+v, want score 1 (two unknown-engagement sightings)", a.Candidates[0])
	}
	if NewBuilder().Build() != nil {
		t.Fatal("an empty builder must build nil")
	}
}

func TestBuilder_TopTermsAndOther(t *testing.T) {
	b := NewBuilder()
	at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	total := int64(0)
	for i := range 200 {
		c := api.Comment{Text: fmt.Sprintf("#t%d #common", i), FetchedAt: at}
		total += int64(len(Terms(c.Text, "")))
		b.Add(&c, at)
	}
	a := b.Build()
	h := a.Terms[0]
	if len(h.Terms) != TopTermsPerIncrement {
		t.Fatalf("%d terms, want %d", len(h.Terms), TopTermsPerIncrement)
	}
	if h.Terms[0] != (api.TermCount{Term: "#common", Count: 200}) {
		t.Fatalf("top %+v", h.Terms[0])
	}
	sum := h.Other
	for _, tc := range h.Terms {
		sum += tc.Count
	}
	if sum != total {
		t.Fatalf("terms plus other = %d, want every occurrence %d", sum, total)
	}
	if len(a.Candidates) != CandidatesPerIncrement {
		t.Fatalf("%d candidates, want %d", len(a.Candidates), CandidatesPerIncrement)
	}
}

// TestBuilder_EngagementRanksCandidates scores each sighting of a candidate
// by its comment's reposts and likes: a hashtag in one widely shared post
// outranks one that many unshared posts carry, and a source without
// counts scores each sighting 0.5.
func TestBuilder_EngagementRanksCandidates(t *testing.T) {
	at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	viral := &api.Engagement{Reposts: 40, Likes: 120}
	some := &api.Engagement{Reposts: 1, Likes: 3}
	none := &api.Engagement{}
	tests := []struct {
		name     string
		comments []api.Comment
		want     []api.Suggestion // best first
	}{
		{"a shared post outranks many unshared ones", []api.Comment{
			{Text: "#everyday chatter", Engagement: none},
			{Text: "#everyday chatter", Engagement: none},
			{Text: "#everyday chatter", Engagement: none},
			{Text: "#everyday chatter", Engagement: none},
			{Text: "#everyday chatter", Engagement: none},
			{Text: "#breaking", Engagement: viral},
			{Text: "#breaking", Engagement: some},
		}, []api.Suggestion{
			{Term: "#breaking", Score: Engagement(40, 120, true) + Engagement(1, 3, true), Count: 2},
			{Term: "#everyday", Score: 0, Count: 5},
		}},
		{"one viral post outranks frequent posts of unknown engagement", []api.Comment{
			{Text: "#weekly"}, {Text: "#weekly"}, {Text: "#weekly"},
			{Text: "#launch", Engagement: viral},
			{Text: "#launch", Engagement: viral},
		}, []api.Suggestion{
			{Term: "#launch", Score: 2 * Engagement(40, 120, true), Count: 2},
			{Term: "#weekly", Score: 1.5, Count: 3},
		}},
		{"without counts frequency decides", []api.Comment{
			{Text: "#rare"}, {Text: "#common"}, {Text: "#common"},
		}, []api.Suggestion{
			{Term: "#common", Score: 1, Count: 2},
			{Term: "#rare", Score: 0.5, Count: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder()
			for i := range tt.comments {
				tt.comments[i].FetchedAt = at
				b.Add(&tt.comments[i], at)
			}
			got := b.Build().Candidates
			if len(got) != len(tt.want) {
				t.Fatalf("candidates %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i].Term != tt.want[i].Term || got[i].Count != tt.want[i].Count || math.Abs(got[i].Score-tt.want[i].Score) > 1e-12 {
					t.Fatalf("candidates %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}
