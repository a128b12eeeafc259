package node

import (
	"hash/maphash"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/hashtab"
)

// seenPerSubscriber bounds the comment ids a subscriber remembers to avoid
// counting an item twice.
const seenPerSubscriber = 20000

// seenIDs are the ids of the items a subscriber counted, so it never counts
// one twice: the latest seenPerSubscriber of them. They are kept by a hash
// of the id, computed once per item for all the subscribers it reaches
// (idHash), so the many lookups an item costs a spawn with many
// subscribers hash nothing, and a lookup of an item the subscriber has not
// counted, the common case, reads a slot or two (hashtab.Table).
type seenIDs struct {
	ids   hashtab.Table[struct{}]
	order []seenID // oldest first
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

// has reports whether id, of hash h, is remembered.
func (s *seenIDs) has(id string, h uint64) bool {
	_, ok := s.ids.Get(h, id)
	return ok
}

// held is how many ids it remembers.
func (s *seenIDs) held() int { return s.ids.Len() }

// add remembers id, of hash h, which it does not hold, forgetting the
// oldest beyond seenPerSubscriber. They are forgotten a quarter of the
// bound at a time (it holds up to 1.25 times the bound), so each id costs
// O(1) amortized rather than a copy of the whole list, which under garbage
// collection dominated a busy subscriber's time.
func (s *seenIDs) add(id string, h uint64) {
	s.ids.Put(h, id, struct{}{})
	s.order = append(s.order, seenID{id, h})
	if len(s.order) > seenPerSubscriber+seenPerSubscriber/4 {
		drop := len(s.order) - seenPerSubscriber
		for _, old := range s.order[:drop] {
			s.forget(old.id, old.h)
		}
		s.order = append(s.order[:0], s.order[drop:]...)
	}
}

// forget drops a remembered id, of hash h.
func (s *seenIDs) forget(id string, h uint64) { s.ids.Delete(h, id) }
