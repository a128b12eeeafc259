package sentiment

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The linear model's features of a text: its words lowercased (a
// negated word marked with a leading '!', for the three words after a
// negation up to the next punctuation), pairs of adjacent words, emoji and
// emoticons, whether it has '!', '?' or a word in capitals, and VADER's
// scores. A hashtag counts as the words it joins (#NeverAgain → never
// again); links and @mentions count as nothing.

// negScope is how many words after a negation are marked negated.
const negScope = 3

// Feature prefixes, so that a word, a pair and an emoji never share a
// name.
const (
	prefixWord  = "w:"
	prefixPair  = "b:"
	prefixEmoji = "e:"
	prefixMark  = "x:"
)

// featNegations are the words that start a negated stretch (apostrophes
// dropped: "don't" is "dont").
var featNegations = setOf("not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "nowhere",
	"cannot", "without", "aint", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont",
	"wouldnt", "cant", "couldnt", "shouldnt", "hasnt", "havent", "hadnt", "mustnt", "neednt")

// tokKind is the kind of a text token.
type tokKind uint8

const (
	tokWord tokKind = iota
	tokEmoji
	tokPunct // . , ! ? ; : — ends a negated stretch and a pair
)

type token struct {
	kind tokKind
	text string
}

// scan splits text into words, emoji, emoticons and stopping punctuation.
func scan(text string, out []token) []token {
	out = out[:0]
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case (r == 'h' || r == 'H') && hasURLPrefix(text[i:]):
			i += spaceEnd(text[i:])
		case r == '@' && i+1 < len(text) && isWordStart(text[i+1:]):
			i++
			i += wordEnd(text[i:], false)
		case r == '#' && i+1 < len(text) && isWordStart(text[i+1:]):
			i++
			n := wordEnd(text[i:], false)
			var words [8]string
			for _, w := range appendTagWords(words[:0], text[i:i+n]) {
				out = append(out, token{tokWord, w})
			}
			i += n
		case emoticonAt(text[i:]) > 0:
			n := emoticonAt(text[i:])
			out = append(out, token{tokEmoji, text[i : i+n]})
			i += n
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			n := wordEnd(text[i:], true)
			out = append(out, token{tokWord, text[i : i+n]})
			i += n
		case r == '.' || r == ',' || r == '!' || r == '?' || r == ';' || r == ':':
			out = append(out, token{tokPunct, text[i : i+size]})
			i += size
		case isEmoji(r):
			out = append(out, token{tokEmoji, text[i : i+size]})
			i += size
		default:
			i += size
		}
	}
	return out
}

func hasURLPrefix(s string) bool {
	return len(s) > 8 && (strings.EqualFold(s[:7], "http://") || strings.EqualFold(s[:8], "https://"))
}

func spaceEnd(s string) int {
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return i
	}
	return len(s)
}

func isWordStart(s string) bool {
	if len(s) > 0 && s[0] < utf8.RuneSelf {
		return isASCIIAlnum(s[0])
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isASCIIAlnum reports an ASCII letter or digit, which is what
// unicode.IsLetter or unicode.IsDigit say of an ASCII byte.
func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// wordEnd is the length of the word at the start of s: letters, digits
// and marks, with apostrophes inside when inner is set (don't), with '_'
// inside when it is not (a tag or a user name).
func wordEnd(s string, inner bool) int {
	i := 0
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf && isASCIIAlnum(c) {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			i += size
		case inner && (r == '\'' || r == '’') && i+size < len(s) && isWordStart(s[i+size:]):
			i += size
		case !inner && r == '_':
			i += size
		default:
			return i
		}
	}
	return i
}

// splitTag splits a hashtag's words at case changes and digits:
// NeverAgain → Never, Again; iphone15 → iphone, 15. A tag all in one case
// is one word.
func splitTag(tag string) []string { return appendTagWords(nil, tag) }

// appendTagWords appends the words splitTag finds in tag to out.
func appendTagWords(out []string, tag string) []string {
	start := 0
	prev := rune(0)
	for i, r := range tag {
		if i > start {
			switch {
			case r == '_':
			case unicode.IsUpper(r) && unicode.IsLower(prev),
				unicode.IsDigit(r) != unicode.IsDigit(prev):
				out = append(out, tag[start:i])
				start = i
			}
		}
		if r == '_' {
			if i > start {
				out = append(out, tag[start:i])
			}
			start = i + 1
		}
		prev = r
	}
	if start < len(tag) {
		out = append(out, tag[start:])
	}
	return out
}

// expandTags writes each hashtag of text as its words ("#NeverAgain" →
// "Never Again"), so that VADER's rules, which know words, read them.
func expandTags(text string) string {
	if strings.IndexByte(text, '#') < 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	i := 0
	for i < len(text) {
		j := strings.IndexByte(text[i:], '#')
		if j < 0 {
			b.WriteString(text[i:])
			break
		}
		j += i
		b.WriteString(text[i:j])
		if j+1 >= len(text) || !isWordStart(text[j+1:]) {
			b.WriteByte('#')
			i = j + 1
			continue
		}
		n := wordEnd(text[j+1:], false)
		var words [8]string
		for k, w := range appendTagWords(words[:0], text[j+1:j+1+n]) {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		i = j + 1 + n
	}
	return b.String()
}

// isEmoji reports the pictographs people write feelings with.
func isEmoji(r rune) bool {
	return r >= 0x1F300 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF || r >= 0x1F000 && r <= 0x1F2FF
}

// emoticonAt is the length of the Western emoticon at the start of s
// (":)", ":-(", ";P", "<3", "</3", "(:"), 0 when there is none. An
// emoticon must not run on into a word (":Donald" is not ":D").
func emoticonAt(s string) int {
	if strings.HasPrefix(s, "<3") {
		return 2
	}
	if strings.HasPrefix(s, "</3") {
		return 3
	}
	eyes, nose, mouths := ":;=8", "-o*'^", ")]([dDpP/\\}{@|3xX"
	i := 0
	if i < len(s) && (s[i] == '>' || s[i] == '<') && len(s) > 1 && strings.IndexByte(eyes, s[1]) >= 0 {
		i++
	}
	if i < len(s) && strings.IndexByte(eyes, s[i]) >= 0 {
		j := i + 1
		if j < len(s) && strings.IndexByte(nose, s[j]) >= 0 {
			j++
		}
		if j < len(s) && strings.IndexByte(mouths, s[j]) >= 0 && s[i] != '8' {
			if j+1 >= len(s) || !isWordStart(s[j+1:]) || strings.IndexByte(")]([/\\}{|", s[j]) >= 0 {
				return j + 1
			}
		}
	}
	// Mirrored: (: and ):
	if len(s) >= 2 && strings.IndexByte(")(", s[0]) >= 0 && (s[1] == ':' || s[1] == ';') {
		if len(s) == 2 || !isWordStart(s[2:]) {
			return 2
		}
	}
	return 0
}

// normWord is a word as a feature: lowercased, apostrophes dropped.
func normWord(w string) string {
	w = strings.ToLower(w)
	if strings.IndexByte(w, '\'') < 0 && !strings.Contains(w, "’") {
		return w
	}
	var b strings.Builder
	b.Grow(len(w))
	for _, r := range w {
		if r != '\'' && r != '’' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// feature is the name of a feature in parts, written one after the
// other: a prefix, then words and separators. Parts past the last are
// empty.
type feature [5]string

// walkFeatures calls emit with each sparse feature of text, repeats
// included, and returns the tokens it scanned into toks.
func walkFeatures(text string, toks []token, emit func(feature)) []token {
	toks = scan(text, toks)
	neg := 0
	prev, prevNeg := "", ""
	caps := false
	for _, t := range toks {
		switch t.kind {
		case tokPunct:
			neg, prev, prevNeg = 0, "", ""
			continue
		case tokEmoji:
			emit(feature{prefixEmoji, t.text})
			prev, prevNeg = "", ""
			continue
		}
		if !caps && utf8.RuneCountInString(t.text) > 1 && isUpper(t.text) && isAllLetters(t.text) {
			caps = true
		}
		w := normWord(t.text)
		mark := ""
		if featNegations[w] {
			neg = negScope + 1
		} else if neg > 0 {
			mark = "!"
		}
		if neg > 0 {
			neg--
		}
		emit(feature{prefixWord, mark, w})
		if prev != "" {
			sep := "_"
			if mark != "" {
				sep = "_!"
			}
			emit(feature{prefixPair, prevNeg, prev, sep, w})
		}
		prev, prevNeg = w, mark
	}
	if strings.Contains(text, "!") {
		emit(feature{prefixMark, "exclaim"})
	}
	if strings.Contains(text, "?") {
		emit(feature{prefixMark, "question"})
	}
	if caps {
		emit(feature{prefixMark, "caps"})
	}
	return toks
}

// name is the feature's name, as the model file writes it.
func (f feature) name() string { return f[0] + f[1] + f[2] + f[3] + f[4] }

// hash is FNV-1a of the feature's name, computed without writing it.
func (f feature) hash() uint64 {
	h := uint64(fnvOffset)
	for _, p := range f {
		for i := 0; i < len(p); i++ {
			h ^= uint64(p[i])
			h *= fnvPrime
		}
	}
	return h
}

// hashName is FNV-1a of a feature name.
func hashName(name string) uint64 { return feature{name}.hash() }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func isAllLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}
