package match

import (
	"slices"
	"strings"
	"testing"
)

// naiveContains is the reference rule, written independently of the
// package: some occurrence of word in text has no word byte on either side.
func naiveContains(text, word string) bool {
	isWord := func(b byte) bool {
		return b == '_' || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || b >= 0x80
	}
	for i := 0; i+len(word) <= len(text); i++ {
		if text[i:i+len(word)] != word {
			continue
		}
		if (i == 0 || !isWord(text[i-1])) && (i+len(word) == len(text) || !isWord(text[i+len(word)])) {
			return true
		}
	}
	return false
}

// FuzzMatch checks Index.Match against the naive rule applied to each
// subscriber separately: the keywords (separated by '|') are dealt to three
// subscribers, and every subscriber's reported keywords must be exactly the
// non-empty ones that occur whole-word in the lowercased text.
func FuzzMatch(f *testing.F) {
	f.Add("I love New York!", "new york|york|new")
	f.Add("golangs and golang, GoLang", "golang|go|lang")
	f.Add("\u212Aelvin İSTANBUL café", "kelvin|i̇stanbul|café|caf")
	f.Add("black widow spider", "black widow|widow spider|spider|black")
	f.Add("aaa aa a", "a|aa|aaa|aaaa")
	f.Add("c++ and #go!", "c++|#go|go|c")
	f.Add("\xff\xfego", "\xff|go|\ufffdgo")
	f.Fuzz(func(t *testing.T, text, keywords string) {
		subs := map[int64][]string{}
		for i, k := range strings.Split(keywords, "|") {
			subs[int64(i%3)] = append(subs[int64(i%3)], k)
		}
		got := hitMap(New(subs).Match(text))
		lower := strings.ToLower(text)
		for id, kws := range subs {
			var want []string
			for _, k := range kws {
				if k != "" && naiveContains(lower, strings.ToLower(k)) {
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
		if string(appendLower(nil, text)) != lower {
			t.Fatalf("appendLower(%q) differs from strings.ToLower", text)
		}
	})
}
