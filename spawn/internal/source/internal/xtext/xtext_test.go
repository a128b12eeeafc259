package xtext

import (
	"slices"
	"testing"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		urls      []URL
		want      string
		wantLinks []string
	}{
		{"one link", "read https://t.co/abc now", []URL{{"https://t.co/abc", "https://go.dev/blog/"}},
			"read https://go.dev/blog/ now", []string{"https://go.dev/blog/"}},
		{"a short address that starts a longer one", "a https://t.co/ab b https://t.co/abc",
			[]URL{{"https://t.co/ab", "https://one.example/"}, {"https://t.co/abc", "https://two.example/"}},
			"a https://one.example/ b https://two.example/", []string{"https://one.example/", "https://two.example/"}},
		{"the same link twice", "x https://t.co/a y https://t.co/a", []URL{{"https://t.co/a", "https://e.example/"}, {"https://t.co/a", "https://e.example/"}},
			"x https://e.example/ y https://e.example/", []string{"https://e.example/"}},
		{"no expanded address keeps the short one", "see https://t.co/q", []URL{{"https://t.co/q", ""}},
			"see https://t.co/q", []string{"https://t.co/q"}},
		{"not a web address", "see https://t.co/q", []URL{{"https://t.co/q", "javascript:alert(1)"}},
			"see https://t.co/q", []string{"https://t.co/q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, links := Expand(tt.text, tt.urls)
			if got != tt.want || !slices.Equal(links, tt.wantLinks) {
				t.Fatalf("Expand = %q %q, want %q %q", got, links, tt.want, tt.wantLinks)
			}
		})
	}
}

func TestUnescape_Once(t *testing.T) {
	if got := Unescape("a &amp; b &lt;tag&gt; &amp;lt; &quot;"); got != "a & b <tag> &lt; &quot;" {
		t.Fatalf("got %q", got)
	}
}

func TestIsStatusOf(t *testing.T) {
	for link, want := range map[string]bool{
		"https://twitter.com/gopher/status/42":         true,
		"https://x.com/i/web/status/42":                true,
		"https://mobile.twitter.com/a/status/42/photo": true,
		"https://x.com/a/status/421":                   false,
		"https://example.com/a/status/42":              false,
	} {
		if got := IsStatusOf(link, "42"); got != want {
			t.Errorf("IsStatusOf(%q) = %v, want %v", link, got, want)
		}
	}
}

func TestAppendLinks_Bounded(t *testing.T) {
	var links []string
	for i := range MaxLinks + 10 {
		links = AppendLinks(links, "https://e.example/"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if len(links) != MaxLinks {
		t.Fatalf("%d links, want %d", len(links), MaxLinks)
	}
}
