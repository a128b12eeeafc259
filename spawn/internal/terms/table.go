package terms

import "hash/maphash"

// termSeed seeds the hashes of terms. They never leave the process: what
// travels is the terms' text.
var termSeed = maphash.MakeSeed()

// hashOf is a term's hash, computed once when the term is found and used
// by every lookup of it after.
func hashOf(term []byte) uint64 { return maphash.Bytes(termSeed, term) }

// termTable maps terms to positions (in a slice of tallies, candidates),
// each looked up by its hash computed beforehand: open addressing with
// linear probing, at most half full. A term costs a probe or two and one
// comparison of its text, against a Go map's hashing of it on every
// lookup.
type termTable struct {
	slots []termSlot // a power of two of them, or none
	n     int        // terms held
	used  []int32    // the slots holding them, for reset
}

type termSlot struct {
	hash uint64
	term string
	pos  int32 // the position plus one; 0 marks an empty slot
}

// maxKeptSlots bounds the room reset keeps for the next use: a table
// grown by one huge increment does not make every later reset costly.
const maxKeptSlots = 1 << 14

// get returns the position of term, whose hash is h.
func (t *termTable) get(h uint64, term string) (int32, bool) { return lookup(t, h, term) }

// getBytes is get for a term in bytes.
func (t *termTable) getBytes(h uint64, term []byte) (int32, bool) { return lookup(t, h, term) }

// lookup is get for a term as text or bytes (comparing them converts
// nothing).
func lookup[T string | []byte](t *termTable, h uint64, term T) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.pos == 0 {
			return 0, false
		}
		if s.hash == h && s.term == string(term) {
			return s.pos - 1, true
		}
	}
}

// put adds term, not held yet, at position pos.
func (t *termTable) put(h uint64, term string, pos int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.used = append(t.used, t.insert(termSlot{hash: h, term: term, pos: pos + 1}))
	t.n++
}

// insert puts s in its slot, which it returns.
func (t *termTable) insert(s termSlot) int32 {
	mask := uint64(len(t.slots) - 1)
	i := s.hash & mask
	for t.slots[i].pos != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	return int32(i)
}

func (t *termTable) grow() {
	old := t.slots
	t.slots = make([]termSlot, max(16, 2*len(old)))
	t.used = t.used[:0]
	for _, s := range old {
		if s.pos != 0 {
			t.used = append(t.used, t.insert(s))
		}
	}
}

// reset empties the table, keeping its room unless it is large. It clears
// only the slots in use when they are few: a table grown by one big
// increment and reused for small ones costs them nothing.
func (t *termTable) reset() {
	switch {
	case len(t.slots) > maxKeptSlots:
		t.slots, t.used = nil, nil
	case 4*len(t.used) < len(t.slots):
		for _, i := range t.used {
			t.slots[i] = termSlot{}
		}
	case t.n > 0:
		clear(t.slots)
	}
	t.used = t.used[:0]
	t.n = 0
}
