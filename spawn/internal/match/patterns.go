package match

import (
	"hash/maphash"
	"math/bits"
	"slices"

	ahocorasick "github.com/petar-dambovaliev/aho-corasick"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// wordByte is query.IsWordByte as a table, read once per byte of every
// item.
var wordByte = func() (t [256]bool) {
	for b := range t {
		t[b] = query.IsWordByte(byte(b))
	}
	return t
}()

// patternSet is a compiled set of lowercased text patterns, found
// whole-word in a lowercased text in one pass; Update shares it between
// indexes whose patterns it covers.
//
// A pattern occurs whole-word only where each of its runs of word bytes
// is a whole token of the text (a maximal run of word bytes): the bytes
// around an inner run are the pattern's own non-word bytes, and those
// around its first and last run are either the pattern's non-word bytes
// or, by the whole-word rule, non-word bytes of the text. So a pattern is
// found by tokenizing the text once and looking each token up in a hash
// table: a pattern of one run ("golang", "#go", "c++") under its run, a
// pattern of several ("new york", "e-mail") under its first two runs,
// which must be consecutive tokens. Each candidate is then checked byte
// by byte where it would sit, so the table's hashes never decide a match.
// The cost per item is one hash and one probe per token, whatever the
// number of patterns. The rare patterns without a word byte ("++") are
// left to an Aho-Corasick automaton.
type patternSet struct {
	patterns []string         // lowercased, distinct; a pattern's id is its position
	ids      map[string]int32 // pattern → id

	seed    maphash.Seed
	keys    []uint64    // open addressing by key; 0 marks a free slot
	slots   []tokenSlot // parallel to keys
	mask    uint64
	entries []tokenEntry // the patterns under each key, grouped by key

	rest    *ahocorasick.AhoCorasick // patterns without a word byte, if any
	restIDs []int32                  // rest's pattern index → pattern id
}

// tokenSlot is what a key of the table leads to.
type tokenSlot struct {
	lo, hi int32 // patternSet.entries[lo:hi]
	// pairs is set on a token's slot when the token is the first run of
	// a pattern of several runs: those are under the key of the pair of
	// it and the next token.
	pairs bool
}

// tokenEntry is a pattern to check where a token was found.
type tokenEntry struct {
	pat  int32  // pattern id
	lead int32  // bytes of the pattern before its first run
	text string // the pattern
}

// compile builds the pattern set of wanted patterns.
func compile(wanted map[string]struct{}) *patternSet {
	ps := &patternSet{ids: make(map[string]int32, len(wanted)), seed: maphash.MakeSeed()}
	for p := range wanted {
		ps.patterns = append(ps.patterns, p)
	}
	slices.Sort(ps.patterns)
	type keyed struct {
		key   uint64
		entry tokenEntry
	}
	var byKey []keyed
	firsts := map[uint64]bool{} // single keys of first runs of several-run patterns
	var rest []string
	for i, p := range ps.patterns {
		ps.ids[p] = int32(i)
		s0, e0 := nextToken(p, 0)
		if s0 == e0 {
			rest = append(rest, p)
			ps.restIDs = append(ps.restIDs, int32(i))
			continue
		}
		e := tokenEntry{pat: int32(i), lead: int32(s0), text: p}
		k := ps.tokenKey([]byte(p[s0:e0]))
		if s1, e1 := nextToken(p, e0); s1 == e1 {
			byKey = append(byKey, keyed{k, e})
		} else {
			firsts[k] = true
			byKey = append(byKey, keyed{pairKey(k, ps.tokenKey([]byte(p[s1:e1]))), e})
		}
	}
	slices.SortStableFunc(byKey, func(a, b keyed) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	keys := len(firsts)
	for i := range byKey {
		if i == 0 || byKey[i].key != byKey[i-1].key {
			keys++
		}
	}
	size := 8
	for size < 2*keys {
		size *= 2
	}
	ps.keys, ps.slots, ps.mask = make([]uint64, size), make([]tokenSlot, size), uint64(size-1)
	for i := 0; i < len(byKey); {
		j := i
		for j < len(byKey) && byKey[j].key == byKey[i].key {
			ps.entries = append(ps.entries, byKey[j].entry)
			j++
		}
		at := ps.insert(byKey[i].key)
		ps.slots[at].lo, ps.slots[at].hi = int32(len(ps.entries)-(j-i)), int32(len(ps.entries))
		i = j
	}
	for k := range firsts {
		ps.slots[ps.insert(k)].pairs = true
	}
	if len(rest) > 0 {
		b := ahocorasick.NewAhoCorasickBuilder(ahocorasick.Opts{MatchKind: ahocorasick.StandardMatch, DFA: true})
		ac := b.Build(rest)
		ps.rest = &ac
	}
	return ps
}

// insert returns the slot of key, taking a free one if key has none.
func (ps *patternSet) insert(key uint64) uint64 {
	i := key & ps.mask
	for ps.keys[i] != 0 && ps.keys[i] != key {
		i = (i + 1) & ps.mask
	}
	ps.keys[i] = key
	return i
}

// lookup returns the slot of key, or -1.
func (ps *patternSet) lookup(key uint64) int {
	for i := key & ps.mask; ; i = (i + 1) & ps.mask {
		switch ps.keys[i] {
		case key:
			return int(i)
		case 0:
			return -1
		}
	}
}

// tokenKey is the table key of a token: never 0, the free slot.
func (ps *patternSet) tokenKey(tok []byte) uint64 {
	return max(maphash.Bytes(ps.seed, tok), 1)
}

// pairKey is the table key of two consecutive tokens.
func pairKey(k1, k2 uint64) uint64 {
	return max((k1^bits.RotateLeft64(k2, 29))*0x9e3779b97f4a7c15, 1)
}

// nextToken returns the bounds of the first run of word bytes of s at or
// after i; start == end when there is none.
func nextToken[T string | []byte](s T, i int) (start, end int) {
	for i < len(s) && !wordByte[s[i]] {
		i++
	}
	start = i
	for i < len(s) && wordByte[s[i]] {
		i++
	}
	return start, i
}

// find appends to found the id of every pattern that occurs whole-word in
// lower, a lowercased text, once per occurrence at most: the caller
// removes repeats.
func (ps *patternSet) find(found []int32, lower []byte) []int32 {
	if len(ps.entries) > 0 {
		for s, e := nextToken(lower, 0); s < e; s, e = nextToken(lower, e) {
			k := ps.tokenKey(lower[s:e])
			at := ps.lookup(k)
			if at < 0 {
				continue
			}
			slot := ps.slots[at]
			found = ps.check(found, lower, s, slot)
			if !slot.pairs {
				continue
			}
			s1, e1 := nextToken(lower, e)
			if s1 == e1 {
				continue
			}
			if at := ps.lookup(pairKey(k, ps.tokenKey(lower[s1:e1]))); at >= 0 {
				found = ps.check(found, lower, s, ps.slots[at])
			}
		}
	}
	if ps.rest != nil {
		scan := ps.rest.IterOverlappingByte(lower)
		for m := scan.Next(); m != nil; m = scan.Next() {
			if bounded(lower, m.Start(), m.End()) {
				found = append(found, ps.restIDs[m.Pattern()])
			}
		}
	}
	return found
}

// check appends the patterns of a slot that occur whole-word with their
// first run at the token starting at s.
func (ps *patternSet) check(found []int32, lower []byte, s int, slot tokenSlot) []int32 {
	for _, en := range ps.entries[slot.lo:slot.hi] {
		p := s - int(en.lead)
		end := p + len(en.text)
		if p >= 0 && end <= len(lower) && string(lower[p:end]) == en.text && bounded(lower, p, end) {
			found = append(found, en.pat)
		}
	}
	return found
}
