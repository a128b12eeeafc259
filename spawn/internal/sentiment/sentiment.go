// Package sentiment scores what a comment's words say of its author's
// mood: positive, neutral or negative, with a score from -1 to 1.
//
// The scorer is a multinomial logistic regression over the text's words,
// word pairs, negated words, emoji, emoticons and hashtag words, and over
// the scores of VADER's rules (negation, intensifiers, "but", capitals,
// punctuation, emoji), which this package implements. Its weights
// (data/model.tsv) were trained on VADER's human-rated sentences; how, on
// what, and how well it does on sets it never saw are in
// docs/sentiment.md. It scores English only: a text in another language
// gets no score rather than a guess from English words.
package sentiment

import (
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// maxScoredBytes bounds the text scored: a comment longer than this (a
// feed item's whole article) is scored on its beginning, which keeps the
// cost of one item bounded.
const maxScoredBytes = 4096

// Scorer scores texts. It is safe for concurrent use.
type Scorer struct {
	vader   *vader
	model   *linear
	scratch sync.Pool
}

type scratch struct {
	vt    tokens
	sents []float64
	toks  []token
	feats []uint64
	emit  func(feature) // appends the feature's hash to feats
}

var (
	defaultOnce   sync.Once
	defaultScorer *Scorer
	defaultErr    error
)

// Default returns the scorer of the embedded lexicon and model, read
// once.
func Default() (*Scorer, error) {
	defaultOnce.Do(func() { defaultScorer, defaultErr = New() })
	return defaultScorer, defaultErr
}

// New reads the embedded lexicon and model.
func New() (*Scorer, error) {
	v, err := newVADER()
	if err != nil {
		return nil, err
	}
	m, err := parseLinear(modelTSV)
	if err != nil {
		return nil, err
	}
	s := &Scorer{vader: v, model: m}
	s.scratch.New = func() any {
		sc := new(scratch)
		sc.emit = func(f feature) { sc.feats = append(sc.feats, f.hash()) }
		return sc
	}
	return s, nil
}

// Scores reports whether the scorer is built for a language (a BCP 47
// tag, case ignored): English and its regional forms.
func Scores(lang string) bool {
	return len(lang) >= 2 && strings.EqualFold(lang[:2], "en") && (len(lang) == 2 || lang[2] == '-')
}

// Score scores text written in lang. ok is false, and the sentiment
// zero, when lang is not a language the scorer is built for or the text
// has nothing to score.
func (s *Scorer) Score(text, lang string) (_ api.Sentiment, ok bool) {
	if !Scores(lang) {
		return api.Sentiment{}, false
	}
	text = clip(text)
	if strings.TrimSpace(text) == "" {
		return api.Sentiment{}, false
	}
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)
	var vs vaderScores
	vs, sc.sents = s.vader.score(expandTags(text), &sc.vt, sc.sents)
	sc.feats = sc.feats[:0]
	sc.toks = walkFeatures(text, sc.toks, sc.emit)
	clear(sc.toks) // keep no text alive in the pool
	slices.Sort(sc.feats)
	p := s.model.predict(slices.Compact(sc.feats), vs)
	return sentimentOf(p), true
}

// Features returns what the model sees of a text, sorted and without
// repeats: its sparse features and VADER's compound, positive, negative
// and neutral scores. The training script learns the model's weights
// from them, so that training and scoring see a text alike.
func (s *Scorer) Features(text string) (sparse []string, vaderScores [4]float64) {
	var vt tokens
	vs, _ := s.vader.score(expandTags(clip(text)), &vt, nil)
	walkFeatures(clip(text), nil, func(f feature) { sparse = append(sparse, f.name()) })
	slices.Sort(sparse)
	return slices.Compact(sparse), [4]float64{vs.Compound, vs.Pos, vs.Neg, vs.Neu}
}

// sentimentOf labels class probabilities (negative, neutral, positive):
// the likeliest class, scored P(positive) − P(negative).
func sentimentOf(p [3]float64) api.Sentiment {
	label := api.SentimentNeutral
	switch {
	case p[2] > p[0] && p[2] > p[1]:
		label = api.SentimentPositive
	case p[0] > p[1] && p[0] > p[2]:
		label = api.SentimentNegative
	}
	score := math.Round((p[2]-p[0])*1000) / 1000
	return api.Sentiment{Label: label, Score: max(-1, min(1, score))}
}

// clip cuts text to maxScoredBytes at a rune boundary.
func clip(text string) string {
	if len(text) <= maxScoredBytes {
		return text
	}
	cut := maxScoredBytes
	for cut > 0 && text[cut]&0xC0 == 0x80 {
		cut--
	}
	return text[:cut]
}
