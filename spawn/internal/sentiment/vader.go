package sentiment

import (
	"bufio"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules below are VADER's (Hutto & Gilbert, "VADER: A Parsimonious
// Rule-based Model for Sentiment Analysis of Social Media Text", ICWSM
// 2014), read from its reference implementation (vaderSentiment 3.3.2, MIT
// licence, data/LICENSE-vaderSentiment.txt) and kept to its constants, so
// that the two agree on the same sentences (TestVADER_AgreesWithReference).
// Two places where the reference slips are done as it means them: "but"
// halves what comes before it and raises what follows it by position, not
// by the first equal score; and its lexicon is read once, not per call.

// Constants of VADER, empirically derived by its authors.
const (
	boostIncr   = 0.293 // a booster ("very") raises a word's valence by this
	boostDecr   = -0.293
	capsIncr    = 0.733 // an ALL-CAPS word among others that are not
	negScalar   = -0.74 // a negated word's valence is multiplied by this
	normAlpha   = 15    // compound = sum/sqrt(sum²+alpha)
	exclaimIncr = 0.292 // per '!', up to maxExclaims
	maxExclaims = 4
	questIncr   = 0.18 // per '?' when there are two or three
	questMax    = 0.96 // four '?' or more
)

var (
	//go:embed data/vader_lexicon.tsv
	vaderLexiconTSV string
	//go:embed data/vader_emoji.tsv
	vaderEmojiTSV string
)

// negations are VADER's words that negate the sentiment words after them.
var negations = setOf("aint", "arent", "cannot", "cant", "couldnt", "darent", "didnt", "doesnt",
	"ain't", "aren't", "can't", "couldn't", "daren't", "didn't", "doesn't",
	"dont", "hadnt", "hasnt", "havent", "isnt", "mightnt", "mustnt", "neither",
	"don't", "hadn't", "hasn't", "haven't", "isn't", "mightn't", "mustn't",
	"neednt", "needn't", "never", "none", "nope", "nor", "not", "nothing", "nowhere",
	"oughtnt", "shant", "shouldnt", "uhuh", "wasnt", "werent",
	"oughtn't", "shan't", "shouldn't", "uh-uh", "wasn't", "weren't",
	"without", "wont", "wouldnt", "won't", "wouldn't", "rarely", "seldom", "despite")

// boosters are VADER's degree adverbs: intensifiers and dampeners.
var boosters = func() map[string]float64 {
	m := map[string]float64{}
	for _, w := range strings.Fields(`absolutely amazingly awfully completely considerable considerably
decidedly deeply effing enormous enormously entirely especially exceptional exceptionally extreme
extremely fabulously flipping flippin frackin fracking fricking frickin frigging friggin fully fuckin
fucking fuggin fugging greatly hella highly hugely incredible incredibly intensely major majorly more
most particularly purely quite really remarkably so substantially thoroughly total totally tremendous
tremendously uber unbelievably unusually utter utterly very`) {
		m[w] = boostIncr
	}
	for _, w := range strings.Fields(`almost barely hardly kinda kindof kind-of less little marginal
marginally occasional occasionally partly scarce scarcely slight slightly somewhat sorta sortof sort-of`) {
		m[w] = boostDecr
	}
	for _, w := range []string{"just enough", "kind of", "sort of"} {
		m[w] = boostDecr
	}
	return m
}()

// specialCases are VADER's idioms whose valence replaces their words'.
var specialCases = map[string]float64{"the shit": 3, "the bomb": 3, "bad ass": 1.5, "badass": 1.5, "bus stop": 0.0,
	"yeah right": -2, "kiss of death": -1.5, "to die for": 3, "beating heart": 3.5}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// vader is VADER's lexicon and emoji descriptions.
type vader struct {
	lexicon map[string]float64
	emoji   map[rune]string
}

// newVADER reads the embedded lexicons.
func newVADER() (*vader, error) {
	v := &vader{lexicon: make(map[string]float64, 7600), emoji: make(map[rune]string, 1300)}
	sc := bufio.NewScanner(strings.NewReader(vaderLexiconTSV))
	for sc.Scan() {
		word, val, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("sentiment: bad lexicon line %q: %w", sc.Text(), err)
		}
		v.lexicon[word] = f
	}
	sc = bufio.NewScanner(strings.NewReader(vaderEmojiTSV))
	for sc.Scan() {
		e, desc, ok := strings.Cut(sc.Text(), "\t")
		r, size := utf8.DecodeRuneInString(e)
		if !ok || size != len(e) {
			continue
		}
		v.emoji[r] = desc
	}
	return v, nil
}

// vaderScores are VADER's outputs: the compound score in [-1, 1] and the
// shares of positive, negative and neutral words.
type vaderScores struct {
	Compound, Pos, Neg, Neu float64
}

// tokens are the words and emoticons of a text as VADER sees them: split
// at white space, with the punctuation around a word stripped unless
// stripping leaves two characters or fewer (an emoticon).
type tokens struct {
	raw, lower []string
	capDiff    bool // some but not all tokens are ALL CAPS
}

func (v *vader) tokenize(text string, t *tokens) {
	t.raw, t.lower = t.raw[:0], t.lower[:0]
	caps := 0
	for f := range strings.FieldsSeq(text) {
		s := strings.TrimFunc(f, isASCIIPunct)
		if utf8.RuneCountInString(s) <= 2 {
			s = f
		}
		if isUpper(s) {
			caps++
		}
		t.raw = append(t.raw, s)
		t.lower = append(t.lower, strings.ToLower(s))
	}
	t.capDiff = caps > 0 && caps < len(t.raw)
}

// replaceEmoji writes each emoji VADER knows as its description ("😡" →
// "pouting face"), as the reference does.
func (v *vader) replaceEmoji(text string) string {
	hit := false
	for _, r := range text {
		if r >= 0x80 {
			if _, ok := v.emoji[r]; ok {
				hit = true
				break
			}
		}
	}
	if !hit {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 32)
	prevSpace := true
	for _, r := range text {
		if r < 0x80 {
			b.WriteByte(byte(r))
			prevSpace = r == ' '
			continue
		}
		if d, ok := v.emoji[r]; ok {
			if !prevSpace {
				b.WriteByte(' ')
			}
			b.WriteString(d)
			prevSpace = false
			continue
		}
		b.WriteRune(r)
		prevSpace = r == ' '
	}
	return strings.TrimSpace(b.String())
}

// score is VADER's polarity_scores.
func (v *vader) score(text string, t *tokens, sentiments []float64) (vaderScores, []float64) {
	text = v.replaceEmoji(text)
	v.tokenize(text, t)
	sentiments = sentiments[:0]
	for i, w := range t.lower {
		if _, ok := boosters[w]; ok {
			sentiments = append(sentiments, 0)
			continue
		}
		if i < len(t.lower)-1 && w == "kind" && t.lower[i+1] == "of" {
			sentiments = append(sentiments, 0)
			continue
		}
		sentiments = append(sentiments, v.valence(t, i))
	}
	butCheck(t.lower, sentiments)
	return scoreValence(sentiments, text), sentiments
}

// valence is the valence of token i in its context.
func (v *vader) valence(t *tokens, i int) float64 {
	w := t.lower[i]
	base, ok := v.lexicon[w]
	if !ok {
		return 0
	}
	val := base
	n := len(t.lower)
	if w == "no" && i != n-1 {
		if _, next := v.lexicon[t.lower[i+1]]; next {
			val = 0 // "no" negates the next word rather than counting itself
		}
	}
	if i > 0 && t.lower[i-1] == "no" || i > 1 && t.lower[i-2] == "no" ||
		i > 2 && t.lower[i-3] == "no" && (t.lower[i-1] == "or" || t.lower[i-1] == "nor") {
		val = base * negScalar
	}
	if t.capDiff && isUpper(t.raw[i]) {
		if val > 0 {
			val += capsIncr
		} else {
			val -= capsIncr
		}
	}
	for start := range 3 {
		if i <= start {
			break
		}
		prev := t.lower[i-(start+1)]
		if _, inLex := v.lexicon[prev]; inLex {
			continue
		}
		s := scalarIncDec(t.raw[i-(start+1)], prev, val, t.capDiff)
		if start == 1 && s != 0 {
			s *= 0.95
		}
		if start == 2 && s != 0 {
			s *= 0.9
		}
		val += s
		val = negationCheck(val, t.lower, start, i)
		if start == 2 {
			val = idiomsCheck(val, t.lower, i)
		}
	}
	return leastCheck(v, val, t.lower, i)
}

// scalarIncDec is the change a booster before a word makes to its valence.
func scalarIncDec(raw, lower string, val float64, capDiff bool) float64 {
	s, ok := boosters[lower]
	if !ok {
		return 0
	}
	if val < 0 {
		s = -s
	}
	if capDiff && isUpper(raw) {
		if val > 0 {
			s += capsIncr
		} else {
			s -= capsIncr
		}
	}
	return s
}

// negated reports whether a word negates: one of the negations or a
// contraction in n't.
func negated(w string) bool {
	return negations[w] || strings.Contains(w, "n't")
}

// negationCheck applies a negation start+1 words before token i.
func negationCheck(val float64, w []string, start, i int) float64 {
	switch start {
	case 0:
		if negated(w[i-1]) {
			val *= negScalar
		}
	case 1:
		switch {
		case w[i-2] == "never" && (w[i-1] == "so" || w[i-1] == "this"):
			val *= 1.25
		case w[i-2] == "without" && w[i-1] == "doubt":
		case negated(w[i-2]):
			val *= negScalar
		}
	case 2:
		switch {
		case w[i-3] == "never" && (w[i-2] == "so" || w[i-2] == "this") || (w[i-1] == "so" || w[i-1] == "this"):
			val *= 1.25
		case w[i-3] == "without" && (w[i-2] == "doubt" || w[i-1] == "doubt"):
		case negated(w[i-3]):
			val *= negScalar
		}
	}
	return val
}

// idiomsCheck applies VADER's special cases around token i (i ≥ 3).
func idiomsCheck(val float64, w []string, i int) float64 {
	var buf [128]byte
	for _, seq := range [...][3]string{
		{w[i-1], w[i]}, {w[i-2], w[i-1], w[i]}, {w[i-2], w[i-1]}, {w[i-3], w[i-2], w[i-1]}, {w[i-3], w[i-2]},
	} {
		if s, ok := joinedIn(specialCases, &buf, seq); ok {
			val = s
			break
		}
	}
	if len(w)-1 > i {
		if s, ok := joinedIn(specialCases, &buf, [3]string{w[i], w[i+1]}); ok {
			val = s
		}
	}
	if len(w)-1 > i+1 {
		if s, ok := joinedIn(specialCases, &buf, [3]string{w[i], w[i+1], w[i+2]}); ok {
			val = s
		}
	}
	for _, ng := range [...][3]string{{w[i-3], w[i-2], w[i-1]}, {w[i-3], w[i-2]}, {w[i-2], w[i-1]}} {
		if b, ok := joinedIn(boosters, &buf, ng); ok {
			val += b
		}
	}
	return val
}

// joinedIn looks up in m the words of seq (two or three; an empty third
// is none) joined by spaces, without building the string.
func joinedIn(m map[string]float64, buf *[128]byte, seq [3]string) (float64, bool) {
	if !slices.Contains(joinedFirst, seq[0]) {
		return 0, false // no key of m of several words starts with seq[0]
	}
	b := append(buf[:0], seq[0]...)
	b = append(b, ' ')
	b = append(b, seq[1]...)
	if seq[2] != "" {
		b = append(b, ' ')
		b = append(b, seq[2]...)
	}
	v, ok := m[string(b)]
	return v, ok
}

// joinedFirst are the first words of the keys of several words of
// specialCases and boosters: the words a sequence joinedIn can find must
// start with, tokens having no space in them.
var joinedFirst = func() []string {
	var out []string
	for _, m := range []map[string]float64{specialCases, boosters} {
		for k := range m {
			if first, _, ok := strings.Cut(k, " "); ok && !slices.Contains(out, first) {
				out = append(out, first)
			}
		}
	}
	return out
}()

// leastCheck negates a word after "least" (not "at least", "very least").
func leastCheck(v *vader, val float64, w []string, i int) float64 {
	if i > 0 && w[i-1] == "least" {
		if _, inLex := v.lexicon["least"]; inLex {
			return val
		}
		if i > 1 && (w[i-2] == "at" || w[i-2] == "very") {
			return val
		}
		return val * negScalar
	}
	return val
}

// butCheck halves the words before the first "but" and raises those after
// it by half.
func butCheck(w []string, sentiments []float64) {
	bi := -1
	for i, x := range w {
		if x == "but" {
			bi = i
			break
		}
	}
	if bi < 0 {
		return
	}
	for i := range sentiments {
		switch {
		case i < bi:
			sentiments[i] *= 0.5
		case i > bi:
			sentiments[i] *= 1.5
		}
	}
}

// scoreValence turns the words' valences into VADER's scores.
func scoreValence(sentiments []float64, text string) vaderScores {
	if len(sentiments) == 0 {
		return vaderScores{}
	}
	sum := 0.0
	for _, s := range sentiments {
		sum += s
	}
	punct := punctuationEmphasis(text)
	if sum > 0 {
		sum += punct
	} else if sum < 0 {
		sum -= punct
	}
	compound := sum / math.Sqrt(sum*sum+normAlpha)
	compound = max(-1, min(1, compound))
	var pos, neg, neu float64
	for _, s := range sentiments {
		switch {
		case s > 0:
			pos += s + 1
		case s < 0:
			neg += s - 1
		default:
			neu++
		}
	}
	if pos > math.Abs(neg) {
		pos += punct
	} else if pos < math.Abs(neg) {
		neg -= punct
	}
	total := pos + math.Abs(neg) + neu
	return vaderScores{Compound: compound, Pos: math.Abs(pos / total), Neg: math.Abs(neg / total), Neu: math.Abs(neu / total)}
}

// punctuationEmphasis is what exclamation and question marks add.
func punctuationEmphasis(text string) float64 {
	ep := min(strings.Count(text, "!"), maxExclaims)
	amp := float64(ep) * exclaimIncr
	switch qm := strings.Count(text, "?"); {
	case qm > 3:
		amp += questMax
	case qm > 1:
		amp += float64(qm) * questIncr
	}
	return amp
}

// isASCIIPunct is Python's string.punctuation.
func isASCIIPunct(r rune) bool {
	return r < 0x80 && unicode.IsPunct(r) || r == '$' || r == '+' || r == '<' || r == '=' || r == '>' || r == '^' || r == '`' || r == '|' || r == '~'
}

// isUpper is Python's str.isupper: some cased letter, and no lower-case
// one.
func isUpper(s string) bool {
	cased := false
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			ascii = false
		case 'a' <= c && c <= 'z':
			return false
		case 'A' <= c && c <= 'Z':
			cased = true
		}
	}
	if ascii {
		return cased
	}
	cased = false
	for _, r := range s {
		if unicode.IsLower(r) || unicode.IsTitle(r) {
			return false
		}
		if unicode.IsUpper(r) {
			cased = true
		}
	}
	return cased
}
