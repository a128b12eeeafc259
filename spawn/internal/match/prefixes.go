package match

import (
	"encoding/binary"
	"slices"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// prefixSet finds the prefix wildcards (kube*) of a query index among the
// tokens of a text, in the pass over the tokens that finds the other text
// atoms. Every prefix has at least keyLen bytes (the shortest prefix's
// length, up to 8; at least three, query.MinPrefix letters): a token's
// first keyLen bytes are its key, looked up first in a bitmap that stays
// in the processor's fastest cache and, when they pass it, in a small
// open-addressing table whose entries are the prefixes sharing those
// bytes, each then compared with the token eight bytes at a time. A token
// that no prefix starts like costs a load and a bit test.
type prefixSet struct {
	filter   [prefixFilterWords]uint64
	slots    []prefixSlot // by key; a zero key is a free slot
	mask     uint64
	keyLen   int           // bytes of a key
	keyMask  uint64        // the key's bytes of a little-endian load
	prefixes []prefixEntry // a prefix's index is its position, grouped by key
}

// prefixFilterWords is the bitmap's size in 64-bit words: 4,096 bits.
const prefixFilterWords = 64

// prefixSlot is the run of prefixes that start with one key's bytes.
type prefixSlot struct {
	key         uint64
	first, last int32 // prefixes[first:last]
}

// prefixEntry is a prefix: its bytes, and its first eight of them
// (little-endian, zero-padded) with the mask of those it has.
type prefixEntry struct {
	text       string
	head, mask uint64
}

// prefixKey is the key of a text's first bytes (b has eight bytes of
// room from its start), never 0.
func (ps *prefixSet) prefixKey(b []byte) uint64 {
	return binary.LittleEndian.Uint64(b[:8])&ps.keyMask | 1<<63
}

// prefixHash spreads a key over the bitmap (by its top bits) and the
// table (by its top bits folded onto the low ones).
func prefixHash(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }

// newPrefixSet compiles the prefixes (distinct, each of three bytes or
// more) and returns the index of each in the set, or nil when there are
// none.
func newPrefixSet(prefixes []string) (*prefixSet, map[string]int32) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	sorted := slices.Clone(prefixes)
	// Sorting groups the prefixes of a key together.
	slices.Sort(sorted)
	ps := &prefixSet{keyLen: 8}
	for _, p := range sorted {
		ps.keyLen = min(ps.keyLen, len(p))
	}
	ps.keyMask = 1<<(8*ps.keyLen) - 1
	if ps.keyLen == 8 {
		ps.keyMask = ^uint64(0) >> 1 // the top bit marks a key
	}
	ids := make(map[string]int32, len(sorted))
	size := 8
	for size < 2*len(sorted) {
		size *= 2
	}
	ps.slots, ps.mask = make([]prefixSlot, size), uint64(size-1)
	var buf [16]byte
	for _, p := range sorted {
		ids[p] = int32(len(ps.prefixes))
		clear(buf[:])
		copy(buf[:], p)
		n := min(len(p), 8)
		ps.prefixes = append(ps.prefixes, prefixEntry{text: p, head: binary.LittleEndian.Uint64(buf[:8]), mask: 1<<(8*n) - 1})
	}
	for i := 0; i < len(sorted); {
		copy(buf[:], sorted[i])
		k := ps.prefixKey(buf[:])
		j := i
		for j < len(sorted) && ps.prefixes[j].head&ps.keyMask == k&ps.keyMask {
			j++
		}
		h := prefixHash(k)
		ps.filter[h>>58] |= 1 << (h >> 52 & 63)
		s := (h ^ h>>29) & ps.mask
		for ps.slots[s].key != 0 {
			s = (s + 1) & ps.mask
		}
		ps.slots[s] = prefixSlot{key: k, first: int32(i), last: int32(j)}
		i = j
	}
	return ps, ids
}

// find appends, for each token of tz that a prefix begins, base plus the
// prefix's index, and when at is not nil the token's position to *at.
// tz.text has eight bytes of room past its end.
func (ps *prefixSet) find(found []int32, tz *tokenizer, base int32, at *[]int32) []int32 {
	text := tz.text[:cap(tz.text)]
	for i, t := range tz.toks {
		// A token shorter than a key is not left out here: whether it
		// is would be a branch the processor guesses wrong for about
		// one token in two of ordinary text. Its key takes bytes past
		// its end, and no prefix, of keyLen bytes at least, passes the
		// length test below.
		n := int(t.end - t.start)
		k := ps.prefixKey(text[t.start:])
		h := prefixHash(k)
		if ps.filter[h>>58]&(1<<(h>>52&63)) == 0 {
			continue
		}
		for s := (h ^ h>>29) & ps.mask; ps.slots[s].key != 0; s = (s + 1) & ps.mask {
			if ps.slots[s].key != k {
				continue
			}
			w := binary.LittleEndian.Uint64(text[t.start:][:8])
			for p := ps.slots[s].first; p < ps.slots[s].last; p++ {
				e := &ps.prefixes[p]
				if len(e.text) > n || w&e.mask != e.head {
					continue
				}
				if len(e.text) > 8 && string(text[int(t.start)+8:int(t.start)+len(e.text)]) != e.text[8:] {
					continue
				}
				// A combining mark after the prefix belongs to its last
				// letter (query.HasPrefixWord); marks are beyond ASCII.
				if len(e.text) < n && text[int(t.start)+len(e.text)] >= utf8.RuneSelf && !query.HasPrefixWord(text[t.start:t.end], e.text) {
					continue
				}
				found = append(found, base+p)
				if at != nil {
					*at = append(*at, int32(i))
				}
			}
			break
		}
	}
	return found
}
