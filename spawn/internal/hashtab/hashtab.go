// Package hashtab is the spawn's table of texts looked up by a hash
// computed beforehand: a comment's terms are hashed once when found and an
// item's id once for every subscriber it reaches, and each lookup after
// reads a slot or two and compares one text, where a Go map would hash the
// text again on every lookup. The term counts of an increment, the
// stop-words and the ids a subscriber has counted are kept in it.
package hashtab

import "iter"

// Table maps texts to values, each text found by its hash: a 64-bit hash
// of good quality (hash/maphash), the same for equal texts. The texts are
// held in open addressing with linear probing, at most half full; texts
// whose hashes are equal take neighbouring slots, which only a poor hash
// makes long. Its zero value is an empty table. It is not safe for
// concurrent use.
type Table[V any] struct {
	slots []slot[V] // a power of two of them, or none
	n     int       // texts held
	// used lists the slots filled since the last Reset while they are
	// few (spilt when they are not), so that a table grown once and
	// reused for few texts clears only those.
	used  []int32
	spilt bool
}

// slot holds a text, its value and its key (keyOf its hash); key 0 marks
// an empty slot.
type slot[V any] struct {
	val  V
	key  uint64
	text string
}

// maxKeptSlots bounds the room Reset keeps for the next use: a table
// grown once by many texts does not make every later reset costly.
const maxKeptSlots = 1 << 14

// keyOf is the slot key of a hash: the hash with its top bit set, so that
// no key is 0.
func keyOf(h uint64) uint64 { return h | 1<<63 }

// Len is the number of texts held.
func (t *Table[V]) Len() int { return t.n }

// Get returns the value of text, whose hash is h. It is small enough to
// be inlined, a lookup being most of what counting a term costs; GetBytes
// repeats it for a text in bytes, since a call between them would not be.
func (t *Table[V]) Get(h uint64, text string) (v V, ok bool) {
	if t.n == 0 {
		return v, false
	}
	key, mask := keyOf(h), uint64(len(t.slots)-1)
	for i := key & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key && s.text == text {
			return s.val, true
		}
		if s.key == 0 {
			return v, false
		}
	}
}

// GetBytes is Get for a text in bytes; it allocates nothing.
func (t *Table[V]) GetBytes(h uint64, text []byte) (v V, ok bool) {
	if t.n == 0 {
		return v, false
	}
	key, mask := keyOf(h), uint64(len(t.slots)-1)
	for i := key & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key && s.text == string(text) {
			return s.val, true
		}
		if s.key == 0 {
			return v, false
		}
	}
}

// Put adds text, whose hash is h and which the table does not hold, with
// the value v.
func (t *Table[V]) Put(h uint64, text string, v V) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.mark(t.insert(slot[V]{val: v, key: keyOf(h), text: text}))
	t.n++
}

// insert puts s in the first empty slot from its home and returns it.
func (t *Table[V]) insert(s slot[V]) int {
	mask := uint64(len(t.slots) - 1)
	i := s.key & mask
	for t.slots[i].key != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	return int(i)
}

// mark records that slot i was filled, while the filled slots are few.
func (t *Table[V]) mark(i int) {
	if t.spilt {
		return
	}
	if 4*(len(t.used)+1) >= len(t.slots) {
		t.spilt, t.used = true, t.used[:0]
		return
	}
	t.used = append(t.used, int32(i))
}

// grow doubles the table.
func (t *Table[V]) grow() {
	old := t.slots
	t.slots = make([]slot[V], max(16, 2*len(old)))
	t.used, t.spilt = t.used[:0], false
	for _, s := range old {
		if s.key != 0 {
			t.mark(t.insert(s))
		}
	}
}

// Delete drops text, whose hash is h; it reports whether it was held.
func (t *Table[V]) Delete(h uint64, text string) bool {
	if t.n == 0 {
		return false
	}
	key, mask := keyOf(h), uint64(len(t.slots)-1)
	for i := key & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key && s.text == text {
			t.remove(int(i))
			return true
		}
		if s.key == 0 {
			return false
		}
	}
}

// remove empties slot i, moving back the entries after it that would no
// longer be found past the gap (deletion in linear probing, without
// tombstones).
func (t *Table[V]) remove(i int) {
	slots := t.slots
	mask := len(slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		s := &slots[j]
		if s.key == 0 {
			break
		}
		home := int(s.key) & mask
		// The entry at j stays when its home lies cyclically in (i, j].
		if (i < j && i < home && home <= j) || (i > j && (home > i || home <= j)) {
			continue
		}
		slots[i] = *s
		t.mark(i)
		i = j
	}
	slots[i] = slot[V]{}
	t.n--
}

// Reset empties the table, keeping its room unless it is large. It clears
// only the slots filled since the last reset when they are few: a table
// grown by many texts once and reused for few costs them nothing.
func (t *Table[V]) Reset() {
	switch {
	case len(t.slots) > maxKeptSlots:
		t.slots, t.used = nil, nil
	case !t.spilt:
		for _, i := range t.used {
			t.slots[i] = slot[V]{}
		}
	case t.n > 0:
		clear(t.slots)
	}
	t.used, t.spilt = t.used[:0], false
	t.n = 0
}

// All yields every text held and its value, in no order.
func (t *Table[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for _, s := range t.slots {
			if s.key != 0 && !yield(s.text, s.val) {
				return
			}
		}
	}
}
