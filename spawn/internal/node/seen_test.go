package node

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSeenIDs_ExactUnderCollisions remembers ids of their own hash and ids
// whose hashes collide (a thousand hashes for all of them, each shared by
// some twenty-five ids), past the bound: each remembered id is found, each
// forgotten or never added one is not. (The table's rule for equal hashes
// is tested, down to one hash for all, in package hashtab; one hash for
// the twenty-five thousand ids here would only make the test slow.)
func TestSeenIDs_ExactUnderCollisions(t *testing.T) {
	tests := []struct {
		name string
		hash func(i int) uint64
	}{
		{"own hashes", func(i int) uint64 { return idHash(fmt.Sprint(i)) }},
		{"shared hashes", func(i int) uint64 { return uint64(i%1000) * 0x9e3779b97f4a7c15 }},
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
			if n := s.held(); n != len(s.order) {
				t.Fatalf("%d ids held, %d in order", n, len(s.order))
			}
		})
	}
}

// TestSeenIDs_TableAgainstMap adds and forgets ids in random order, with
// hashes crowded into few table homes so that probe runs are long and
// removals move entries back, and checks every id against a map after
// each step.
func TestSeenIDs_TableAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := newSeenIDs()
	want := map[string]uint64{}
	hashOf := func(i int) uint64 { return uint64(i%40) << 3 } // many share a home, some share a hash
	for step := range 20000 {
		i := r.IntN(300)
		id, h := fmt.Sprint(i), hashOf(i)
		if _, ok := want[id]; ok && r.IntN(2) == 0 {
			s.forget(id, h)
			delete(want, id)
		} else if !ok {
			s.add(id, h)
			want[id] = h
		}
		if step%97 == 0 {
			for j := range 300 {
				id := fmt.Sprint(j)
				_, ok := want[id]
				if got := s.has(id, hashOf(j)); got != ok {
					t.Fatalf("step %d: has(%s) = %v, want %v", step, id, got, ok)
				}
			}
			if s.held() != len(want) {
				t.Fatalf("step %d: %d held, want %d", step, s.held(), len(want))
			}
		}
	}
}
