package terms

import (
	"bytes"
	"slices"
	"strings"
	"sync"
)

// Set is the distinct terms of one text, extracted once: a spawn extracts
// an item's terms when the item first becomes a comment, away from the
// store writer, and every subscriber's comment made of the item shares
// them (Builder.AddSet).
type Set struct {
	terms []Term // in order of first appearance, at most maxTermsPerComment
	// sorted is done once byText and cands are set: only increments of
	// few comments need them (buildSmall), so they are made when first
	// asked for.
	sorted sync.Once
	byText []Term // the terms in order of their text
	cands  []Term // the hashtags and phrases in order of their text
}

// Len is the number of terms in the set.
func (s *Set) Len() int { return len(s.terms) }

// Extract returns the terms of a text in the language lang, the terms
// Builder.Add would count for a comment with that text and language. The
// terms' texts share one allocation.
func Extract(text, lang string) *Set {
	e := extractors.Get().(*extractor)
	defer extractors.Put(e)
	e.text, e.spans = e.text[:0], e.spans[:0]
	e.tk.scan(text, lang, func(term []byte, kind Kind) bool {
		for _, s := range e.spans { // at most maxTermsPerComment
			if s.end-s.start == len(term) && bytes.Equal(e.text[s.start:s.end], term) {
				return false
			}
		}
		e.spans = append(e.spans, span{start: len(e.text), end: len(e.text) + len(term), kind: kind})
		e.text = append(e.text, term...)
		return true
	})
	set := &Set{}
	if len(e.spans) == 0 {
		return set
	}
	all := string(e.text)
	set.terms = make([]Term, len(e.spans))
	for i, s := range e.spans {
		set.terms[i] = Term{Text: all[s.start:s.end], Kind: s.kind}
	}
	return set
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
