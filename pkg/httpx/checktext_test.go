package httpx

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckText_RefusesWhatAnOperatorWouldNotSee(t *testing.T) {
	cases := []struct{ text, want string }{
		{"admin\u202egpj", "bidirectional control U+202E at character 6"},
		{"a\u0007b", "control character U+0007 at character 2"},
		{"golang\u200b", "invisible character U+200B at character 7"},
		{"go\u00adlang", "invisible character U+00AD at character 3"},
		{"\ufeffbob", "invisible character U+FEFF at character 1"},
		{"bob\u2060", "invisible character U+2060 at character 4"},
		{"x\ufe0f", "invisible character U+FE0F at character 2"},
		{"a\ufffdb", "the replacement character U+FFFD"},
	}
	for _, tc := range cases {
		err := CheckText("name", tc.text)
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "name contains "+tc.want) {
			t.Errorf("CheckText(%q) = %v, want %q", tc.text, err, tc.want)
		}
	}
	for _, ok := range []string{"Bob", "José Müller", "学习 golang", "ไทย", "jalapeño’s «salsa» — 🚀", "a\u00a0b"} {
		if err := CheckText("name", ok); err != nil {
			t.Errorf("CheckText(%q) = %v, want it accepted", ok, err)
		}
	}
}
