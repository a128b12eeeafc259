package terms

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"github.com/axiomhq/hyperloglog"
)

// Set is the distinct terms of one text, extracted once: a spawn makes a
// set for an item when the item first becomes a comment, every
// subscriber's comment made of the item shares it (Builder.AddSet), and a
// goroutine beside the store writer extracts it ahead of the writer
// (Extract); the analysis of a written batch extracts any it gets to first.
type Set struct {
	text, lang string
	extracted  sync.Once
	all        string // the terms' texts, one after another
	terms      []span // in order of first appearance, at most maxTermsPerComment
	// sorted is done once more is set: only increments of few comments
	// need it (buildSmall), so it is made when first asked for.
	sorted sync.Once
	more   *sortedSet
}

// span is where a term's text is in its set's all, its kind and its hash
// (hashOf).
type span struct {
	hash       uint64
	start, end uint16 // a set's terms take at most 64 × 129 bytes
	kind       Kind
}

// sortedSet is what increments of few comments read of a set.
type sortedSet struct {
	byText []span // the terms in order of their text
	cands  []span // the hashtags and phrases in order of their text

	mu     sync.Mutex
	author string // whose sketch is in sketch
	sketch []byte // the author sketch of a minute of one comment by author
}

// NewSet returns the set of terms of a text in the language lang, not
// extracted yet: they are the terms Builder.Add would count for a comment
// with that text and language.
func NewSet(text, lang string) *Set { return &Set{text: text, lang: lang} }

// Extract returns the set of terms of a text in the language lang,
// extracted.
func Extract(text, lang string) *Set {
	s := NewSet(text, lang)
	s.Extract()
	return s
}

// Len is the number of terms in the set, which it extracts.
func (s *Set) Len() int {
	s.Extract()
	return len(s.terms)
}

// textOf is a term's text.
func (s *Set) textOf(sp span) string { return s.all[sp.start:sp.end] }

// Extract finds the set's terms unless done; it may be called from any
// goroutine, and whichever comes first extracts them.
func (s *Set) Extract() {
	s.extracted.Do(func() {
		e := extractors.Get().(*extractor)
		defer extractors.Put(e)
		e.text, e.spans = e.text[:0], e.spans[:0]
		e.tk.scan(s.text, s.lang, func(term []byte, kind Kind, h uint64) bool {
			for _, sp := range e.spans { // at most maxTermsPerComment
				if sp.hash == h && bytes.Equal(e.text[sp.start:sp.end], term) {
					return false
				}
			}
			e.spans = append(e.spans, span{hash: h, start: uint16(len(e.text)), end: uint16(len(e.text) + len(term)), kind: kind})
			e.text = append(e.text, term...)
			return true
		})
		s.text, s.lang = "", "" // the comment keeps them
		if len(e.spans) == 0 {
			return
		}
		s.all = string(e.text)
		s.terms = slices.Clone(e.spans)
	})
}

// sort makes s.more, once.
func (s *Set) sort() *sortedSet {
	s.Extract()
	s.sorted.Do(func() {
		m := &sortedSet{}
		s.more = m
		if len(s.terms) == 0 {
			return
		}
		m.byText = slices.Clone(s.terms)
		slices.SortFunc(m.byText, func(a, b span) int { return strings.Compare(s.textOf(a), s.textOf(b)) })
		n := 0
		for _, t := range m.byText {
			if t.kind == Hashtag || t.kind == Phrase {
				n++
			}
		}
		if n == 0 {
			return
		}
		m.cands = make([]span, 0, n)
		for _, t := range m.byText {
			if t.kind == Hashtag || t.kind == Phrase {
				m.cands = append(m.cands, t)
			}
		}
	})
	return s.more
}

// authors is the marshalled author sketch of a minute holding one comment,
// by author (nil for none), made once for the comments of one item.
func (s *Set) authors(author string) []byte {
	if author == "" {
		return nil
	}
	m := s.sort()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sketch == nil || m.author != author {
		sk, _ := hyperloglog.NewSketch(SketchPrecision, true)
		sk.Insert([]byte(author))
		m.sketch, _ = sk.MarshalBinary()
		m.author = author
	}
	return slices.Clone(m.sketch)
}

// extractor keeps a tokenizer's buffers, and the terms of the text being
// read, between extractions.
type extractor struct {
	tk    tokenizer
	text  []byte // the terms found, one after the other
	spans []span // where each is in text
}

var extractors = sync.Pool{New: func() any { return &extractor{} }}
