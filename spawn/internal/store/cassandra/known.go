package cassandra

import (
	"cmp"
	"hash/maphash"
	"math/bits"
	"slices"
	"sync"
)

// What a Store remembers of the partitions it alone writes, so that the
// counted write (WriteFresh) reads nothing for a comment it can prove new.
//
// Before a Store writes its first row in a partition, it adds its writer
// id to the partition's writers set (in crawler_days, the row that lists
// the partition's day for its crawler). When a Store first sees a partition whose writers set is empty, it
// knows every row of the partition (none); from then on, as long as its
// own id is the only one there, every row of the partition is one it wrote,
// and it remembers their keys in a Bloom filter. A key the filter does not
// hold is then certainly not stored, and needs no read; a key it may hold
// (a comment delivered again, or a false positive) is read as before. A
// partition another writer has written (a crawler that moved, a spawn
// restarted, a removal that ran elsewhere does not count: deleting never
// makes a new comment held) is read key by key, as is one whose filter was
// given up to bound memory. See docs/decisions/0022-counted-writes-read-only-what-may-be-held.md.
const (
	// maxKnownKeys bounds the keys remembered over every partition (1.3
	// to 2 bytes a key); past it the least recently written partitions
	// are forgotten, and read key by key again.
	maxKnownKeys = 1 << 22
	// maxKnownParts bounds the partitions remembered (including those
	// marked as written by others).
	maxKnownParts = 1 << 16
	// firstBlockKeys is the capacity of a partition's first filter block;
	// each next block holds four times more (up to a million keys), with
	// one more bit a key (a scalable Bloom filter): block i, of 10+i bits
	// a key, gives false positives at 0.62^(10+i) — 0.8 %, 0.5 %, 0.3 %, …
	// — about 2 % for the whole chain of a partition of a hundred thousand
	// keys.
	firstBlockKeys = 256
	firstBlockBits = 10
)

// knownKeys is the memory of the partitions this Store alone writes.
type knownKeys struct {
	mu    sync.Mutex
	seed  maphash.Seed
	parts map[partKey]*partKeys
	keys  int    // keys held over every partition's filter
	tick  uint64 // use counter, for forgetting the least recent
	// maxKeys and maxParts are maxKnownKeys and maxKnownParts (smaller in
	// tests).
	maxKeys, maxParts int
}

// partKeys is one partition's memory: alone says that every row of the
// partition was written by this Store since it was empty, and then blocks
// hold every key it wrote there.
type partKeys struct {
	alone  bool
	blocks []bloomBlock
	n      int // keys added
	used   uint64
}

type bloomBlock struct {
	bits   []uint64
	cap    int
	n      int
	hashes uint64
}

func newKnownKeys() *knownKeys {
	return &knownKeys{seed: maphash.MakeSeed(), parts: make(map[partKey]*partKeys), maxKeys: maxKnownKeys, maxParts: maxKnownParts}
}

// observe records what a read of p's writers set found: whether it named
// a writer other than this Store (others) and whether it was empty. It
// reports whether p is alone: every key of p this Store wrote is
// remembered, and no one else wrote there.
func (m *knownKeys) observe(p partKey, others, empty bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.parts[p]
	switch {
	case others:
		if e != nil {
			m.keys -= e.n
		}
		m.parts[p] = &partKeys{used: m.next()}
		m.bound()
		return false
	case e != nil:
		e.used = m.next()
		return e.alone
	default:
		// Written by this Store before what it remembers (forgotten to
		// bound memory): its keys are not known.
		m.parts[p] = &partKeys{alone: empty, used: m.next()}
		m.bound()
		return empty
	}
}

// mayHold says whether p may hold k: false only for a partition alone
// whose filter proves k was never written.
func (m *knownKeys) mayHold(k rowKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mayHoldLocked(k)
}

func (m *knownKeys) mayHoldLocked(k rowKey) bool {
	e := m.parts[k.part]
	if e == nil || !e.alone {
		return true
	}
	h1, h2 := m.hash(k)
	for i := range e.blocks {
		if e.blocks[i].has(h1, h2) {
			return true
		}
	}
	return false
}

// add remembers keys about to be written in their partitions (those
// alone; others are read anyway). Added before the write, so that a key
// whose write failed is read, not taken for new, when it comes again.
func (m *knownKeys) add(keys []rowKey) { m.addKeys(keys, false) }

// wrote is add for a write that did not read the writers set first
// (Write): a partition with no memory yet is marked as not known whole,
// since a read of its writers set racing this write could find it empty.
func (m *knownKeys) wrote(keys []rowKey) { m.addKeys(keys, true) }

func (m *knownKeys) addKeys(keys []rowKey, mark bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		e := m.parts[k.part]
		if e == nil && mark {
			e = &partKeys{used: m.next()}
			m.parts[k.part] = e
		}
		if e == nil || !e.alone {
			continue
		}
		if len(e.blocks) == 0 || e.blocks[len(e.blocks)-1].n >= e.blocks[len(e.blocks)-1].cap {
			i := min(len(e.blocks), 6)
			c, perKey := firstBlockKeys<<(2*i), firstBlockBits+i
			e.blocks = append(e.blocks, bloomBlock{bits: make([]uint64, (c*perKey+63)/64), cap: c, hashes: uint64(perKey * 693 / 1000)})
		}
		h1, h2 := m.hash(k)
		e.blocks[len(e.blocks)-1].add(h1, h2)
		e.n++
		m.keys++
		e.used = m.next()
	}
	m.bound()
}

// forget drops what is remembered of p: it is read key by key from now on.
func (m *knownKeys) forget(p partKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.parts[p]; e != nil {
		m.keys -= e.n
		m.parts[p] = &partKeys{used: m.next()}
	}
}

func (m *knownKeys) next() uint64 {
	m.tick++
	return m.tick
}

// bound gives up, once a bound is passed, the least recently used
// partitions down to three quarters of it: past the keys' bound their
// filters (the partition stays marked as not alone, so that a read of its
// writers set cannot find it new again while a write of this Store may
// still be landing there), past the partitions' bound the marks
// themselves (a partition forgotten names this Store when next seen, so
// it is not taken as alone either).
func (m *knownKeys) bound() {
	if m.keys <= m.maxKeys && len(m.parts) <= m.maxParts {
		return
	}
	type use struct {
		p    partKey
		used uint64
	}
	order := make([]use, 0, len(m.parts))
	for p, e := range m.parts {
		order = append(order, use{p, e.used})
	}
	slices.SortFunc(order, func(a, b use) int { return cmp.Compare(a.used, b.used) })
	for _, u := range order {
		if m.keys <= m.maxKeys*3/4 {
			break
		}
		e := m.parts[u.p]
		m.keys -= e.n
		e.alone, e.blocks, e.n = false, nil, 0
	}
	for _, u := range order {
		if len(m.parts) <= m.maxParts*3/4 {
			break
		}
		m.keys -= m.parts[u.p].n
		delete(m.parts, u.p)
	}
}

// hash gives the two hashes a key's filter positions are made of.
func (m *knownKeys) hash(k rowKey) (uint64, uint64) {
	var h maphash.Hash
	h.SetSeed(m.seed)
	var b [24]byte
	put64(b[0:], uint64(k.part.crawler))
	put64(b[8:], uint64(k.part.day))
	put64(b[16:], uint64(k.pub))
	_, _ = h.Write(b[:])
	_, _ = h.WriteString(k.id)
	h1 := h.Sum64()
	return h1, bits.RotateLeft64(h1, 32)*0x9e3779b97f4a7c15 | 1
}

func put64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func (b *bloomBlock) add(h1, h2 uint64) {
	m := uint64(len(b.bits) * 64)
	for i := range b.hashes {
		x := (h1 + i*h2) % m
		b.bits[x/64] |= 1 << (x % 64)
	}
	b.n++
}

func (b *bloomBlock) has(h1, h2 uint64) bool {
	m := uint64(len(b.bits) * 64)
	for i := range b.hashes {
		x := (h1 + i*h2) % m
		if b.bits[x/64]&(1<<(x%64)) == 0 {
			return false
		}
	}
	return true
}
