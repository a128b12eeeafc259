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
// (Extract); the writer extracts what is not extracted yet itself.
type Set struct {
	text, lang string
	extracted  sync.Once
	terms      []Term // in order of first appearance, at most maxTermsPerComment
	// sorted is done once byText and cands are set: only increments of
	// few comments need them (buildSmall), so they are made when first
	// asked for.
	sorted sync.Once
	byText []Term // the terms in order of their text
	cands  []Term // the hashtags and phrases in order of their text

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

// authors is the marshalled author sketch of a minute holding one comment,
// by author (nil for none), made once for the comments of one item.
func (s *Set) authors(author string) []byte {
	if author == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sketch == nil || s.author != author {
		sk, _ := hyperloglog.NewSketch(SketchPrecision, true)
		sk.Insert([]byte(author))
		s.sketch, _ = sk.MarshalBinary()
		s.author = author
	}
	return slices.Clone(s.sketch)
}

// Len is the number of terms in the set, which it extracts.
func (s *Set) Len() int {
	s.Extract()
	return len(s.terms)
}

// Extract finds the set's terms unless done; it may be called from any
// goroutine, and whichever comes first extracts them. The terms' texts
// share one allocation.
func (s *Set) Extract() {
	s.extracted.Do(func() {
		e := extractors.Get().(*extractor)
		defer extractors.Put(e)
		e.text, e.spans = e.text[:0], e.spans[:0]
		e.tk.scan(s.text, s.lang, func(term []byte, kind Kind) bool {
			for _, sp := range e.spans { // at most maxTermsPerComment
				if sp.end-sp.start == len(term) && bytes.Equal(e.text[sp.start:sp.end], term) {
					return false
				}
			}
			e.spans = append(e.spans, span{start: len(e.text), end: len(e.text) + len(term), kind: kind})
			e.text = append(e.text, term...)
			return true
		})
		s.text, s.lang = "", "" // the comment keeps them
		if len(e.spans) == 0 {
			return
		}
		all := string(e.text)
		s.terms = make([]Term, len(e.spans))
		for i, sp := range e.spans {
			s.terms[i] = Term{Text: all[sp.start:sp.end], Kind: sp.kind}
		}
	})
}

// extractor keeps a tokenizer's buffers, and the terms of the text being
// read, between extractions.
type extractor struct {
	tk    tokenizer
	text  []byte // the terms found, one after the other
	spans []span // where each is in text
}

type span struct {
	start, end int
	kind       Kind
}

var extractors = sync.Pool{New: func() any { return &extractor{} }}

// sort sets byText and cands, once.
func (s *Set) sort() {
	s.Extract()
	s.sorted.Do(func() {
		if len(s.terms) == 0 {
			return
		}
		s.byText = slices.Clone(s.terms)
		slices.SortFunc(s.byText, func(a, b Term) int { return strings.Compare(a.Text, b.Text) })
		n := 0
		for _, t := range s.byText {
			if t.Kind == Hashtag || t.Kind == Phrase {
				n++
			}
		}
		if n == 0 {
			return
		}
		s.cands = make([]Term, 0, n)
		for _, t := range s.byText {
			if t.Kind == Hashtag || t.Kind == Phrase {
				s.cands = append(s.cands, t)
			}
		}
	})
}
