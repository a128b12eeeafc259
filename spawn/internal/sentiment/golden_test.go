package sentiment

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/score_golden.tsv from the scorer's current answers")

const goldenPath = "testdata/score_golden.tsv"

// goldenTexts are the texts whose answers the scorer must keep bit for
// bit: the VADER reference texts, then texts drawn at random (from a
// fixed seed) from the lexicon's words, emoji, emoticons, negations,
// intensifiers, hashtags, capitals and punctuation.
func goldenTexts(t *testing.T) []string {
	t.Helper()
	var texts []string
	for line := range lines(t, "testdata/vader_reference.tsv") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if _, text, ok := strings.Cut(line, "\t"); ok {
			texts = append(texts, text)
		}
	}
	var lexicon, emoji []string
	for line := range lines(t, "data/vader_lexicon.tsv") {
		if w, _, ok := strings.Cut(line, "\t"); ok {
			lexicon = append(lexicon, w)
		}
	}
	for line := range lines(t, "data/vader_emoji.tsv") {
		if e, _, ok := strings.Cut(line, "\t"); ok {
			emoji = append(emoji, e)
		}
	}
	plain := []string{"the", "a", "movie", "was", "and", "i", "it", "today", "this", "is", "my", "phone", "they", "we", "food", "kind", "of", "sort"}
	rules := []string{"not", "never", "isn't", "don't", "very", "extremely", "slightly", "but", "BUT", "without", "doubt", "kind of", "least", "no", "nor", "really", "so", "too"}
	punct := []string{"!", "!!", "!!!", "?", "??", "?!", ".", ",", "...", " :)", " :(", " :D", " ;)", " <3", " :-/"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 4000 {
		var b strings.Builder
		for i, n := 0, 1+r.IntN(25); i < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			var w string
			switch k := r.IntN(20); {
			case k < 7:
				w = lexicon[r.IntN(len(lexicon))]
			case k < 11:
				w = plain[r.IntN(len(plain))]
			case k < 14:
				w = rules[r.IntN(len(rules))]
			case k < 16:
				w = emoji[r.IntN(len(emoji))]
			case k < 18:
				w = "#" + lexicon[r.IntN(len(lexicon))] + plain[r.IntN(len(plain))]
			default:
				w = punct[r.IntN(len(punct))]
			}
			if r.IntN(8) == 0 {
				w = strings.ToUpper(w)
			} else if r.IntN(10) == 0 && w != "" {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if r.IntN(6) == 0 {
				b.WriteString(punct[r.IntN(len(punct))])
			}
		}
		texts = append(texts, b.String())
	}
	return texts
}

func lines(t *testing.T, path string) func(func(string) bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return func(yield func(string) bool) {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if !yield(sc.Text()) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// goldenLine is one text's answer: a hash of the text (so that a change
// in the texts drawn is told from a change in the scorer), whether it
// was scored, its label, and its score's bits.
func goldenLine(text string, s *Scorer) string {
	h := fnv.New64a()
	h.Write([]byte(text))
	got, ok := s.Score(text, "en")
	return fmt.Sprintf("%016x\t%t\t%s\t%016x", h.Sum64(), ok, got.Label, math.Float64bits(got.Score))
}

// TestScore_SameAnswersAsRecorded holds the scorer to the answers it
// gave, bit for bit, on every text of goldenTexts: a change in how a
// text is walked must not change what it scores.
func TestScore_SameAnswersAsRecorded(t *testing.T) {
	s := scorer(t)
	texts := goldenTexts(t)
	if *updateGolden {
		var b strings.Builder
		for _, text := range texts {
			b.WriteString(goldenLine(text, s))
			b.WriteByte('\n')
		}
		if err := os.WriteFile(goldenPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for line := range lines(t, goldenPath) {
		want = append(want, line)
	}
	if len(want) != len(texts) {
		t.Fatalf("%s has %d answers, want %d", goldenPath, len(want), len(texts))
	}
	bad := 0
	for i, text := range texts {
		if got := goldenLine(text, s); got != want[i] {
			bad++
			if bad <= 10 {
				t.Errorf("text %d %q: got %s, recorded %s", i, text, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d answers differ from those recorded", bad, len(texts))
	}
}
