package backoff

import (
	"context"
	"testing"
	"time"
)

func TestPolicy_GrowsAndCaps(t *testing.T) {
	cases := []struct {
		name string
		p    Policy
		want []time.Duration
	}{
		{"doubling", Policy{Min: time.Second, Max: 5 * time.Second, NoJitter: true},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"linear", Policy{Min: 250 * time.Millisecond, Max: time.Second, Factor: 1, Step: 250 * time.Millisecond, NoJitter: true},
			[]time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second, time.Second}},
		{"max below min", Policy{Min: 2 * time.Second, Max: time.Second, NoJitter: true},
			[]time.Duration{2 * time.Second, 2 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if got := tc.p.Next(); got != want {
					t.Fatalf("step %d: got %v, want %v", i, got, want)
				}
			}
			tc.p.Reset()
			if got := tc.p.Next(); got != tc.want[0] {
				t.Fatalf("after reset: got %v, want %v", got, tc.want[0])
			}
		})
	}
}

func TestPolicy_JitterStaysBetweenHalfAndWhole(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	for range 1000 {
		d := p.Next()
		if d < 50*time.Millisecond || d > 100*time.Millisecond {
			t.Fatalf("jittered delay %v outside [50ms, 100ms]", d)
		}
	}
}

func TestSleep_EndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep reported a full wait on a cancelled context")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep reported an interrupted wait")
	}
}
