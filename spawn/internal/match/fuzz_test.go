package match

import (
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// FuzzMatch checks Index.Match against the naive rule (naive_test.go)
// applied to each subscriber separately: the keywords (separated by '|')
// are dealt to three subscribers, and every subscriber's reported keywords
// must be exactly the non-empty ones that occur whole-word in the folded
// text.
func FuzzMatch(f *testing.F) {
	f.Add("I love New York!", "new york|york|new")
	f.Add("golangs and golang, GoLang", "golang|go|lang")
	f.Add("\u212Aelvin İSTANBUL café", "kelvin|i̇stanbul|café|caf")
	f.Add("black widow spider", "black widow|widow spider|spider|black")
	f.Add("aaa aa a", "a|aa|aaa|aaaa")
	f.Add("c++ and #go!", "c++|#go|go|c")
	f.Add("\xff\xfego", "\xff|go|\ufffdgo")
	f.Add("golang’s «golang» golang—fast golang\u00a0x 学习golang。", "golang|学习|学|golang’s|s")
	f.Add("go\u200blang java\u0301 ภาษาไทย", "golang|java|ไทย|ja")
	f.Fuzz(func(t *testing.T, text, keywords string) {
		subs := map[int64][]string{}
		for i, k := range strings.Split(keywords, "|") {
			subs[int64(i%3)] = append(subs[int64(i%3)], k)
		}
		got := hitMap(New(subs).Match(text))
		lower := naiveFold(text)
		for id, kws := range subs {
			var want []string
			for _, k := range kws {
				if k != "" && naiveContains(lower, naiveFold(k)) {
					want = append(want, k)
				}
			}
			if !slices.Equal(got[id], want) {
				t.Fatalf("text %q, subscriber %d keywords %q: got %q, want %q", text, id, kws, got[id], want)
			}
			if one := Keywords(text, kws); !slices.Equal(one, want) {
				t.Fatalf("Keywords(%q, %q) = %q, want %q", text, kws, one, want)
			}
		}
		for id := range got {
			if _, ok := subs[id]; !ok {
				t.Fatalf("unknown subscriber %d reported", id)
			}
		}
		if string(query.AppendFold(nil, text)) != lower {
			t.Fatalf("query.AppendFold(%q) differs from the reference", text)
		}
	})
}
