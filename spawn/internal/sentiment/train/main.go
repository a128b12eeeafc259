// Command train is the Go half of the sentiment model's training and
// evaluation (docs/sentiment.md): it writes the features the
// scorer sees of labelled texts, for train.py to learn weights from, and
// scores labelled sets with the embedded model.
//
//	go run ./spawn/internal/sentiment/train features < set.tsv > set.jsonl
//	go run ./spawn/internal/sentiment/train eval set1.tsv set2.tsv …
//
// A labelled set is one text a line: label (positive, neutral or
// negative), a tab, the text with its tabs and newlines written as
// spaces.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/sentiment"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: train features < set.tsv | train eval set.tsv…")
	}
	s, err := sentiment.New()
	if err != nil {
		return err
	}
	switch args[0] {
	case "features":
		return features(s, in, out)
	case "eval":
		return eval(s, args[1:], out)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// features writes one JSON line per text: its label, sparse features and
// VADER scores.
func features(s *sentiment.Scorer, in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	err := eachLine(in, func(label, text string) error {
		sparse, v := s.Features(text)
		return enc.Encode(struct {
			Label string     `json:"label"`
			F     []string   `json:"f"`
			V     [4]float64 `json:"v"`
		}{label, sparse, v})
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// eval scores each set and writes its 3-class accuracy and macro-F1 over
// the labels the set has (a set labelled positive and negative only
// counts a neutral answer as wrong).
func eval(s *sentiment.Scorer, sets []string, out io.Writer) error {
	fmt.Fprintf(out, "%-16s %7s %9s %9s\n", "set", "texts", "accuracy", "macro-F1")
	for _, path := range sets {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		var gold, got []string
		err = eachLine(f, func(label, text string) error {
			sc, _ := s.Score(text, "en")
			gold, got = append(gold, label), append(got, sc.Label)
			return nil
		})
		f.Close()
		if err != nil {
			return err
		}
		acc, f1 := metrics(gold, got)
		fmt.Fprintf(out, "%-16s %7d %9.3f %9.3f\n", strings.TrimSuffix(filepath.Base(path), ".tsv"), len(gold), acc, f1)
	}
	return nil
}

func metrics(gold, got []string) (acc, macroF1 float64) {
	labels := map[string]bool{}
	right := 0
	for i := range gold {
		labels[gold[i]] = true
		if gold[i] == got[i] {
			right++
		}
	}
	for l := range labels {
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

func eachLine(in io.Reader, fn func(label, text string) error) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		n++
		label, text, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			return fmt.Errorf("line %d: no tab", n)
		}
		if err := fn(label, text); err != nil {
			return err
		}
	}
	return sc.Err()
}
