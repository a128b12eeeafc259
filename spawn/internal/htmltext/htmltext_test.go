package htmltext

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text is folded", "plain  text\n here", "plain text here"},
		{"blocks separate words", "<p>Hello <b>world</b></p><p>again</p>", "Hello world again"},
		{"inline elements do not split words", "<b>gol</b>ang <em>x</em>y", "golang xy"},
		{"entities are decoded", "a &amp; b &lt;c&gt;", "a & b <c>"},
		{"a lone less-than is text", "1 < 2 and 3 > 2", "1 < 2 and 3 > 2"},
		{"script content is dropped", "x<script type='a'>alert('<b>')</script>y", "x y"},
		{"style and comments are dropped", "<style>p{}</style>text<!-- hidden -->", "text"},
		{"attributes never leak", `<a title="x>y">golang</a>`, "golang"},
		{"quoted attribute with a tag inside", `<img alt="<b>secret</b>" src=x>seen`, "seen"},
		{"line breaks separate", "line<br/>break", "line break"},
		{"mastodon status", `<p>Release day! <a href="https://x.example/tags/golang" class="mention hashtag" rel="tag">#<span>golang</span></a></p>`, "Release day! #golang"},
		{"nested hidden", "a<noscript><script>x</script>y</noscript>b", "a b"},
		{"unclosed script hides the rest", "a<script>never", "a"},
		{"cut-off tag at the end", "broken <a href='x'", "broken"},
		{"empty", "", ""},
		{"less-than at the end", "a <", "a <"},
		{"ampersand alone", "fish & chips", "fish & chips"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzText(f *testing.F) {
	f.Add(`<a title="x>y">golang</a>`)
	f.Add("<p>a</p><script>b</script>")
	f.Add("1 < 2 &amp; <b")
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if got != strings.Join(strings.Fields(got), " ") {
			t.Fatalf("Text(%q) = %q: white space not folded", s, got)
		}
		if strings.Contains(s, "<") {
			return
		}
		// Without markup only entities change the text.
		if !strings.Contains(s, "&") && got != strings.Join(strings.Fields(s), " ") {
			t.Fatalf("Text(%q) = %q changed plain text", s, got)
		}
	})
}
