// Package hashtab is the spawn's table of texts looked up by a hash
// computed beforehand: a comment's terms are hashed once when found and an
// item's id once for every subscriber it reaches, and each lookup after
// reads a slot or two and compares one text, where a Go map would hash the
// text again on every lookup. The term counts of an increment and the ids a
// subscriber has counted are kept in it.
package hashtab

import "iter"

// Table maps texts to values, each text found by its hash (any 64-bit
// hash, the same for equal texts). The texts are held in open addressing
// with linear probing, at most half full, one slot per hash; a text whose
// hash another text already has is kept apart, in a map, so that texts
// whose hashes collide cost no more than a map lookup. Its zero value is an
// empty table. It is not safe for concurrent use.
type Table[V any] struct {
	slots []slot[V] // a power of two of them, or none
	n     int       // texts in slots
	more  map[string]V
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
func (t *Table[V]) Len() int { return t.n + len(t.more) }

// Get returns the value of text, whose hash is h.
func (t *Table[V]) Get(h uint64, text string) (V, bool) { return lookup(t, h, text) }

// GetBytes is Get for a text in bytes; it allocates nothing.
func (t *Table[V]) GetBytes(h uint64, text []byte) (V, bool) { return lookup(t, h, text) }

// Has reports whether text, whose hash is h, is held.
func (t *Table[V]) Has(h uint64, text string) bool {
	_, ok := lookup(t, h, text)
	return ok
}

// lookup is Get for a text as a string or bytes (comparing them converts
// nothing).
func lookup[V any, T string | []byte](t *Table[V], h uint64, text T) (V, bool) {
	if t.n > 0 {
		if i, ok := t.find(keyOf(h)); ok && t.slots[i].text == string(text) {
			return t.slots[i].val, true
		}
	}
	if len(t.more) > 0 {
		v, ok := t.more[string(text)]
		return v, ok
	}
	var zero V
	return zero, false
}

// find returns the index of the slot holding key, or of the empty slot
// where it would go, and whether it holds it.
func (t *Table[V]) find(key uint64) (int, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := key & mask; ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case key:
			return int(i), true
		case 0:
			return int(i), false
		}
	}
}

// Put adds text, whose hash is h and which the table does not hold, with
// the value v.
func (t *Table[V]) Put(h uint64, text string, v V) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	key := keyOf(h)
	i, taken := t.find(key)
	if taken {
		if t.more == nil {
			t.more = map[string]V{}
		}
		t.more[text] = v
		return
	}
	t.slots[i] = slot[V]{val: v, key: key, text: text}
	t.n++
	t.mark(i)
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
			i, _ := t.find(s.key)
			t.slots[i] = s
			t.mark(i)
		}
	}
}

// Delete drops text, whose hash is h; it reports whether it was held.
func (t *Table[V]) Delete(h uint64, text string) bool {
	if t.n > 0 {
		if i, ok := t.find(keyOf(h)); ok && t.slots[i].text == text {
			t.remove(i)
			return true
		}
	}
	if _, ok := t.more[text]; ok {
		delete(t.more, text)
		return true
	}
	return false
}

// remove empties slot i, moving back the entries after it that would no
// longer be found past the gap (deletion in linear probing, without
// tombstones).
func (t *Table[V]) remove(i int) {
	mask := len(t.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		if t.slots[j].key == 0 {
			break
		}
		home := int(t.slots[j].key) & mask
		// The entry at j stays when its home lies cyclically in (i, j].
		if (i < j && i < home && home <= j) || (i > j && (home > i || home <= j)) {
			continue
		}
		t.slots[i] = t.slots[j]
		t.mark(i)
		i = j
	}
	t.slots[i] = slot[V]{}
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
	clear(t.more)
}

// All yields every text held and its value, in no order.
func (t *Table[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for _, s := range t.slots {
			if s.key != 0 && !yield(s.text, s.val) {
				return
			}
		}
		for text, v := range t.more {
			if !yield(text, v) {
				return
			}
		}
	}
}
