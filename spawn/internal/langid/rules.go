package langid

import (
	"strings"
	"unicode"
)

// The rules below are Lingua's (detector.go of lingua-go v1.4.0:
// detectLanguageWithRules and filterLanguagesByRules), restricted to
// Languages: they decide some texts from their letters alone, and narrow
// the languages the n-grams choose among for the rest.

// alphabets are the scripts Lingua tells words apart by, in its order.
var alphabets = []*unicode.RangeTable{
	unicode.Arabic, unicode.Armenian, unicode.Bengali, unicode.Cyrillic, unicode.Devanagari,
	unicode.Georgian, unicode.Greek, unicode.Gujarati, unicode.Gurmukhi, unicode.Han,
	unicode.Hangul, unicode.Hebrew, unicode.Hiragana, unicode.Katakana, unicode.Latin,
	unicode.Tamil, unicode.Telugu, unicode.Thai,
}

// alphabetLanguages are the languages written in each of alphabets
// (Japanese in kana and Han, the rest in one script).
var alphabetLanguages = map[*unicode.RangeTable][]string{
	unicode.Latin: {"en", "es", "pt", "fr", "de", "it", "nl", "sv", "da", "nb", "fi", "pl", "cs",
		"ro", "hu", "tr", "vi", "id"},
	unicode.Cyrillic:   {"ru", "uk"},
	unicode.Arabic:     {"ar", "fa"},
	unicode.Devanagari: {"hi"},
	unicode.Bengali:    {"bn"},
	unicode.Han:        {"zh", "ja"},
	unicode.Hiragana:   {"ja"},
	unicode.Katakana:   {"ja"},
	unicode.Greek:      {"el"},
	unicode.Hebrew:     {"he"},
	unicode.Hangul:     {"ko"},
	unicode.Thai:       {"th"},
}

// oneLanguageAlphabets are the scripts that, among all the languages
// Lingua knows, only one is written in (only those of Languages).
var oneLanguageAlphabets = []struct {
	table *unicode.RangeTable
	lang  string
}{
	{unicode.Bengali, "bn"}, {unicode.Greek, "el"}, {unicode.Hangul, "ko"}, {unicode.Hebrew, "he"},
	{unicode.Hiragana, "ja"}, {unicode.Katakana, "ja"}, {unicode.Thai, "th"},
}

// uniqueCharacters are the letters that, among all the languages Lingua
// knows, only one uses (only those of Languages; Spanish's "¿¡" are no
// letters, so never in a word).
var uniqueCharacters = map[string]string{
	"cs": "ĚěŘřŮů",
	"de": "ß",
	"hu": "ŐőŰű",
	"pl": "ŁłŃńŚśŹź",
	"ro": "Țţ",
	"uk": "ҐґЄєЇї",
	"vi": "ẰằẦầẲẳẨẩẴẵẪẫẮắẤấẠạẶặẬậỀềẺẻỂểẼẽỄễẾếỆệỈỉĨĩỊịƠơỒồỜờỎỏỔổỞởỖỗỠỡỐốỚớỘộỢợƯưỪừỦủỬửŨũỮữỨứỤụỰựỲỳỶỷỸỹỴỵ",
}

// sharedCharacters are letters only a few languages use (Lingua's
// charsToLanguagesMapping, with the ISO 639-1 codes of all its
// languages; those not among Languages are ignored).
var sharedCharacters = map[string][]string{
	"Ãã":     {"pt", "vi"},
	"ĄąĘę":   {"lt", "pl"},
	"Żż":     {"pl", "ro"},
	"Îî":     {"fr", "ro"},
	"Ññ":     {"eu", "es"},
	"ŇňŤť":   {"cs", "sk"},
	"Ăă":     {"ro", "vi"},
	"İıĞğ":   {"az", "tr"},
	"ЈјЉљЊњ": {"mk", "sr"},
	"ẸẹỌọ":   {"vi", "yo"},
	"ÐðÞþ":   {"is", "tr"},
	"Ûû":     {"fr", "hu"},
	"Ōō":     {"mi", "yo"},

	"ĀāĒēĪī": {"lv", "mi", "yo"},
	"Şş":     {"az", "ro", "tr"},
	"Ďď":     {"cs", "ro", "sk"},
	"Ćć":     {"bs", "hr", "pl"},
	"Đđ":     {"bs", "hr", "vi"},
	"Іі":     {"be", "kk", "uk"},
	"Ìì":     {"it", "vi", "yo"},
	"Øø":     {"nb", "da", "nn"},

	"Ūū":     {"lv", "lt", "mi", "yo"},
	"Ëë":     {"af", "sq", "nl", "fr"},
	"ÈèÙù":   {"fr", "it", "vi", "yo"},
	"Êê":     {"af", "fr", "pt", "vi"},
	"Õõ":     {"et", "hu", "pt", "vi"},
	"Ôô":     {"fr", "pt", "sk", "vi"},
	"ЁёЫыЭэ": {"be", "kk", "mn", "ru"},
	"ЩщЪъ":   {"bg", "kk", "mn", "ru"},
	"Òò":     {"ca", "it", "vi", "yo"},
	"Ææ":     {"nb", "da", "is", "nn"},
	"Åå":     {"nb", "da", "nn", "sv"},

	"Ýý": {"cs", "is", "sk", "tr", "vi"},
	"Ää": {"et", "fi", "de", "sk", "sv"},
	"Àà": {"ca", "fr", "it", "pt", "vi"},
	"Ââ": {"fr", "pt", "ro", "tr", "vi"},

	"Üü":     {"az", "ca", "et", "de", "hu", "es", "tr"},
	"ČčŠšŽž": {"bs", "cs", "hr", "lv", "lt", "sk", "sl"},
	"Çç":     {"sq", "az", "eu", "ca", "fr", "pt", "tr"},

	"Öö": {"az", "et", "fi", "de", "hu", "is", "sv", "tr"},

	"Óó":     {"ca", "hu", "is", "ga", "pl", "pt", "sk", "es", "vi", "yo"},
	"ÁáÍíÚú": {"ca", "cs", "is", "ga", "hu", "pt", "sk", "es", "vi", "yo"},

	"Éé": {"ca", "cs", "fr", "hu", "is", "ga", "it", "pt", "sk", "es", "vi", "yo"},
}

// langSet is a set of Languages, bit i for Languages[i].
type langSet uint32

// rules are the tables above by language index.
type rules struct {
	index       map[string]int
	alphabet    []langSet // by index in alphabets
	unique      map[rune]int
	oneAlphabet []int // by index in oneLanguageAlphabets
	shared      map[rune]langSet
	zh, ja      int
	all         langSet
}

func newRules(langs []string) *rules {
	ru := &rules{index: make(map[string]int, len(langs)), unique: make(map[rune]int), shared: make(map[rune]langSet)}
	for i, l := range langs {
		ru.index[l] = i
		ru.all |= 1 << i
	}
	set := func(codes []string) langSet {
		var s langSet
		for _, c := range codes {
			if i, ok := ru.index[c]; ok {
				s |= 1 << i
			}
		}
		return s
	}
	for _, t := range alphabets {
		ru.alphabet = append(ru.alphabet, set(alphabetLanguages[t]))
	}
	for l, chars := range uniqueCharacters {
		for _, c := range chars {
			ru.unique[c] = ru.index[l]
		}
	}
	for _, a := range oneLanguageAlphabets {
		ru.oneAlphabet = append(ru.oneAlphabet, ru.index[a.lang])
	}
	for chars, codes := range sharedCharacters {
		for _, c := range chars {
			ru.shared[c] = set(codes)
		}
	}
	ru.zh, ru.ja = ru.index["zh"], ru.index["ja"]
	return ru
}

// words splits a text into Lingua's words: lowercased, each Han, Hangul
// or kana letter a word of its own, other letters in runs (which go on
// through any letter).
func words(text string, out []string) []string {
	text = strings.ToLower(text)
	start := -1
	for i, r := range text {
		letter := unicode.IsLetter(r)
		if start >= 0 {
			if letter {
				continue
			}
			out = append(out, text[start:i])
			start = -1
		}
		if !letter {
			continue
		}
		if unicode.In(r, unicode.Han, unicode.Hangul, unicode.Hiragana, unicode.Katakana) {
			out = append(out, text[i:i+len(string(r))])
			continue
		}
		start = i
	}
	if start >= 0 {
		out = append(out, text[start:])
	}
	return out
}

// byRules is Lingua's detectLanguageWithRules: the language that most
// words' letters say, when the letters of more than half of the words
// say one.
func (ru *rules) byRules(ws []string) (int, bool) {
	const unknown = -1
	var total [33]int // by language; [32] unknown
	for _, w := range ws {
		var counts [32]int
		var seen langSet
		for _, c := range w {
			l := ru.charLanguage(c)
			if l >= 0 {
				counts[l]++
				seen |= 1 << l
			}
		}
		switch {
		case seen == 0:
			total[32]++
		case seen&(seen-1) == 0:
			total[lowest(seen)]++
		case seen&(1<<ru.zh) != 0 && seen&(1<<ru.ja) != 0:
			total[ru.ja]++
		default:
			best, first, second := top2(counts[:], seen)
			if first > second {
				total[best]++
			} else {
				total[32]++
			}
		}
	}
	keys := langSet(0)
	for l := range 32 {
		if total[l] > 0 {
			keys |= 1 << l
		}
	}
	keepUnknown := float64(total[32]) >= float64(len(ws))*0.5 && total[32] > 0
	nkeys := popcount(keys)
	if keepUnknown {
		nkeys++
	}
	switch {
	case nkeys == 0:
		return unknown, false
	case nkeys == 1:
		if keepUnknown {
			return unknown, false
		}
		return lowest(keys), true
	case nkeys == 2 && !keepUnknown && keys == 1<<ru.zh|1<<ru.ja:
		return ru.ja, true
	}
	best, first, second := top2(total[:32], keys)
	if keepUnknown {
		switch u := total[32]; {
		case u > first:
			return unknown, false
		case u == first:
			return unknown, false // a tie: top two equal
		case u > second:
			second = u
		}
	}
	if first == second {
		return unknown, false
	}
	return best, true
}

// charLanguage is the language a lowercased letter alone says, or -1.
func (ru *rules) charLanguage(c rune) int {
	if c < 0x80 {
		return -1
	}
	for i, a := range oneLanguageAlphabets {
		if unicode.Is(a.table, c) {
			return ru.oneAlphabet[i]
		}
	}
	if unicode.Is(unicode.Han, c) {
		return ru.zh
	}
	if l, ok := ru.unique[c]; ok {
		return l
	}
	return -1
}

// filter is Lingua's filterLanguagesByRules: the languages written in
// the script most words are in, narrowed to those the letters that few
// languages use point to, when those point in at least half the words.
func (ru *rules) filter(ws []string) langSet {
	var counts [32]int
	var seen langSet // of alphabets
	for _, w := range ws {
		if a := alphabetOf(w); a >= 0 {
			counts[a]++
			seen |= 1 << a
		}
	}
	if seen == 0 {
		return ru.all
	}
	if seen&(seen-1) != 0 && allEqual(counts[:], seen) {
		return ru.all
	}
	best, _, _ := top2(counts[:], seen)
	filtered := ru.alphabet[best]
	var langCounts [32]int
	var chars [16]rune
	for _, w := range ws {
		distinct := chars[:0]
		for _, c := range w {
			if c < 0x80 {
				continue
			}
			if s := ru.shared[c] & filtered; s != 0 && !containsRune(distinct, c) {
				distinct = append(distinct, c)
				for l := range 32 {
					if s&(1<<l) != 0 {
						langCounts[l]++
					}
				}
			}
		}
	}
	var subset langSet
	for l := range 32 {
		if langCounts[l] > 0 && float64(langCounts[l]) >= float64(len(ws))*0.5 {
			subset |= 1 << l
		}
	}
	if subset != 0 {
		return subset
	}
	return filtered
}

// alphabetOf is the index in alphabets of the script all of a word's
// letters are in, or -1. Scripts do not overlap, so only the first
// letter's can be the one.
func alphabetOf(w string) int {
	a := -1
	for _, c := range w {
		if a < 0 {
			if a = scriptOf(c); a < 0 {
				return -1
			}
			continue
		}
		if c < 0x80 {
			if a != latin || !isASCIILetter(c) {
				return -1
			}
		} else if !unicode.Is(alphabets[a], c) {
			return -1
		}
	}
	return a
}

// latin is the index of unicode.Latin in alphabets.
const latin = 14

// scriptOf is the index in alphabets of the script of c, or -1.
func scriptOf(c rune) int {
	if c < 0x80 {
		if isASCIILetter(c) {
			return latin
		}
		return -1
	}
	for i, t := range alphabets {
		if unicode.Is(t, c) {
			return i
		}
	}
	return -1
}

func isASCIILetter(c rune) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// top2 returns the index of the largest of counts among set (the first
// when tied), its count and the next largest.
func top2(counts []int, set langSet) (best, first, second int) {
	best = -1
	for i, c := range counts {
		if set&(1<<i) == 0 {
			continue
		}
		switch {
		case best < 0 || c > first:
			if best >= 0 {
				second = first
			}
			best, first = i, c
		case c > second:
			second = c
		}
	}
	return best, first, second
}

func allEqual(counts []int, set langSet) bool {
	v := -1
	for i, c := range counts {
		if set&(1<<i) == 0 {
			continue
		}
		if v >= 0 && c != v {
			return false
		}
		v = c
	}
	return true
}

func containsRune(rs []rune, r rune) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func lowest(s langSet) int {
	for i := range 32 {
		if s&(1<<i) != 0 {
			return i
		}
	}
	return -1
}

func popcount(s langSet) int {
	n := 0
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}
