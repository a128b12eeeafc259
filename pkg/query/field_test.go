package query

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseFields_FieldAtoms(t *testing.T) {
	fields := []string{"subreddit"}
	cases := []struct {
		query     []string
		canonical string
		values    []string
		required  bool
	}{
		{[]string{"subreddit:golang (generics OR iterators)"}, "(generics OR iterators) subreddit:golang", []string{"golang"}, true},
		{[]string{"SUBREDDIT:GoLang"}, "subreddit:golang", []string{"golang"}, true},
		{[]string{"(subreddit:golang OR subreddit:rust) release"}, "release (subreddit:golang OR subreddit:rust)", []string{"golang", "rust"}, true},
		{[]string{"subreddit:golang generics OR async"}, "async OR generics subreddit:golang", []string{"golang"}, false},
		{[]string{"golang -subreddit:rust"}, "-subreddit:rust golang", nil, false},
	}
	for _, tc := range cases {
		q, err := ParseFields(tc.query, fields)
		if err != nil {
			t.Fatalf("%q: %v", tc.query, err)
		}
		if q.String() != tc.canonical {
			t.Errorf("%q: canonical %q, want %q", tc.query, q.String(), tc.canonical)
		}
		again, err := ParseFields([]string{q.String()}, fields)
		if err != nil || again.String() != q.String() {
			t.Errorf("%q: the canonical form parses to %v, %v", tc.query, again, err)
		}
		if got := q.FieldValues("subreddit"); !slices.Equal(got, tc.values) {
			t.Errorf("%q: values %q, want %q", tc.query, got, tc.values)
		}
		if got := q.RequiresField("subreddit"); got != tc.required {
			t.Errorf("%q: requires the field %v, want %v", tc.query, got, tc.required)
		}
	}
	// Without the field declared, the same characters are a word.
	q, err := ParseList([]string{"subreddit:golang"})
	if err != nil || q.Atoms()[0].Kind != Word {
		t.Fatalf("without fields: %v, %v", q, err)
	}
	if _, err := ParseFields([]string{"subreddit:go/lang"}, fields); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad field value: %v", err)
	}
}

func TestMatch_FieldAtoms(t *testing.T) {
	q, err := ParseFields([]string{"subreddit:golang generics"}, []string{"subreddit"})
	if err != nil {
		t.Fatal(err)
	}
	in := Doc{Text: "generics at last", Fields: map[string]string{"subreddit": "GoLang"}}
	if terms, ok := q.Match(in); !ok || !slices.Equal(terms, []string{"generics", "subreddit:golang"}) {
		t.Errorf("in the subreddit: %v %v", terms, ok)
	}
	if _, ok := q.Match(Doc{Text: "generics at last", Fields: map[string]string{"subreddit": "rust"}}); ok {
		t.Error("another subreddit matched")
	}
	if _, ok := q.Match(Doc{Text: "generics at last"}); ok {
		t.Error("an item without the field matched")
	}
}

func TestParseFields_WithProximityAndPrefixes(t *testing.T) {
	fields := []string{"subreddit"}
	q, err := ParseFields([]string{"subreddit:golang (generics OR kube*)"}, fields)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.String(), "(generics OR kube*) subreddit:golang"; got != want {
		t.Errorf("canonical %q, want %q", got, want)
	}
	if !q.RequiresField("subreddit") {
		t.Error("the field is in the only branch")
	}
	in := Doc{Text: "Kubernetes operators", Fields: map[string]string{"subreddit": "golang"}}
	if terms, ok := q.Match(in); !ok || !slices.Equal(terms, []string{"kube*", "subreddit:golang"}) {
		t.Errorf("a prefix in the subreddit: %v %v", terms, ok)
	}
	q, err = ParseFields([]string{"subreddit:golang generics NEAR/1f here"}, fields)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := q.Match(Doc{Text: "generics are here", Fields: map[string]string{"subreddit": "golang"}}); !ok {
		t.Error("a NEAR next to a field did not match")
	}
	if _, ok := q.Match(Doc{Text: "here are generics", Fields: map[string]string{"subreddit": "golang"}}); ok {
		t.Error("an ordered NEAR matched in reverse next to a field")
	}

	// A field is no word of the text: a NEAR over one is refused where it
	// stands, and a field value has no wildcard.
	refused := []struct {
		query  string
		column int
	}{
		{"subreddit:golang NEAR/2 generics", 1},
		{"generics NEAR/2f subreddit:golang", 18},
		{"go (x OR subreddit:rust) NEAR/1 y", 10},
		{"subreddit:gol*", 1},
	}
	for _, tc := range refused {
		_, err := ParseFields([]string{tc.query}, fields)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Column != tc.column || strings.Contains(se.Msg, "NEAR") && !strings.Contains(se.Msg, "its terms are words") {
			t.Errorf("%q: %v, want an error at column %d", tc.query, err, tc.column)
		}
	}
}
