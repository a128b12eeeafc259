package textmatch

import "testing"

func TestContainsPhrase(t *testing.T) {
	tests := []struct {
		name, text, phrase string
		want               bool
	}{
		{"whole text", "golang", "golang", true},
		{"between spaces", "i like golang a lot", "golang", true},
		{"before punctuation", "golang, again", "golang", true},
		{"inside a word", "golanger", "golang", false},
		{"after a word byte", "xgolang", "golang", false},
		{"underscore continues a word", "golang_x", "golang", false},
		{"a letter of another script continues a word", "golangé", "golang", false},
		{"a combining mark continues a word", "golang\u0301", "golang", false},
		{"second occurrence bounded", "golangs and golang", "golang", true},
		{"phrase of words", "new go release", "go release", true},
		{"curly apostrophe", "golang’s", "golang", true},
		{"em dash", "golang—fast", "golang", true},
		{"guillemets", "«golang»", "golang", true},
		{"curly quotes", "“golang”", "golang", true},
		{"ellipsis", "golang…", "golang", true},
		{"no-break space", "golang\u00a0rocks", "golang", true},
		{"between ideographs", "学习golang。", "golang", true},
		{"ideographs are words by themselves", "我在学习编程", "学习", true},
		{"a tag after a letter is no tag", "a#go", "#go", false},
		{"a tag after an ideograph", "学#go", "#go", true},
		{"empty phrase", "anything", "", false},
		{"empty text", "", "go", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ContainsPhrase(tt.text, tt.phrase); got != tt.want {
				t.Fatalf("ContainsPhrase(%q, %q) = %v, want %v", tt.text, tt.phrase, got, tt.want)
			}
		})
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{"Go\u200bLang": "golang", "go\u00adlang": "golang", "ÉTÉ": "été", "a\u202eb": "ab"} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}
