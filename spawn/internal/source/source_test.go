package source

import (
	"errors"
	"testing"
)

func TestDegradedUnless_KeepsLastingErrorsFailing(t *testing.T) {
	lasting := errors.New("key refused")
	passing := errors.New("connection lost")
	cases := []struct {
		name         string
		err          error
		wantDegraded bool
	}{
		{"nil", nil, false},
		{"lasting", lasting, false},
		{"wrapped lasting", errors.Join(errors.New("x"), lasting), false},
		{"passing", passing, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DegradedUnless(tc.err, lasting)
			if errors.Is(got, ErrDegraded) != tc.wantDegraded || (tc.err != nil && !errors.Is(got, tc.err)) {
				t.Fatalf("DegradedUnless(%v) = %v", tc.err, got)
			}
		})
	}
}

func TestNewError_MatchesItselfAndTheSharedSentinel(t *testing.T) {
	shared := errors.New("connection stalled")
	own := NewError("demo: connection stalled", shared)
	other := NewError("other: connection stalled", shared)
	wrapped := errors.Join(errors.New("x"), own)
	if own.Error() != "demo: connection stalled" || !errors.Is(wrapped, own) || !errors.Is(wrapped, shared) || errors.Is(wrapped, other) {
		t.Fatalf("own sentinel %q: is own %v, is shared %v, is other %v", own, errors.Is(wrapped, own), errors.Is(wrapped, shared), errors.Is(wrapped, other))
	}
}

func TestCapTextAndClip_CutOnACharacterBoundary(t *testing.T) {
	cases := []struct {
		in        string
		max       int
		cap, clip string
	}{
		{"short", 10, "short", "short"},
		{"exactly10!", 10, "exactly10!", "exactly10!"},
		{"abcdefghijkl", 10, "abcdefghij", "abcdefghij…"},
		{"ééééé", 5, "éé", "éé…"}, // é is two bytes: the third would be cut
	}
	for _, tc := range cases {
		if got := CapText(tc.in, tc.max); got != tc.cap {
			t.Errorf("CapText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.cap)
		}
		if got := Clip(tc.in, tc.max); got != tc.clip {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.clip)
		}
	}
}
