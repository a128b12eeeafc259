package sentiment

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// TestEvalReport prints the scorer's 3-class accuracy and macro-F1 on
// labelled sets, beside those of this package's VADER rules alone on the
// same sentences. It is a measurement, run by hand (docs/sentiment.md):
//
//	python3 spawn/internal/sentiment/train/prepare.py /tmp/sets
//	(train.py with a HELD_OUT_DIR of /tmp/heldout)
//	BW_SENTIMENT_EVAL=1 BW_SENTIMENT_SETS=/tmp/sets BW_SENTIMENT_HELDOUT=/tmp/heldout \
//	  go test -run TestEvalReport -v ./spawn/internal/sentiment/
//
// A vader-* set is scored with the model trained on the other three
// (BW_SENTIMENT_HELDOUT/without-<set>.tsv), so that no row scores
// sentences the model was trained on; without it those rows are left
// out. The other sets were never used in training.
func TestEvalReport(t *testing.T) {
	if os.Getenv("BW_SENTIMENT_EVAL") != "1" {
		t.Skip("a measurement: BW_SENTIMENT_EVAL=1 runs it")
	}
	dir, held := os.Getenv("BW_SENTIMENT_SETS"), os.Getenv("BW_SENTIMENT_HELDOUT")
	sets, err := filepath.Glob(filepath.Join(dir, "*.tsv"))
	if err != nil || len(sets) == 0 {
		t.Fatalf("BW_SENTIMENT_SETS=%q holds no labelled sets (train/prepare.py writes them)", dir)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	embedded, err := New()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	fmt.Printf("scorer: %.1f MB of heap\n", float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
	fmt.Printf("%-14s %6s  %-22s %-15s %-15s\n", "set", "texts", "model", "model acc / F1", "VADER acc / F1")
	for _, path := range sets {
		name := strings.TrimSuffix(filepath.Base(path), ".tsv")
		s, which := embedded, "embedded (never saw it)"
		if strings.HasPrefix(name, "vader-") {
			if held == "" {
				continue
			}
			src, err := os.ReadFile(filepath.Join(held, "without-"+name+".tsv"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := parseLinear(string(src))
			if err != nil {
				t.Fatal(err)
			}
			if s, err = New(); err != nil {
				t.Fatal(err)
			}
			s.model, which = m, "trained without it"
		}
		var gold, model, vader []string
		for label, text := range labelled(t, path) {
			sc, _ := s.Score(text, "en")
			var vt tokens
			vs, _ := embedded.vader.score(text, &vt, nil)
			gold, model, vader = append(gold, label), append(model, sc.Label), append(vader, vaderLabel(vs.Compound))
		}
		ma, mf := accuracyF1(gold, model)
		va, vf := accuracyF1(gold, vader)
		fmt.Printf("%-14s %6d  %-22s %.3f / %.3f  %.3f / %.3f\n", name, len(gold), which, ma, mf, va, vf)
	}
	runtime.KeepAlive(embedded)
}

// vaderLabel labels a VADER compound score as its authors advise.
func vaderLabel(compound float64) string {
	switch {
	case compound >= 0.05:
		return api.SentimentPositive
	case compound <= -0.05:
		return api.SentimentNegative
	}
	return api.SentimentNeutral
}

// labelled yields a set's lines: label, tab, text.
func labelled(t *testing.T, path string) func(func(string, string) bool) {
	return func(yield func(string, string) bool) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			label, text, ok := strings.Cut(sc.Text(), "\t")
			if !ok {
				t.Fatalf("%s: a line without a tab", path)
			}
			if !yield(label, text) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// accuracyF1 is the share of right answers and the mean F1 over the
// labels gold has (a set labelled positive and negative only counts a
// neutral answer as wrong, and has no neutral F1).
func accuracyF1(gold, got []string) (acc, macroF1 float64) {
	var labels []string
	right := 0
	for i := range gold {
		if !slices.Contains(labels, gold[i]) {
			labels = append(labels, gold[i])
		}
		if gold[i] == got[i] {
			right++
		}
	}
	for _, l := range labels {
		var tp, fp, fn float64
		for i := range gold {
			switch {
			case gold[i] == l && got[i] == l:
				tp++
			case got[i] == l:
				fp++
			case gold[i] == l:
				fn++
			}
		}
		if tp > 0 {
			p, r := tp/(tp+fp), tp/(tp+fn)
			macroF1 += 2 * p * r / (p + r)
		}
	}
	return float64(right) / float64(len(gold)), macroF1 / float64(len(labels))
}

func TestAccuracyF1(t *testing.T) {
	gold := []string{"positive", "positive", "negative", "negative"}
	got := []string{"positive", "neutral", "negative", "positive"}
	acc, f1 := accuracyF1(gold, got)
	// positive: p 1/2 r 1/2 → F1 1/2; negative: p 1 r 1/2 → F1 2/3.
	if acc != 0.5 || f1 < 0.5833 || f1 > 0.5834 {
		t.Fatalf("accuracy %v macro-F1 %v", acc, f1)
	}
}
