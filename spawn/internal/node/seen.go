package node

import "hash/maphash"

// seenIDs are the ids of the items a subscriber counted, so it never counts
// one twice: the latest seenPerSubscriber of them. They are kept by a hash
// of the id, computed once per item for all the subscribers it reaches
// (idHash), so the many lookups an item costs a spawn with many
// subscribers hash nothing and compare an id only when its hash is known.
// The ids are held in an open-addressing table of their own (a lookup of
// an item the subscriber has not counted, the common case, reads one
// slot or two of it); an id whose hash a remembered id already has is
// kept apart, in more.
type seenIDs struct {
	slots []seenSlot // a power of two of them, at most half full; nil when empty
	n     int        // ids in slots
	more  map[string]struct{}
	order []seenID // oldest first
}

// seenSlot is a slot of the table: key is the id's hash with its top bit
// set, so that 0 marks an empty slot.
type seenSlot struct {
	key uint64
	id  string
}

// seenID is a remembered id and its hash.
type seenID struct {
	id string
	h  uint64
}

func newSeenIDs() seenIDs { return seenIDs{} }

// idSeed seeds idHash for the life of the process.
var idSeed = maphash.MakeSeed()

// idHash is the hash seenIDs keeps an item id by.
func idHash(id string) uint64 { return maphash.String(idSeed, id) }

// seenKey is the table key of a hash.
func seenKey(h uint64) uint64 { return h | 1<<63 }

// slot returns the index of the slot holding key, or of the empty slot
// where it would go, and whether it holds it.
func (s *seenIDs) slot(key uint64) (int, bool) {
	mask := uint64(len(s.slots) - 1)
	for i := key & mask; ; i = (i + 1) & mask {
		switch s.slots[i].key {
		case key:
			return int(i), true
		case 0:
			return int(i), false
		}
	}
}

// has reports whether id, of hash h, is remembered.
func (s *seenIDs) has(id string, h uint64) bool {
	if s.n > 0 {
		if i, ok := s.slot(seenKey(h)); ok && s.slots[i].id == id {
			return true
		}
	}
	if len(s.more) > 0 {
		_, ok := s.more[id]
		return ok
	}
	return false
}

// held is how many ids it remembers.
func (s *seenIDs) held() int { return s.n + len(s.more) }

// add remembers id, of hash h, which it does not hold, forgetting the
// oldest beyond seenPerSubscriber. They are forgotten a quarter of the
// bound at a time (it holds up to 1.25 times the bound), so each id costs
// O(1) amortized rather than a copy of the whole list, which under garbage
// collection dominated a busy subscriber's time.
func (s *seenIDs) add(id string, h uint64) {
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	if i, ok := s.slot(seenKey(h)); ok {
		if s.slots[i].id != id {
			if s.more == nil {
				s.more = map[string]struct{}{}
			}
			s.more[id] = struct{}{}
		}
	} else {
		s.slots[i] = seenSlot{key: seenKey(h), id: id}
		s.n++
	}
	s.order = append(s.order, seenID{id, h})
	if len(s.order) > seenPerSubscriber+seenPerSubscriber/4 {
		drop := len(s.order) - seenPerSubscriber
		for _, old := range s.order[:drop] {
			s.forget(old.id, old.h)
		}
		s.order = append(s.order[:0], s.order[drop:]...)
	}
}

// grow doubles the table.
func (s *seenIDs) grow() {
	old := s.slots
	s.slots = make([]seenSlot, max(8, 2*len(old)))
	for _, sl := range old {
		if sl.key != 0 {
			i, _ := s.slot(sl.key)
			s.slots[i] = sl
		}
	}
}

// forget drops a remembered id, of hash h.
func (s *seenIDs) forget(id string, h uint64) {
	if s.n > 0 {
		if i, ok := s.slot(seenKey(h)); ok && s.slots[i].id == id {
			s.remove(i)
			return
		}
	}
	delete(s.more, id)
}

// remove empties slot i, moving back the entries after it that would no
// longer be found past the gap (deletion in linear probing, without
// tombstones).
func (s *seenIDs) remove(i int) {
	mask := len(s.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		if s.slots[j].key == 0 {
			break
		}
		home := int(s.slots[j].key) & mask
		// The entry at j stays when its home lies cyclically in (i, j].
		if (i < j && i < home && home <= j) || (i > j && (home > i || home <= j)) {
			continue
		}
		s.slots[i] = s.slots[j]
		i = j
	}
	s.slots[i] = seenSlot{}
	s.n--
}
