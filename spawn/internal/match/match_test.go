package match

import (
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

func hitMap(hits []Hit) map[int64][]string {
	out := make(map[int64][]string, len(hits))
	for _, h := range hits {
		out[h.Subscriber] = h.Keywords
	}
	return out
}

func TestIndex_Match(t *testing.T) {
	tests := []struct {
		name string
		subs map[int64][]string
		text string
		want map[int64][]string
	}{
		{
			name: "overlapping keywords",
			subs: map[int64][]string{1: {"new york"}, 2: {"york"}, 3: {"new"}, 4: {"ew"}},
			text: "I love New York!",
			want: map[int64][]string{1: {"new york"}, 2: {"york"}, 3: {"new"}},
		},
		{
			name: "keyword at start and at end",
			subs: map[int64][]string{1: {"golang"}, 2: {"rust"}},
			text: "golang beats nothing but rust",
			want: map[int64][]string{1: {"golang"}, 2: {"rust"}},
		},
		{
			name: "keyword is the whole text",
			subs: map[int64][]string{1: {"golang"}},
			text: "GOLANG",
			want: map[int64][]string{1: {"golang"}},
		},
		{
			name: "punctuation bounds words",
			subs: map[int64][]string{1: {"golang"}, 2: {"rust"}, 3: {"c++"}, 4: {"#weather"}},
			text: "(golang), rust's fans; c++! #Weather.",
			want: map[int64][]string{1: {"golang"}, 2: {"rust"}, 3: {"c++"}, 4: {"#weather"}},
		},
		{
			name: "word bytes do not bound words",
			subs: map[int64][]string{1: {"golang"}, 2: {"go"}, 3: {"lang"}},
			text: "golangs ungolang go_lang go2 golang_",
			want: map[int64][]string{},
		},
		{
			name: "a later bounded occurrence counts",
			subs: map[int64][]string{1: {"golang"}},
			text: "golangs and golang",
			want: map[int64][]string{1: {"golang"}},
		},
		{
			name: "non-ASCII letters",
			subs: map[int64][]string{1: {"café"}, 2: {"caf"}, 3: {"münchen"}, 4: {"é"}, 5: {"東京"}},
			text: "CAFÉ in MÜNCHEN, cafés elsewhere; 東京 tower",
			want: map[int64][]string{1: {"café"}, 3: {"münchen"}, 5: {"東京"}},
		},
		{
			name: "non-ASCII neighbours are word bytes",
			subs: map[int64][]string{1: {"golang"}},
			text: "ügolang golangé",
			want: map[int64][]string{},
		},
		{
			name: "lowercasing shortens the text",
			// The Kelvin sign (3 bytes) lowercases to "k" (1 byte):
			// offsets must be taken in the lowercased text.
			subs: map[int64][]string{1: {"golang"}, 2: {"kelvin"}},
			text: "\u212A\u212A\u212Aelvin and \u212Aelvin like golang",
			want: map[int64][]string{1: {"golang"}, 2: {"kelvin"}},
		},
		{
			name: "lowercasing lengthens the text",
			// "Ⱥ" (2 bytes) lowercases to "ⱥ" (3 bytes).
			subs: map[int64][]string{1: {"Ⱥb"}, 2: {"golang"}, 3: {"ⱥ"}},
			text: "ȺB ȺȺȺȺ loves golang",
			want: map[int64][]string{1: {"Ⱥb"}, 2: {"golang"}},
		},
		{
			name: "Unicode simple case folding",
			// Go lowercases "İ" to a plain "i".
			subs: map[int64][]string{1: {"İstanbul"}, 2: {"istanbul"}},
			text: "İSTANBUL",
			want: map[int64][]string{1: {"İstanbul"}, 2: {"istanbul"}},
		},
		{
			name: "phrase",
			subs: map[int64][]string{1: {"black widow"}, 2: {"widow spider"}},
			text: "The Black Widow spider; blackwidow; black widows",
			want: map[int64][]string{1: {"black widow"}, 2: {"widow spider"}},
		},
		{
			name: "phrase must be bounded",
			subs: map[int64][]string{1: {"black widow"}},
			text: "blackwidow or black widows or xblack widow",
			want: map[int64][]string{},
		},
		{
			name: "duplicate keywords across subscribers",
			subs: map[int64][]string{1: {"golang"}, 2: {"golang", "rust"}, 3: {"rust"}, 4: {"java"}},
			text: "golang and rust",
			want: map[int64][]string{1: {"golang"}, 2: {"golang", "rust"}, 3: {"rust"}},
		},
		{
			name: "keywords reported in the subscriber's order and spelling",
			subs: map[int64][]string{1: {"Rust", "zig", "GoLang"}},
			text: "golang then rust then golang",
			want: map[int64][]string{1: {"Rust", "GoLang"}},
		},
		{
			name: "keyword found many times is reported once",
			subs: map[int64][]string{1: {"go"}},
			text: "go go go",
			want: map[int64][]string{1: {"go"}},
		},
		{
			name: "subscribers without keywords and empty keywords",
			subs: map[int64][]string{1: nil, 2: {}, 3: {""}, 4: {"", "go"}},
			text: "go",
			want: map[int64][]string{4: {"go"}},
		},
		{
			name: "no match",
			subs: map[int64][]string{1: {"golang"}},
			text: "nothing here",
			want: map[int64][]string{},
		},
		{
			name: "empty text",
			subs: map[int64][]string{1: {"golang"}},
			text: "",
			want: map[int64][]string{},
		},
		{
			name: "invalid UTF-8 lowercases like strings.ToLower",
			subs: map[int64][]string{1: {"go"}, 2: {"\xff"}},
			text: "\xffgo \xff go",
			// Both sides lowercase "\xff" to U+FFFD, a word character.
			want: map[int64][]string{1: {"go"}, 2: {"\xff"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := New(tt.subs)
			got := hitMap(ix.Match(tt.text))
			if len(got) != len(tt.want) {
				t.Fatalf("Match(%q) = %v, want %v", tt.text, got, tt.want)
			}
			for id, kws := range tt.want {
				if !slices.Equal(got[id], kws) {
					t.Fatalf("Match(%q) = %v, want %v", tt.text, got, tt.want)
				}
			}
			// The one-subscriber form agrees.
			for id, kws := range tt.subs {
				if one := Keywords(tt.text, kws); !slices.Equal(one, tt.want[id]) {
					t.Errorf("Keywords(%q, %q) = %q, want %q", tt.text, kws, one, tt.want[id])
				}
			}
		})
	}
}

func TestIndex_LeavesOutSubscribersWithoutKeywords(t *testing.T) {
	ix := New(map[int64][]string{1: nil, 2: {"a"}, 3: {}})
	if ix.Len() != 1 {
		t.Fatalf("Len() = %d, want 1", ix.Len())
	}
	if hits := New(nil).Match("anything"); hits != nil {
		t.Fatalf("empty index matched %v", hits)
	}
}

func TestIndex_UpdateReusesThePatternSet(t *testing.T) {
	base := New(map[int64][]string{1: {"golang", "rust"}, 2: {"java"}, 3: {"zig"}})
	tests := []struct {
		name   string
		subs   map[int64][]string
		reused bool
	}{
		{name: "subscribers move among known keywords", subs: map[int64][]string{1: {"java"}, 4: {"golang", "zig"}, 5: {"Rust"}}, reused: true},
		{name: "a new keyword", subs: map[int64][]string{1: {"golang", "kotlin"}}, reused: false},
		{name: "most keywords unused", subs: map[int64][]string{1: {"golang"}}, reused: false},
		{name: "half still used", subs: map[int64][]string{1: {"golang"}, 2: {"java"}}, reused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := base.Update(tt.subs)
			if got := ix.auto == base.auto; got != tt.reused {
				t.Fatalf("pattern set reused = %v, want %v", got, tt.reused)
			}
			// Either way the answers are those of a fresh index.
			for _, text := range []string{"golang rust java zig kotlin", "RUST only", "nothing"} {
				got, want := hitMap(ix.Match(text)), hitMap(New(tt.subs).Match(text))
				if len(got) != len(want) {
					t.Fatalf("Match(%q) = %v, fresh index %v", text, got, want)
				}
				for id := range want {
					if !slices.Equal(got[id], want[id]) {
						t.Fatalf("Match(%q) = %v, fresh index %v", text, got, want)
					}
				}
			}
		})
	}
	// The old index still answers for its own subscribers.
	if got := hitMap(base.Match("zig")); len(got) != 1 || got[3][0] != "zig" {
		t.Fatalf("base index after Update: %v", got)
	}
}

func TestAppendFoldLowersAsStringsToLowerAndDropsInvisibles(t *testing.T) {
	for _, s := range []string{"", "abc", "ABC", "ÀÉÎ", "\u212A", "İ", "\xff\xfeA", "\xef\xbf\xbd", "ǅ", "ΣΑΣ", "a\x00B"} {
		if got, want := string(query.AppendFold(nil, s)), strings.ToLower(s); got != want {
			t.Errorf("AppendFold(%q) = %q, strings.ToLower = %q", s, got, want)
		}
	}
	for _, s := range []string{"Go\u200bLang", "\ufeffX\u00ad", "a\u202eb\u2066c", "x\ufe0f"} {
		if got, want := string(query.AppendFold(nil, s)), naiveFold(s); got != want {
			t.Errorf("AppendFold(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestMatch_ConcurrentUse(t *testing.T) {
	ix := New(map[int64][]string{1: {"golang"}, 2: {"rust", "golang"}})
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				if got := hitMap(ix.Match("Golang and rust")); len(got) != 2 || len(got[2]) != 2 {
					t.Errorf("concurrent Match = %v", got)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
