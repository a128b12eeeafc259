package langid

import (
	"strings"
	"sync"

	"github.com/pemistahl/lingua-go"
)

// linguaRef is Lingua itself in low-accuracy mode, restricted to
// Languages and behind the detector's own preparation, length rule and
// script shortcut: what the detector is measured against.
type linguaRef struct {
	d     lingua.LanguageDetector
	codes map[lingua.Language]string
}

var (
	linguaOnce sync.Once
	linguaDet  *linguaRef
)

func newLinguaRef() *linguaRef {
	linguaOnce.Do(func() {
		r := &linguaRef{codes: make(map[lingua.Language]string)}
		var langs []lingua.Language
		for _, c := range Languages {
			l := lingua.GetLanguageFromIsoCode639_1(lingua.GetIsoCode639_1FromValue(strings.ToUpper(c)))
			langs = append(langs, l)
			r.codes[l] = c
		}
		r.d = lingua.NewLanguageDetectorBuilder().
			FromLanguages(langs...).
			WithLowAccuracyMode().
			WithMinimumRelativeDistance(minDistance).
			WithPreloadedLanguageModels().
			Build()
		linguaDet = r
	})
	return linguaDet
}

func (r *linguaRef) Detect(text string) (string, bool) {
	text = prepare(text)
	if tooShort(text) {
		return "", false
	}
	if l, ok := byScript(text); ok {
		return l, true
	}
	l, ok := r.d.DetectLanguageOf(text)
	if !ok {
		return "", false
	}
	return r.codes[l], true
}
