package node

import (
	"fmt"
	"testing"
)

// TestSeenIDs_ExactUnderCollisions remembers ids whose hashes collide (one
// hash for many ids) and ids of their own hash, past the bound: each
// remembered id is found, each forgotten or never added one is not.
func TestSeenIDs_ExactUnderCollisions(t *testing.T) {
	tests := []struct {
		name string
		hash func(i int) uint64
	}{
		{"own hashes", func(i int) uint64 { return idHash(fmt.Sprint(i)) }},
		{"one hash", func(int) uint64 { return 7 }},
		{"few hashes", func(i int) uint64 { return uint64(i % 3) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSeenIDs()
			total := seenPerSubscriber + seenPerSubscriber/4 + 10
			for i := range total {
				id := fmt.Sprint(i)
				if s.has(id, tt.hash(i)) {
					t.Fatalf("%s found before it was added", id)
				}
				s.add(id, tt.hash(i))
			}
			kept := total - len(s.order)
			for i := range total {
				if got, want := s.has(fmt.Sprint(i), tt.hash(i)), i >= kept; got != want {
					t.Fatalf("has(%d) = %v, want %v (the latest %d kept)", i, got, want, len(s.order))
				}
			}
			if n := len(s.byHash) + len(s.more); n != len(s.order) {
				t.Fatalf("%d ids held, %d in order", n, len(s.order))
			}
		})
	}
}
