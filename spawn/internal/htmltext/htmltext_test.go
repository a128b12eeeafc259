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

func TestLines(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"paragraphs are a blank line apart", "<p>Hello <b>world</b></p><p>again</p>", "Hello world\n\nagain"},
		{"a line break is a newline", "<p>line<br>break<br />and<br/>more</p>", "line\nbreak\nand\nmore"},
		{"spaces around breaks go", "<p> a <br> b </p>  <p> c </p>", "a\nb\n\nc"},
		{"raw newlines are white space", "<p>one\ntwo\r\n  three</p>", "one two three"},
		{"empty paragraphs add nothing", "<p></p><p>a</p><p> </p><p><br></p><p>b</p>", "a\n\nb"},
		{"consecutive breaks stay one line each", "a<br><br>b", "a\nb"},
		{"list items start lines", "<p>list:</p><ul><li>one</li><li>two</li></ul><p>end</p>", "list:\n\none\ntwo\n\nend"},
		{"a block quote is a paragraph", "<p>said</p><blockquote><p>quoted</p></blockquote>after", "said\n\nquoted\n\nafter"},
		{"preformatted text keeps its lines", "<pre><code>a := 1\nb := 2</code></pre>", "a := 1\nb := 2"},
		{"inline elements do not split words", "<p><b>gol</b>ang <em>x</em>y</p>", "golang xy"},
		{"entities are decoded", "<p>a &amp; b &lt;c&gt;</p>", "a & b <c>"},
		{"hidden elements are dropped", "<p>x<script>alert('<b>')</script>y</p>", "x y"},
		{"mastodon link", `<p>see <a href="https://x.example/a/b"><span class="invisible">https://</span><span class="ellipsis">x.example/a</span><span class="invisible">/b</span></a></p>`, "see https://x.example/a/b"},
		{"plain text is folded into one line", "plain  text\n here", "plain text here"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Lines(tt.in); got != tt.want {
				t.Errorf("Lines(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzLines(f *testing.F) {
	f.Add("<p>a<br>b</p><p>c</p>")
	f.Add("<pre>x\n\n\ny</pre>")
	f.Add("1 < 2 &amp; <b")
	f.Fuzz(func(t *testing.T, s string) {
		got := Lines(s)
		if got != strings.TrimSpace(got) || strings.Contains(got, "\n\n\n") {
			t.Fatalf("Lines(%q) = %q: untrimmed, or more than a blank line", s, got)
		}
		for _, line := range strings.Split(got, "\n") {
			if line != strings.Join(strings.Fields(line), " ") {
				t.Fatalf("Lines(%q) = %q: line %q not folded", s, got, line)
			}
		}
		// The words are Text's, only the separators differ.
		if strings.Join(strings.Fields(got), " ") != Text(s) {
			t.Fatalf("Lines(%q) = %q, words differ from Text's %q", s, got, Text(s))
		}
	})
}
