package hashtab

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

var seed = maphash.MakeSeed()

// TestTable_AgainstMap puts, deletes and resets texts in random order, with
// their own hashes, with hashes crowded into few slots' homes (long probe
// runs, removals that move entries back) and with hashes that collide
// (texts kept apart), and checks every text and value against a map after
// each step.
func TestTable_AgainstMap(t *testing.T) {
	tests := []struct {
		name string
		hash func(i int) uint64
	}{
		{"own hashes", func(i int) uint64 { return maphash.String(seed, fmt.Sprint(i)) }},
		{"crowded homes", func(i int) uint64 { return uint64(i%40) << 3 }},
		{"one hash", func(int) uint64 { return 7 }},
		{"few hashes", func(i int) uint64 { return uint64(i % 3) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			var tab Table[int]
			want := map[string]int{}
			check := func(step int) {
				t.Helper()
				for j := range 300 {
					text := fmt.Sprint(j)
					wv, wok := want[text]
					if v, ok := tab.Get(tt.hash(j), text); ok != wok || v != wv {
						t.Fatalf("step %d: Get(%s) = %d, %v; want %d, %v", step, text, v, ok, wv, wok)
					}
					if v, ok := tab.GetBytes(tt.hash(j), []byte(text)); ok != wok || v != wv {
						t.Fatalf("step %d: GetBytes(%s) = %d, %v; want %d, %v", step, text, v, ok, wv, wok)
					}
				}
				if tab.Len() != len(want) {
					t.Fatalf("step %d: Len %d, want %d", step, tab.Len(), len(want))
				}
				all := map[string]int{}
				for text, v := range tab.All() {
					all[text] = v
				}
				if fmt.Sprint(all) != fmt.Sprint(want) {
					t.Fatalf("step %d: All yields %v, want %v", step, all, want)
				}
			}
			for step := range 20000 {
				i := r.IntN(300)
				text, h := fmt.Sprint(i), tt.hash(i)
				switch _, held := want[text]; {
				case step%5000 == 4999:
					tab.Reset()
					clear(want)
				case held && r.IntN(2) == 0:
					if !tab.Delete(h, text) {
						t.Fatalf("step %d: Delete(%s) found nothing", step, text)
					}
					delete(want, text)
				case !held:
					tab.Put(h, text, step)
					want[text] = step
				}
				if step%97 == 0 {
					check(step)
				}
			}
			check(-1)
		})
	}
}

// TestTable_ResetKeepsRoomAndClearsEverything fills a table with many
// texts, resets it, fills it with few, resets it again: each time nothing
// of before is found, and the room of the first fill is kept.
func TestTable_ResetKeepsRoomAndClearsEverything(t *testing.T) {
	var tab Table[int32]
	for i := range 3000 {
		tab.Put(maphash.String(seed, fmt.Sprint(i)), fmt.Sprint(i), int32(i))
	}
	room := len(tab.slots)
	tab.Reset()
	for i := range 5 {
		tab.Put(maphash.String(seed, fmt.Sprint("x", i)), fmt.Sprint("x", i), int32(i))
	}
	if len(tab.slots) != room || tab.spilt {
		t.Fatalf("after a reset: %d slots (spilt %v), want the %d of before, few in use", len(tab.slots), tab.spilt, room)
	}
	tab.Reset()
	for i := range 3000 {
		if _, ok := tab.Get(maphash.String(seed, fmt.Sprint(i)), fmt.Sprint(i)); ok {
			t.Fatalf("%d found after reset", i)
		}
	}
	for i, s := range tab.slots {
		if s.key != 0 {
			t.Fatalf("slot %d holds %q after reset", i, s.text)
		}
	}
}
