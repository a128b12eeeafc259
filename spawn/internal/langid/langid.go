// Package langid detects the language of a comment whose source names
// none, among the thirty languages people post in most. It scores a text
// as Lingua (github.com/pemistahl/lingua-go) does in its low-accuracy
// mode — the same trigram models, backing off to bigrams and letters, and
// the same rules for letters only some languages use — but with every
// language's models fused into one table keyed by n-gram, so that a
// trigram costs one look-up for all thirty languages instead of one per
// language. When it is unsure — two languages score too close, or the
// text has too few letters — the language is left unknown rather than
// guessed. How well it does, how fast and in how much memory is in
// docs/sentiment.md.
package langid

import (
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
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
	// minDistance is the least difference between the likelihoods of the
	// best language and the next (Lingua's minimum relative distance):
	// closer than this, the answer is "unsure".
	minDistance = 0.25
)

// Languages are the languages detected, as BCP 47 primary subtags (ISO
// 639-1 codes; "nb" is Norwegian Bokmål): the thirty most used on the
// services the product reads. The embedded models are written for these,
// in this order (internal/gen).
var Languages = []string{
	"en", "es", "pt", "fr", "de", "it", "nl", "sv", "da", "nb", "fi", "pl", "cs", "ro", "hu",
	"tr", "ru", "uk", "el", "he", "ar", "fa", "hi", "bn", "ja", "zh", "ko", "th", "vi", "id",
}

// Detector detects languages. It is safe for concurrent use. Its models
// load in the background (about a second): until they have,
// Detect is unsure of every text, so that no caller waits (a spawn waits
// for them before it takes crawlers).
type Detector struct {
	ready chan struct{} // closed once m and ru are set, or err
	m     *model
	ru    *rules
	err   error
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
	d := &Detector{ready: make(chan struct{})}
	go func() {
		defer close(d.ready)
		m, err := loadModel(ngramsGz, Languages)
		if err != nil {
			d.err = err
			slog.Error("langid: no language detection", "err", err)
			return
		}
		d.m, d.ru = m, newRules(Languages)
	}()
	return d
}

// Ready is closed once the models are loaded (or failed to: see Err).
func (d *Detector) Ready() <-chan struct{} { return d.ready }

// Err is why the models could not be loaded, once Ready is closed; a
// detector without models is unsure of every text.
func (d *Detector) Err() error {
	select {
	case <-d.ready:
		return d.err
	default:
		return nil
	}
}

// Detect returns the language of text as a BCP 47 primary subtag ("ja"),
// or ok false when it is unsure.
func (d *Detector) Detect(text string) (lang string, ok bool) {
	select {
	case <-d.ready:
	default:
		return "", false
	}
	if d.m == nil {
		return "", false
	}
	text = prepare(text)
	if tooShort(text) {
		return "", false
	}
	if l, ok := byScript(text); ok {
		return l, true
	}
	l := d.detect(text)
	if l < 0 {
		return "", false
	}
	return Languages[l], true
}

// detect is Lingua's DetectLanguageOf in low-accuracy mode: the index of
// the language of text in Languages, or -1.
func (d *Detector) detect(text string) int {
	var wbuf [64]string
	ws := words(text, wbuf[:0])
	if len(ws) == 0 {
		return -1
	}
	if l, ok := d.ru.byRules(ws); ok {
		return l
	}
	langs := d.ru.filter(ws)
	if langs&(langs-1) == 0 {
		return lowest(langs) // one language, or none (-1)
	}
	var kbuf [512]uint64
	keys := trigrams(ws, kbuf[:0])
	if len(keys) == 0 {
		return -1
	}
	var sbuf [32]float64
	sums := sbuf[:d.m.n]
	d.m.score(keys, sums)
	return decide(sums, langs)
}

// trigrams appends the distinct trigrams of ws's words, sorted.
func trigrams(ws []string, keys []uint64) []uint64 {
	for _, w := range ws {
		var a, b rune
		i := 0
		for _, c := range w {
			if i >= 2 {
				keys = append(keys, key3(a, b, c))
			}
			a, b = b, c
			i++
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// decide turns the languages' summed log-probabilities into Lingua's
// answer: among langs, the languages with any (a sum below 0) share a
// likelihood of 1 in proportion to e^sum; the best is the language when
// it is ahead of the next by minDistance or more.
func decide(sums []float64, langs langSet) int {
	best, next := -1, -1
	for l, s := range sums {
		if langs&(1<<l) == 0 || !(s < 0) {
			continue
		}
		switch {
		case best < 0 || s > sums[best]:
			best, next = l, best
		case next < 0 || s > sums[next]:
			next = l
		}
	}
	if best < 0 {
		return -1
	}
	if next < 0 {
		return best // the only language with any: likelihood 1
	}
	top := sums[best]
	var z float64
	for l, s := range sums {
		if langs&(1<<l) != 0 && s < 0 {
			z += math.Exp(s - top)
		}
	}
	p1, p2 := 1/z, math.Exp(sums[next]-top)/z
	if p1 == p2 || p1-p2 < minDistance {
		return -1
	}
	return best
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
	var counts [8]int
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
