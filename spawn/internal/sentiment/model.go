package sentiment

import (
	"bufio"
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The model file (data/model.tsv, written by train/train.py) is one line
// per weight vector: a name, then its weights for the classes negative,
// neutral and positive, tab-separated. "bias" is the intercept; the names
// of VADER's scores start with "v:" (v:compound, v:pos, v:neg, v:neu);
// the rest are the sparse features of appendFeatures. Lines starting with
// '#' are comments.

//go:embed data/model.tsv
var modelTSV string

// linear is a multinomial logistic regression.
type linear struct {
	bias    [3]float64
	vader   [4][3]float64         // compound, pos, neg, neu
	weights map[uint64][3]float32 // by hashName of the feature
}

// vaderFeatures names the model's rows for VADER's scores, in the order
// of linear.vader.
var vaderFeatures = [4]string{"v:compound", "v:pos", "v:neg", "v:neu"}

func parseLinear(src string) (*linear, error) {
	m := &linear{weights: make(map[uint64][3]float32, 1<<15)}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	seenBias := false
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Split(text, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("sentiment: model line %d: %d fields, want 4", line, len(f))
		}
		var w [3]float64
		for k := range 3 {
			x, err := strconv.ParseFloat(f[k+1], 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("sentiment: model line %d: bad weight %q", line, f[k+1])
			}
			w[k] = x
		}
		switch name := f[0]; {
		case name == "bias":
			m.bias, seenBias = w, true
		case strings.HasPrefix(name, "v:"):
			i := indexOf(vaderFeatures[:], name)
			if i < 0 {
				return nil, fmt.Errorf("sentiment: model line %d: unknown feature %q", line, name)
			}
			m.vader[i] = w
		default:
			m.weights[hashName(name)] = [3]float32{float32(w[0]), float32(w[1]), float32(w[2])}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sentiment: reading the model: %w", err)
	}
	if !seenBias {
		return nil, fmt.Errorf("sentiment: the model has no bias line")
	}
	return m, nil
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// predict returns the class probabilities of a text's features (their
// hashes, sorted and without repeats: a feature counts once).
func (m *linear) predict(feats []uint64, vs vaderScores) [3]float64 {
	z := m.bias
	for i, x := range [4]float64{vs.Compound, vs.Pos, vs.Neg, vs.Neu} {
		for k := range 3 {
			z[k] += m.vader[i][k] * x
		}
	}
	for _, f := range feats {
		w, ok := m.weights[f]
		if !ok {
			continue
		}
		for k := range 3 {
			z[k] += float64(w[k])
		}
	}
	mx := max(z[0], z[1], z[2])
	var p [3]float64
	sum := 0.0
	for k := range 3 {
		p[k] = math.Exp(z[k] - mx)
		sum += p[k]
	}
	for k := range 3 {
		p[k] /= sum
	}
	return p
}
