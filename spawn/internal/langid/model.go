package langid

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"unicode/utf8"
)

//go:generate go run ./internal/gen -o data/ngrams.bin.gz

// ngramsGz is Lingua's trigram, bigram and unigram models of Languages,
// written by internal/gen (its doc comment gives the format).
//
//go:embed data/ngrams.bin.gz
var ngramsGz []byte

// model is Lingua's n-gram models of every language fused into tables
// keyed by n-gram, so that a text's trigram costs one look-up for all
// languages rather than one per language.
//
// Lingua scores a language by the log-probabilities of a text's distinct
// trigrams in that language, a trigram the language's model lacks
// counting as its first two letters (its bigram) and, failing that, its
// first letter; one the language has none of counts nothing. rows holds,
// for every bigram and every letter some model knows, the value each
// language gives it that way (0: nothing), one row of len(Languages)
// after another; row 0 is all zeros. A trigram some model knows has the
// row of its bigram (or letter) and the languages whose own trigram
// model knows it, with their log-probabilities, which replace the row's.
type model struct {
	n    int       // languages
	rows []float32 // n values a row
	uni  map[rune]int32
	bi   map[uint64]int32
	tri  hashTable // trigram → index into triRow and triStart

	triRow   []int32  // the row of the trigram's bigram, or letter
	triStart []uint32 // triLang[triStart[t]:triStart[t+1]] are trigram t's languages
	triLang  []uint8
	triLogp  []float32
}

func key2(a, b rune) uint64    { return uint64(a)<<21 | uint64(b) }
func key3(a, b, c rune) uint64 { return uint64(a)<<42 | uint64(b)<<21 | uint64(c) }

// loadModel reads the embedded models of langs, which must be the
// languages they were written for, in the same order.
func loadModel(gz []byte, langs []string) (*model, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("langid: models: %w", err)
	}
	r := bufio.NewReaderSize(zr, 1<<16)
	head, err := r.ReadString('\n')
	if err != nil || head != "bwlangid 1\n" {
		return nil, errors.New("langid: models: not a version 1 n-gram table")
	}
	readUvarint := func() (int, error) {
		v, err := binary.ReadUvarint(r)
		if err == nil && v > 1<<24 {
			err = fmt.Errorf("count %d out of range", v)
		}
		return int(v), err
	}
	var sbuf []byte
	readString := func() (string, error) {
		n, err := readUvarint()
		if err != nil {
			return "", err
		}
		if n > 64 {
			return "", fmt.Errorf("string of %d bytes", n)
		}
		sbuf = slices.Grow(sbuf[:0], n)[:n]
		if _, err := io.ReadFull(r, sbuf); err != nil {
			return "", err
		}
		return string(sbuf), nil
	}
	fail := func(err error) (*model, error) { return nil, fmt.Errorf("langid: models: %w", err) }

	n, err := readUvarint()
	if err != nil {
		return fail(err)
	}
	if n != len(langs) || n > 255 {
		return fail(fmt.Errorf("%d languages, want %d", n, len(langs)))
	}
	for i := range n {
		c, err := readString()
		if err != nil {
			return fail(err)
		}
		if c != langs[i] {
			return fail(fmt.Errorf("language %d is %q, want %q", i, c, langs[i]))
		}
	}

	type entry struct {
		key  uint64
		lang uint8
		logp float32
	}
	var unis, bis, tris []entry
	for lang := range n {
		for order := 1; order <= 3; order++ {
			count, err := readUvarint()
			if err != nil {
				return fail(err)
			}
			for range count {
				g, err := readString()
				if err != nil {
					return fail(err)
				}
				var b [4]byte
				if _, err := io.ReadFull(r, b[:]); err != nil {
					return fail(err)
				}
				logp := math.Float32frombits(binary.LittleEndian.Uint32(b[:]))
				if !(logp <= 0) {
					return fail(fmt.Errorf("log-probability %v of %q", logp, g))
				}
				var rs [3]rune
				k := 0
				for _, c := range g {
					if k == 3 {
						k++
						break
					}
					rs[k] = c
					k++
				}
				if k != order || !utf8.ValidString(g) {
					return fail(fmt.Errorf("%q is not a %d-gram", g, order))
				}
				e := entry{lang: uint8(lang), logp: logp}
				switch order {
				case 1:
					e.key = uint64(rs[0])
					unis = append(unis, e)
				case 2:
					e.key = key2(rs[0], rs[1])
					bis = append(bis, e)
				default:
					e.key = key3(rs[0], rs[1], rs[2])
					tris = append(tris, e)
				}
			}
		}
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return fail(errors.New("data after the last model"))
	}
	byKey := func(a, b entry) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return int(a.lang) - int(b.lang)
	}
	slices.SortFunc(unis, byKey)
	slices.SortFunc(bis, byKey)
	slices.SortFunc(tris, byKey)

	distinct := func(es []entry) int {
		d := 0
		for i := range es {
			if i == 0 || es[i].key != es[i-1].key {
				d++
			}
		}
		return d
	}
	nuni, nbi, ntri := distinct(unis), distinct(bis), distinct(tris)
	m := &model{n: n, rows: make([]float32, n, (1+nuni+nbi)*n), uni: make(map[rune]int32, nuni), bi: make(map[uint64]int32, nbi)}
	newRow := func() (int32, []float32) {
		i := len(m.rows) / n
		m.rows = append(m.rows, make([]float32, n)...)
		return int32(i), m.rows[i*n : (i+1)*n]
	}
	for i := 0; i < len(unis); {
		ri, row := newRow()
		k := unis[i].key
		for ; i < len(unis) && unis[i].key == k; i++ {
			row[unis[i].lang] = unis[i].logp
		}
		m.uni[rune(k)] = ri
	}
	for i := 0; i < len(bis); {
		k := bis[i].key
		ri, row := newRow()
		copy(row, m.rows[m.uniRow(rune(k>>21))*int32(n):])
		for ; i < len(bis) && bis[i].key == k; i++ {
			row[bis[i].lang] = bis[i].logp
		}
		m.bi[k] = ri
	}
	m.tri = newHashTable(ntri)
	m.triRow = make([]int32, 0, ntri)
	m.triStart = make([]uint32, 0, ntri+1)
	m.triLang = make([]uint8, 0, len(tris))
	m.triLogp = make([]float32, 0, len(tris))
	for i := 0; i < len(tris); {
		k := tris[i].key
		m.tri.put(k, int32(len(m.triRow)))
		m.triRow = append(m.triRow, m.biRow(rune(k>>42), rune(k>>21&(1<<21-1))))
		m.triStart = append(m.triStart, uint32(len(m.triLang)))
		for ; i < len(tris) && tris[i].key == k; i++ {
			m.triLang = append(m.triLang, tris[i].lang)
			m.triLogp = append(m.triLogp, tris[i].logp)
		}
	}
	m.triStart = append(m.triStart, uint32(len(m.triLang)))
	return m, nil
}

// uniRow is the row of a letter: 0 when no model knows it.
func (m *model) uniRow(a rune) int32 { return m.uni[a] }

// biRow is the row of a bigram, or of its first letter when no bigram
// model knows it.
func (m *model) biRow(a, b rune) int32 {
	if r, ok := m.bi[key2(a, b)]; ok {
		return r
	}
	return m.uni[a]
}

// score adds to sums, for every language, the log-probabilities of the
// distinct trigrams keys (key3, sorted, without repeats) as Lingua's
// low-accuracy mode counts them.
func (m *model) score(keys []uint64, sums []float64) {
	n := m.n
	sums = sums[:n]
	for _, k := range keys {
		var r []float32
		start, end := uint32(0), uint32(0)
		if t, ok := m.tri.get(k); ok {
			off := int(m.triRow[t]) * n
			r = m.rows[off : off+n : off+n]
			start, end = m.triStart[t], m.triStart[t+1]
		} else {
			off := int(m.biRow(rune(k>>42), rune(k>>21&(1<<21-1)))) * n
			r = m.rows[off : off+n : off+n]
		}
		// The trigram's languages (sorted) replace the row's values.
		j := start
		for l := range sums {
			x := r[l]
			if j < end && int(m.triLang[j]) == l {
				x = m.triLogp[j]
				j++
			}
			sums[l] += float64(x)
		}
	}
}

// hashTable maps trigram keys (never 0) to indexes: open addressing,
// linear probing, at most half full, each slot's key and value side by
// side, so that a look-up mostly reads one cache line. It is built once
// and then only read.
type hashTable struct {
	slots []slot
	shift uint // 64 - log2(len(slots))
}

type slot struct {
	key uint64
	val int32
}

func newHashTable(n int) hashTable {
	size, bits := 1, uint(0)
	for size < 2*n || size < 8 {
		size, bits = size*2, bits+1
	}
	return hashTable{slots: make([]slot, size), shift: 64 - bits}
}

// home is the slot where a key's probe starts (Fibonacci hashing).
func (t *hashTable) home(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

func (t *hashTable) put(k uint64, v int32) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		if s := &t.slots[i]; s.key == 0 || s.key == k {
			s.key, s.val = k, v
			return
		}
	}
}

func (t *hashTable) get(k uint64) (int32, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		switch s := &t.slots[i]; s.key {
		case k:
			return s.val, true
		case 0:
			return 0, false
		}
	}
}
