package terms

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/blackwidow-crawl/blackwidow/api"
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
	// sorted is done once more is set: only increments of one comment
	// need it (buildOne), so it is made when first asked for.
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

// sortedSet is what increments of one comment read of a set.
type sortedSet struct {
	byText []span // the terms in order of their text
	cands  []span // the hashtags and phrases in order of their text

	mu     sync.Mutex
	author string // whose sketch is in sketch
	sketch []byte // the author sketch of a minute of one comment by author
	// The hour's terms of every increment of one comment made of the set
	// (oneTerms), made once and shared read-only.
	oneOnce  sync.Once
	one      []api.TermCount
	oneOther int64
	// shared is the whole analytics of an increment of one comment whose
	// matched terms filter none of the candidates, for a comment fetched
	// in sharedAt's minute, by sharedBy, of score sharedScore.
	shared      *api.IncrementAnalytics
	sharedAt    time.Time
	sharedBy    string
	sharedScore float64
	sharedMood  int8
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
		n := len(s.terms)
		if n == 0 {
			return
		}
		cands := 0
		for _, t := range s.terms {
			if t.kind == Hashtag || t.kind == Phrase {
				cands++
			}
		}
		// One allocation for both lists; the terms (at most
		// maxTermsPerComment) are put in order by insertion, comparing
		// their first eight bytes as numbers and their text only when
		// those are equal.
		buf := make([]span, n, n+cands)
		var keys [maxTermsPerComment]uint64
		for i, t := range s.terms {
			k := prefixKey(s.textOf(t))
			j := i
			for ; j > 0 && (keys[j-1] > k || keys[j-1] == k && s.textOf(buf[j-1]) > s.textOf(t)); j-- {
				keys[j], buf[j] = keys[j-1], buf[j-1]
			}
			keys[j], buf[j] = k, t
		}
		m.byText = buf[:n:n]
		if cands > 0 {
			m.cands = buf[n:n]
			for _, t := range buf[:n] {
				if t.kind == Hashtag || t.kind == Phrase {
					m.cands = append(m.cands, t)
				}
			}
		}
	})
	return s.more
}

// authors is the marshalled author sketch of a minute holding one comment,
// by author (nil for none), made once for the comments of one item and
// shared, read-only, by their increments.
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
	return m.sketch
}

// oneTerms is the hour's terms of an increment of one comment made of the
// set: each counts once, so the best are the first by text; other counts
// the rest. Made once per item and shared, read-only.
func (s *Set) oneTerms() ([]api.TermCount, int64) {
	m := s.sort()
	m.oneOnce.Do(func() {
		n := len(m.byText)
		if n == 0 {
			return
		}
		k := min(n, TopTermsPerIncrement)
		m.one = make([]api.TermCount, k)
		for i, sp := range m.byText[:k] {
			m.one[i] = api.TermCount{Term: s.textOf(sp), Count: 1}
		}
		m.oneOther = int64(n - k)
	})
	return m.one, m.oneOther
}

// filters reports whether a comment's matched query terms filter any of
// the set's candidates out (matched).
func (s *Set) filters(matchedTerms []string) bool {
	if len(matchedTerms) == 0 {
		return false
	}
	for _, sp := range s.sort().cands {
		if matched(matchedTerms, s.textOf(sp)) {
			return true
		}
	}
	return false
}

// firstCandidates is the first CandidatesPerIncrement candidates by text
// that hold none of matchedTerms, each of score.
func (s *Set) firstCandidates(matchedTerms []string, score float64) []api.Suggestion {
	var out []api.Suggestion
	for _, sp := range s.more.cands {
		if len(out) == CandidatesPerIncrement {
			break
		}
		term := s.textOf(sp)
		if len(matchedTerms) > 0 && matched(matchedTerms, term) {
			continue
		}
		if out == nil {
			out = make([]api.Suggestion, 0, min(len(s.more.cands), CandidatesPerIncrement))
		}
		out = append(out, api.Suggestion{Term: term, Score: score, Count: 1})
	}
	return out
}

// extractor keeps a tokenizer's buffers, and the terms of the text being
// read, between extractions.
type extractor struct {
	tk    tokenizer
	text  []byte // the terms found, one after the other
	spans []span // where each is in text
}

var extractors = sync.Pool{New: func() any { return &extractor{} }}
