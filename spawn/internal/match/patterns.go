package match

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"

	ahocorasick "github.com/petar-dambovaliev/aho-corasick"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// Kinds of bytes, read once per byte of every item: ASCII bytes are
// classified by table, and a byte of a character beyond ASCII hands the
// word at hand to the word rules (query.NextWord).
const (
	byteSep   = iota // ASCII that ends a word
	byteWord         // ASCII letter, digit or '_'
	byteOther        // part of a character beyond ASCII
)

// byteKind is each byte's kind.
var byteKind = func() (t [256]uint8) {
	for b := range t {
		switch c := byte(b); {
		case c >= 0x80:
			t[b] = byteOther
		case query.IsWordRune(rune(c)):
			t[b] = byteWord
		}
	}
	return t
}()

// patternSet is a compiled set of lowercased text patterns, found
// whole-word in a text in one pass; Update shares it between indexes whose
// patterns it covers.
//
// A pattern occurs whole-word only where each of its words (query.NextWord)
// is a whole token of the text (a word of the text): the characters
// around an inner word are the pattern's own, and those around its first
// and last word are either the pattern's own or, by the whole-word rule
// (query.Bounded), characters of the text that join no word. So a pattern is
// found by cutting the text into tokens once and looking each token up in
// a hash table: a pattern of one run ("golang", "#go", "c++") under its
// run, a pattern of several ("new york", "e-mail") under its first two
// runs, which must be consecutive tokens. Each candidate is then checked
// byte by byte where it would sit, so hashes never decide a match. The
// cost per item is a hash per token and, for most tokens, one probe of a
// small bitmap, whatever the number of patterns. The rare patterns
// without a word byte ("++") are left to an Aho-Corasick automaton.
type patternSet struct {
	patterns []string         // lowercased, distinct; a pattern's id is its position
	ids      map[string]int32 // pattern → id

	filter  []uint64     // two bits per key: a token whose bits are not both set is no key
	slots   []tokenSlot  // open addressing by key
	mask    uint64       // len(slots) - 1
	entries []tokenEntry // the patterns under each key, grouped by key
	arena   []byte       // the entries' patterns, in entry order

	rest    *ahocorasick.AhoCorasick // patterns without a word byte, if any
	restIDs []int32                  // rest's pattern index → pattern id
}

// The token filter: filterWords 64-bit words, a key sets two bits of the
// word its top bits choose. 8 KiB stay in the processor's fastest cache,
// and with two bits per key a token that is no key gets past it about
// once in twenty for 4,000 keys (one bit in 4 KiB let one in ten
// through, each then a probe of the table).
const (
	filterWordBits = 10 // log2 of the number of words
	filterWords    = 1 << filterWordBits
)

// filterBits are the filter word and the two bits of a key.
func filterBits(key uint64) (word uint64, bits uint64) {
	return key & (filterWords - 1), 1<<(key>>filterWordBits&63) | 1<<(key>>(filterWordBits+6)&63)
}

// tokenSlot is a key of the table, kept to 8 bytes so that the table of
// a few thousand keys stays in the processor's caches: the slots are
// probed for every token that passes the filter, the entries only when a
// key is found.
type tokenSlot struct {
	// fp is the table key (tableKey), 0 for a free slot.
	fp uint32
	// info is the index of the key's first entry (slotNoEntry when the
	// key has none), and slotPairs when the key is also the first run of
	// a pattern of several runs: those are under the key of the pair of
	// it and the next token.
	info uint32
}

const (
	slotPairs   = 1 << 31
	slotNoEntry = slotPairs - 1 // a first run's key without patterns of one run
)

// tokenEntry is a pattern to check where a token was found.
type tokenEntry struct {
	pat  int32     // pattern id
	lead int32     // bytes of the pattern before its first run
	off  int32     // the pattern is arena[off:off+len]
	n    uint32    // the pattern's length, and entryLast on the key's last entry
	head [2]uint64 // its first 16 bytes (little-endian, zero-padded): most patterns are shorter
}

// entryLast marks the last entry of a key in tokenEntry.n.
const entryLast = 1 << 31

// len is the length of the entry's pattern.
func (en *tokenEntry) len() int { return int(en.n &^ entryLast) }

// token is a word of a folded text (query.NextWord) and its hash.
type token struct {
	start, end int32
	hash       uint64
}

// tokenizer is the per-call working memory of find: the lowercased text,
// with room to read a word past its end, and its tokens.
type tokenizer struct {
	text []byte
	toks []token
}

// compile builds the pattern set of wanted patterns.
func compile(wanted map[string]struct{}) *patternSet {
	ps := &patternSet{ids: make(map[string]int32, len(wanted)), filter: make([]uint64, filterWords)}
	for p := range wanted {
		ps.patterns = append(ps.patterns, p)
	}
	slices.Sort(ps.patterns)
	type keyed struct {
		key  uint64
		pat  int32
		lead int32
	}
	var byKey []keyed
	firsts := map[uint64]bool{} // keys of first runs of several-run patterns
	var rest []string
	var tz tokenizer
	for i, p := range ps.patterns {
		ps.ids[p] = int32(i)
		tz.text = append(append(tz.text[:0], p...), make([]byte, 8)...)[:len(p)]
		toks := tz.tokens(tz.toks[:0])
		if len(toks) == 0 {
			rest = append(rest, p)
			ps.restIDs = append(ps.restIDs, int32(i))
			continue
		}
		k := toks[0].hash
		if len(toks) == 1 {
			byKey = append(byKey, keyed{k, int32(i), toks[0].start})
		} else {
			firsts[k] = true
			byKey = append(byKey, keyed{pairKey(k, toks[1].hash), int32(i), toks[0].start})
		}
	}
	// Patterns are grouped by table key, in the order of their ids.
	slices.SortStableFunc(byKey, func(a, b keyed) int { return cmp.Compare(tableKey(a.key), tableKey(b.key)) })
	keys := map[uint32]bool{}
	for _, k := range byKey {
		keys[tableKey(k.key)] = true
	}
	for k := range firsts {
		keys[tableKey(k)] = true
	}
	size := 8
	for size < 2*len(keys) {
		size *= 2
	}
	ps.slots, ps.mask = make([]tokenSlot, size), uint64(size-1)
	for i := 0; i < len(byKey); {
		k := tableKey(byKey[i].key)
		sl, _ := ps.insert(k)
		sl.info = uint32(len(ps.entries))
		for ; i < len(byKey) && tableKey(byKey[i].key) == k; i++ {
			ps.setFilter(byKey[i].key)
			p := ps.patterns[byKey[i].pat]
			var head [16]byte
			copy(head[:], p)
			ps.entries = append(ps.entries, tokenEntry{pat: byKey[i].pat, lead: byKey[i].lead, off: int32(len(ps.arena)), n: uint32(len(p)),
				head: [2]uint64{binary.LittleEndian.Uint64(head[:8]), binary.LittleEndian.Uint64(head[8:])}})
			ps.arena = append(ps.arena, p...)
		}
		ps.entries[len(ps.entries)-1].n |= entryLast
	}
	for k := range firsts {
		ps.setFilter(k)
		sl, fresh := ps.insert(tableKey(k))
		if fresh {
			sl.info = slotNoEntry
		}
		sl.info |= slotPairs
	}
	if len(rest) > 0 {
		b := ahocorasick.NewAhoCorasickBuilder(ahocorasick.Opts{MatchKind: ahocorasick.StandardMatch, DFA: true})
		ac := b.Build(rest)
		ps.rest = &ac
	}
	return ps
}

// insert returns the slot of a table key, taking a free one if it has
// none (fresh).
func (ps *patternSet) insert(k uint32) (sl *tokenSlot, fresh bool) {
	i := uint64(k) & ps.mask
	for ps.slots[i].fp != 0 && ps.slots[i].fp != k {
		i = (i + 1) & ps.mask
	}
	fresh = ps.slots[i].fp == 0
	ps.slots[i].fp = k
	return &ps.slots[i], fresh
}

// setFilter lets a token's key through the filter.
func (ps *patternSet) setFilter(key uint64) {
	w, b := filterBits(key)
	ps.filter[w] |= b
}

// lookup returns the slot of a token's key, or nil.
func (ps *patternSet) lookup(key uint64) *tokenSlot {
	w, b := filterBits(key)
	if ps.filter[w]&b != b {
		return nil
	}
	k := tableKey(key)
	for i := uint64(k) & ps.mask; ; i = (i + 1) & ps.mask {
		switch ps.slots[i].fp {
		case k:
			return &ps.slots[i]
		case 0:
			return nil
		}
	}
}

// tableKey is the half of a token's key the table is keyed by. Keys that
// share it share a slot, whose entries are all checked.
func tableKey(key uint64) uint32 {
	return max(uint32(key>>32), 1)
}

// pairKey is the table key of two consecutive tokens.
func pairKey(k1, k2 uint64) uint64 {
	return max((k1^bits.RotateLeft64(k2, 29))*0x9e3779b97f4a7c15, 1)
}

// lower sets tz.text to text folded (query.Fold: lowercased exactly as
// strings.ToLower would, invalid UTF-8 becoming U+FFFD, invisible
// characters dropped), without allocating once the buffer has grown, and
// cuts it into tokens. Positions are positions in the folded text, whose
// length may differ from the original's.
func (tz *tokenizer) lower(text string) {
	tz.text = query.AppendFold(tz.text[:0], text)
	n := len(tz.text)
	tz.text = append(tz.text, 0, 0, 0, 0, 0, 0, 0, 0)[:n]
	tz.toks = tz.tokens(tz.toks[:0])
}

// tokens appends the tokens of tz.text to toks. tz.text must have 8
// bytes of room past its end, which hashing reads. ASCII words are cut
// here, byte by byte; a word at or next to a character beyond ASCII is
// cut by query.NextWord.
func (tz *tokenizer) tokens(toks []token) []token {
	text := tz.text
	for i := 0; i < len(text); {
		k := byteKind[text[i]]
		if k == byteSep {
			i++
			continue
		}
		start := i
		for i < len(text) && byteKind[text[i]] == byteWord {
			i++
		}
		if i < len(text) && byteKind[text[i]] == byteOther {
			if start, i = query.NextWord(text, start); start == len(text) {
				break
			}
		}
		toks = append(toks, token{start: int32(start), end: int32(i), hash: hashToken(text[:cap(text)], start, i)})
	}
	return toks
}

// hashToken hashes buf[start:end] eight bytes at a time; buf must extend
// at least 8 bytes past end. The result is never 0, the free slot.
func hashToken(buf []byte, start, end int) uint64 {
	h := uint64(end-start) * 0x9e3779b97f4a7c15
	for p := start; p < end; p += 8 {
		w := binary.LittleEndian.Uint64(buf[p : p+8])
		if rem := end - p; rem < 8 {
			w &= 1<<(8*rem) - 1
		}
		h = (h ^ w) * 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	h ^= h >> 29
	h *= 0x94d049bb133111eb
	h ^= h >> 32
	return max(h, 1)
}

// find appends to found the id of every pattern that occurs whole-word in
// tz's text, once per occurrence at most: the caller removes repeats. When
// at is not nil it appends to *at, for each, the position of the token
// its first word is, or -1 for a pattern without a word.
func (ps *patternSet) find(found []int32, tz *tokenizer, at *[]int32) []int32 {
	if len(ps.entries) > 0 {
		for i, t := range tz.toks {
			sl := ps.lookup(t.hash)
			if sl == nil {
				continue
			}
			n := len(found)
			found = ps.check(found, tz.text, int(t.start), sl)
			if sl.info&slotPairs != 0 && i+1 < len(tz.toks) {
				if sl := ps.lookup(pairKey(t.hash, tz.toks[i+1].hash)); sl != nil {
					found = ps.check(found, tz.text, int(t.start), sl)
				}
			}
			if at != nil {
				for range len(found) - n {
					*at = append(*at, int32(i))
				}
			}
		}
	}
	if ps.rest != nil {
		scan := ps.rest.IterOverlappingByte(tz.text)
		for m := scan.Next(); m != nil; m = scan.Next() {
			if query.Bounded(tz.text, m.Start(), m.End()) {
				found = append(found, ps.restIDs[m.Pattern()])
				if at != nil {
					*at = append(*at, -1)
				}
			}
		}
	}
	return found
}

// check appends the patterns of a slot that occur whole-word with their
// first run at the token starting at s.
func (ps *patternSet) check(found []int32, lower []byte, s int, sl *tokenSlot) []int32 {
	i := sl.info &^ slotPairs
	if i == slotNoEntry {
		return found
	}
	for {
		en := &ps.entries[i]
		if ps.occurs(lower, s, en) {
			found = append(found, en.pat)
		}
		if en.n&entryLast != 0 {
			return found
		}
		i++
	}
}

// occurs reports whether en occurs whole-word with its first run at the
// token starting at s.
func (ps *patternSet) occurs(lower []byte, s int, en *tokenEntry) bool {
	n := en.len()
	p := s - int(en.lead)
	end := p + n
	if p < 0 || end > len(lower) || !query.Bounded(lower, p, end) {
		return false
	}
	if n > 16 {
		return string(lower[p:end]) == string(ps.arena[en.off:int(en.off)+n])
	}
	// lower has 8 bytes of room past its end.
	w0 := binary.LittleEndian.Uint64(lower[p : p+8 : cap(lower)])
	if n <= 8 {
		mask := uint64(1)<<(8*n) - 1
		return w0&mask == en.head[0]&mask
	}
	mask := uint64(1)<<(8*(n-8)) - 1
	return w0 == en.head[0] && binary.LittleEndian.Uint64(lower[p+8:p+16:cap(lower)])&mask == en.head[1]&mask
}
