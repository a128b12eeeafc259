// Package langid detects the language of a comment whose source names
// none, with Lingua (github.com/pemistahl/lingua-go) restricted to the
// languages people post in most, in its low-accuracy mode (trigram
// models only: a tenth of the memory of the full models, and the same
// answers on texts longer than a few words). When Lingua is unsure — two
// languages score too close, or the text has too few letters — the
// language is left unknown rather than guessed. How well it does, how
// fast and in how much memory is in docs/sentiment.md.
package langid

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pemistahl/lingua-go"
)

// Limits of a detection.
const (
	// minLetters is the fewest letters a text in the Latin alphabet must
	// have for a guess: a word or two says too little. minOtherLetters is
	// the same for other scripts, most of which few languages share.
	minLetters      = 12
	minOtherLetters = 4
	// maxDetectBytes bounds the text looked at: a feed item's whole
	// article says no more than its first few sentences.
	maxDetectBytes = 1024
	// minDistance is Lingua's minimum relative distance between the best
	// language and the next: closer than this, the answer is "unsure".
	minDistance = 0.25
)

// Languages are the languages detected, as BCP 47 primary subtags: the
// thirty most used on the services the product reads.
var Languages = []lingua.Language{
	lingua.English, lingua.Spanish, lingua.Portuguese, lingua.French, lingua.German, lingua.Italian,
	lingua.Dutch, lingua.Swedish, lingua.Danish, lingua.Bokmal, lingua.Finnish, lingua.Polish,
	lingua.Czech, lingua.Romanian, lingua.Hungarian, lingua.Turkish, lingua.Russian, lingua.Ukrainian,
	lingua.Greek, lingua.Hebrew, lingua.Arabic, lingua.Persian, lingua.Hindi, lingua.Bengali,
	lingua.Japanese, lingua.Chinese, lingua.Korean, lingua.Thai, lingua.Vietnamese, lingua.Indonesian,
}

// Detector detects languages. It is safe for concurrent use. Its models
// load in the background (a few seconds): until they have, Detect is
// unsure of every text, so that no caller waits (a spawn waits for them
// before it takes crawlers).
type Detector struct {
	ready chan struct{} // closed once d is built
	d     lingua.LanguageDetector
	// codes are the subtags of Languages, by language.
	codes map[lingua.Language]string
}

var (
	defaultOnce sync.Once
	defaultDet  *Detector
)

// Default returns the process's detector, whose models start loading on
// first use.
func Default() *Detector {
	defaultOnce.Do(func() { defaultDet = New() })
	return defaultDet
}

// New returns a detector of Languages and starts loading its models.
func New() *Detector {
	d := &Detector{ready: make(chan struct{}), codes: make(map[lingua.Language]string, len(Languages))}
	for _, l := range Languages {
		d.codes[l] = code(l)
	}
	go func() {
		d.d = lingua.NewLanguageDetectorBuilder().
			FromLanguages(Languages...).
			WithLowAccuracyMode().
			WithMinimumRelativeDistance(minDistance).
			WithPreloadedLanguageModels().
			Build()
		close(d.ready)
	}()
	return d
}

// Ready is closed once the models are loaded.
func (d *Detector) Ready() <-chan struct{} { return d.ready }

// code is a language's BCP 47 primary subtag: its ISO 639-1 code
// lowercased ("nb" for Bokmål).
func code(l lingua.Language) string {
	return strings.ToLower(l.IsoCode639_1().String())
}

// Detect returns the language of text as a BCP 47 primary subtag ("ja"),
// or ok false when it is unsure.
func (d *Detector) Detect(text string) (lang string, ok bool) {
	select {
	case <-d.ready:
	default:
		return "", false
	}
	text = prepare(text)
	if tooShort(text) {
		return "", false
	}
	if l, ok := byScript(text); ok {
		return l, true
	}
	l, ok := d.d.DetectLanguageOf(text)
	if !ok {
		return "", false
	}
	return d.codes[l], true
}

// tooShort reports whether a prepared text says too little for a guess.
func tooShort(prepared string) bool {
	n, latin := letters(prepared)
	return n < minOtherLetters || latin && n < minLetters
}

// prepare leaves out what is in no language — links, @mentions,
// #hashtags (often English in any language) — and cuts the text to
// maxDetectBytes.
func prepare(text string) string {
	if len(text) > maxDetectBytes {
		cut := maxDetectBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	if !strings.ContainsAny(text, "@#/") {
		return text
	}
	fields := strings.Fields(text)
	kept := fields[:0]
	for _, f := range fields {
		if strings.HasPrefix(f, "@") || strings.HasPrefix(f, "#") || strings.Contains(f, "://") || strings.HasPrefix(f, "www.") {
			continue
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " ")
}

// letters counts the letters of text, and reports whether they are all
// in the Latin alphabet.
func letters(text string) (n int, latin bool) {
	latin = true
	for _, r := range text {
		if unicode.IsLetter(r) {
			n++
			if latin && r >= 0x250 && !unicode.Is(unicode.Latin, r) {
				latin = false
			}
		}
	}
	return n, latin
}

// scripts are the scripts that, among Languages, only one language is
// written in; a text whose letters are mostly in one of them is in that
// language, without a model. Kana say Japanese even among Han letters.
var scripts = []struct {
	table *unicode.RangeTable
	lang  string
}{
	{unicode.Hangul, "ko"}, {unicode.Hiragana, "ja"}, {unicode.Katakana, "ja"}, {unicode.Thai, "th"},
	{unicode.Greek, "el"}, {unicode.Hebrew, "he"}, {unicode.Bengali, "bn"}, {unicode.Devanagari, "hi"},
}

// byScript returns the language of a prepared text whose letters are
// mostly (four in five; for kana, one in five among Han) in a script
// only one of Languages is written in.
func byScript(text string) (string, bool) {
	var n, han int
	counts := make([]int, len(scripts))
	for _, r := range text {
		if !unicode.IsLetter(r) {
			continue
		}
		n++
		if r < 0x370 {
			continue
		}
		if unicode.Is(unicode.Han, r) {
			han++
			continue
		}
		for i, s := range scripts {
			if unicode.Is(s.table, r) {
				counts[i]++
				break
			}
		}
	}
	if n == 0 {
		return "", false
	}
	if kana := counts[1] + counts[2]; kana*5 >= n && (kana+han)*5 >= 4*n {
		return "ja", true
	}
	for i, s := range scripts {
		if counts[i]*5 >= 4*n {
			return s.lang, true
		}
	}
	return "", false
}
