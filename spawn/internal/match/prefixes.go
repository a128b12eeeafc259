package match

import (
	"slices"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// prefixSet finds the prefix wildcards (kube*) of a query index among the
// tokens of a text, in the pass over the tokens that finds the other text
// atoms. A prefix has at least query.MinPrefix letters, so at least three
// bytes: a token's first three bytes are its key, looked up first in a
// bitmap that stays in the processor's fastest cache and, when they pass
// it, in a small open-addressing table whose entries are the prefixes
// sharing those bytes, each then compared byte by byte with the token
// (query.HasPrefixWord). A token that no prefix starts like costs a load
// and a bit test.
type prefixSet struct {
	filter   [prefixFilterWords]uint64
	slots    []prefixSlot // by key; a zero key is a free slot
	mask     uint32
	prefixes []string // a prefix's index is its position, grouped by key
}

// prefixFilterWords is the bitmap's size in 64-bit words: 4,096 bits.
const prefixFilterWords = 64

// prefixSlot is the run of prefixes that start with one key's bytes.
type prefixSlot struct {
	key         uint32
	first, last int32 // prefixes[first:last]
}

// prefixKey is the key of a text's first three bytes, never 0.
func prefixKey(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | 1<<24
}

// prefixHash spreads a key over the bitmap (by its top bits) and the
// table (by its top bits folded onto the low ones).
func prefixHash(k uint32) uint32 { return k * 0x9e3779b1 }

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
	ps := &prefixSet{prefixes: sorted}
	ids := make(map[string]int32, len(sorted))
	size := 8
	for size < 2*len(sorted) {
		size *= 2
	}
	ps.slots, ps.mask = make([]prefixSlot, size), uint32(size-1)
	for i := 0; i < len(sorted); {
		k := prefixKey([]byte(sorted[i]))
		j := i
		for j < len(sorted) && prefixKey([]byte(sorted[j])) == k {
			ids[sorted[j]] = int32(j)
			j++
		}
		h := prefixHash(k)
		ps.filter[h>>26] |= 1 << (h >> 20 & 63)
		s := (h ^ h>>15) & ps.mask
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
func (ps *prefixSet) find(found []int32, tz *tokenizer, base int32, at *[]int32) []int32 {
	for i, t := range tz.toks {
		if t.end-t.start < 3 {
			continue
		}
		word := tz.text[t.start:t.end]
		k := prefixKey(word)
		h := prefixHash(k)
		if ps.filter[h>>26]&(1<<(h>>20&63)) == 0 {
			continue
		}
		for s := (h ^ h>>15) & ps.mask; ps.slots[s].key != 0; s = (s + 1) & ps.mask {
			if ps.slots[s].key != k {
				continue
			}
			for p := ps.slots[s].first; p < ps.slots[s].last; p++ {
				if query.HasPrefixWord(word, ps.prefixes[p]) {
					found = append(found, base+p)
					if at != nil {
						*at = append(*at, int32(i))
					}
				}
			}
			break
		}
	}
	return found
}
