package source

import (
	"errors"
	"testing"
	"time"
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

func TestSignal_NeverBlocksAndKeepsOne(t *testing.T) {
	ch := make(chan struct{}, 1)
	Signal(ch)
	Signal(ch) // already signalled: dropped, not blocking
	<-ch
	select {
	case <-ch:
		t.Fatal("two signals kept")
	default:
	}
}

func TestSetDefault_FillsZeroAndNegative(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{{0, time.Second}, {-1, time.Second}, {time.Minute, time.Minute}} {
		v := tc.in
		SetDefault(&v, time.Second)
		if v != tc.want {
			t.Errorf("SetDefault(%v) = %v, want %v", tc.in, v, tc.want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	cases := []struct {
		raw string
		ok  bool
	}{
		{"https://api.example.com", true},
		{"http://127.0.0.1:8080/base/", true},
		{"wss://jetstream.example/subscribe", false}, // not among http, https
		{"https://api.example.com?x=1", false},
		{"https://api.example.com#top", false},
		{"https:///nohost", false},
		{"::not a url", false},
	}
	for _, tc := range cases {
		if _, ok := BaseURL(tc.raw, "http", "https"); ok != tc.ok {
			t.Errorf("BaseURL(%q) ok = %v, want %v", tc.raw, ok, tc.ok)
		}
	}
	if err := CheckKey("demo", "demo", "demo"); err != nil {
		t.Errorf("CheckKey of the kind's key: %v", err)
	}
	if err := CheckKey("demo", "other", "demo"); err == nil || err.Error() != `demo: data source key "other" is not "demo"` {
		t.Errorf("CheckKey of another key: %v", err)
	}
}
