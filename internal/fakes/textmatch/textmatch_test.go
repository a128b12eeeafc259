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
		{"underscore is a word byte", "golang_x", "golang", false},
		{"non-ASCII is a word byte", "golangé", "golang", false},
		{"second occurrence bounded", "golangs and golang", "golang", true},
		{"phrase of words", "new go release", "go release", true},
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
