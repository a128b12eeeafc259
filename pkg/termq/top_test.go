package termq

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTop_KeepsTheKBest offers random numbers, changes and removes some
// of those kept, and checks after every step that it keeps exactly the k
// best of what it holds and was offered, that what left or was refused is
// no better than any kept, and that every item knows its index.
func TestTop_KeepsTheKBest(t *testing.T) {
	type item struct {
		v   int
		pos int
	}
	for _, k := range []int{1, 2, 5, 16} {
		r := rand.New(rand.NewPCG(uint64(k), 9))
		var top Top[*item]
		top.Reset(k, func(a, b *item) bool { return a.v < b.v })
		top.moved = func(x *item, i int) { x.pos = i }
		var kept []int // what a plain list keeps: the k largest
		for step := range 3000 {
			switch op := r.IntN(10); {
			case op < 7:
				x := &item{v: r.IntN(1000)}
				left, out := top.Offer(x)
				kept = append(kept, x.v)
				slices.Sort(kept)
				if len(kept) > k {
					if !out || left.v != kept[0] {
						t.Fatalf("k %d step %d: offering %d let %v (out %v) go, want %d", k, step, x.v, left, out, kept[0])
					}
					kept = kept[1:]
				} else if out {
					t.Fatalf("k %d step %d: refused %d with room left", k, step, x.v)
				}
			case op < 9 && top.Len() > 0:
				i := r.IntN(top.Len())
				x := top.Items()[i]
				j := slices.Index(kept, x.v)
				x.v = r.IntN(1000)
				kept[j] = x.v
				slices.Sort(kept)
				top.Fix(i)
			case top.Len() > 0:
				i := r.IntN(top.Len())
				x := top.Remove(i)
				kept = slices.Delete(kept, slices.Index(kept, x.v), slices.Index(kept, x.v)+1)
			}
			var got []int
			for i, x := range top.Items() {
				if x.pos != i {
					t.Fatalf("k %d step %d: item %d believes it is at %d", k, step, i, x.pos)
				}
				got = append(got, x.v)
			}
			slices.Sort(got)
			if !slices.Equal(got, kept) {
				t.Fatalf("k %d step %d: keeps %v, want %v", k, step, got, kept)
			}
		}
	}
}
