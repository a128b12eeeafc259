package sentiment

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestVADER_AgreesWithReference scores texts with this package's VADER and
// compares the compound score with the reference implementation's
// (testdata/vader_reference.tsv, written by vaderSentiment 3.3.2). Texts
// with "but" may differ where the reference halves by value rather than by
// position; they must still agree in sign.
func TestVADER_AgreesWithReference(t *testing.T) {
	v, err := newVADER()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/vader_reference.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var tk tokens
	n, exact := 0, 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		want, text, _ := strings.Cut(line, "\t")
		w, err := strconv.ParseFloat(want, 64)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		got, _ := v.score(text, &tk, nil)
		n++
		if math.Abs(got.Compound-w) < 0.0005 {
			exact++
			continue
		}
		if !strings.Contains(strings.ToLower(text), "but") || (got.Compound > 0) != (w > 0) {
			t.Errorf("%q: compound %.4f, reference %.4f", text, got.Compound, w)
		}
	}
	if n < 300 || exact < n-3 {
		t.Fatalf("%d of %d texts agree with the reference", exact, n)
	}
}

func TestVADER_Rules(t *testing.T) {
	v, err := newVADER()
	if err != nil {
		t.Fatal(err)
	}
	var tk tokens
	c := func(s string) float64 {
		got, _ := v.score(s, &tk, nil)
		return got.Compound
	}
	tests := []struct {
		name         string
		lower, upper string // c(lower) < c(upper)
	}{
		{"negation", "the food was not good", "the food was good"},
		{"negation flips", "the food was not good", "the food was"},
		{"intensifier", "the food was good", "the food was very good"},
		{"dampener", "the food was kind of good", "the food was good"},
		{"capitals", "the food was good", "the food was GOOD"},
		{"exclamation", "the food was good", "the food was good!!"},
		{"but", "the staff were great but the food was awful", "the food was awful but the staff were great"},
		{"emoji", "the food 😠", "the food"},
		{"emoji positive", "the food", "the food 😍"},
		{"emoticon", "the food :(", "the food :)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if lo, hi := c(tc.lower), c(tc.upper); lo >= hi {
				t.Fatalf("%q scores %.3f, not below %q at %.3f", tc.lower, lo, tc.upper, hi)
			}
		})
	}
}
