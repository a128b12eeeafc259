package sentiment

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func scorer(t testing.TB) *Scorer {
	t.Helper()
	s, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScore_Labels(t *testing.T) {
	s := scorer(t)
	tests := []struct {
		text, want string
	}{
		{"I love this, the staff were wonderful and the food was great!", api.SentimentPositive},
		{"Worst flight ever. Lost my bag and nobody cared. Awful.", api.SentimentNegative},
		{"The meeting is at 3pm in room 204.", api.SentimentNeutral},
		{"this is not good at all", api.SentimentNegative},
		{"thanks so much 😍😍", api.SentimentPositive},
		{"my phone died again 😡😭", api.SentimentNegative},
		{"see you tomorrow :)", api.SentimentPositive},
		{"missed the bus again :(", api.SentimentNegative},
		{"#Disappointed #EpicFail", api.SentimentNegative},
		{"#HappyFriday #LoveIt", api.SentimentPositive},
	}
	for _, tc := range tests {
		got, ok := s.Score(tc.text, "en")
		if !ok || got.Label != tc.want {
			t.Errorf("%q: got %+v (%v), want %s", tc.text, got, ok, tc.want)
		}
		if got.Score < -1 || got.Score > 1 {
			t.Errorf("%q: score %v outside [-1, 1]", tc.text, got.Score)
		}
	}
}

// TestScore_TheRulesCount checks that each rule moves the score the way
// it should: a negation, an intensifier, an emoji, an emoticon and a
// hashtag's words change what a sentence scores.
func TestScore_TheRulesCount(t *testing.T) {
	s := scorer(t)
	score := func(text string) float64 {
		got, ok := s.Score(text, "en")
		if !ok {
			t.Fatalf("%q: not scored", text)
		}
		return got.Score
	}
	tests := []struct {
		name         string
		lower, upper string
	}{
		{"negation", "the update is not good", "the update is good"},
		{"negated negative", "the update is bad", "the update is not bad"},
		{"intensifier", "the update is good", "the update is very good"},
		{"dampener", "the update is slightly good", "the update is good"},
		{"emoji", "the update 😠", "the update 😍"},
		{"emoticon", "the update :(", "the update :)"},
		{"hashtag", "the update #EpicFail", "the update #LoveIt"},
		{"but", "the screen is great but the battery is awful", "the battery is awful but the screen is great"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if lo, hi := score(tc.lower), score(tc.upper); lo >= hi {
				t.Fatalf("%q scores %.3f, not below %q at %.3f", tc.lower, lo, tc.upper, hi)
			}
		})
	}
}

func TestScore_OnlyLanguagesItIsBuiltFor(t *testing.T) {
	s := scorer(t)
	for _, lang := range []string{"en", "EN", "en-GB", "en-us"} {
		if _, ok := s.Score("what a great day", lang); !ok {
			t.Errorf("lang %q not scored", lang)
		}
	}
	// A text in another language, or of no known language, gets no
	// score, even when it holds English words.
	for _, lang := range []string{"", "de", "ja", "eng", "e", "fr-en"} {
		if got, ok := s.Score("great", lang); ok {
			t.Errorf("lang %q scored %+v", lang, got)
		}
	}
	if got, ok := s.Score("   ", "en"); ok {
		t.Errorf("blank text scored %+v", got)
	}
}

func TestScore_LongTextIsBounded(t *testing.T) {
	s := scorer(t)
	long := strings.Repeat("a terrible, awful, horrible day ", 2000) + "é"
	got, ok := s.Score(long, "en")
	if !ok || got.Label != api.SentimentNegative {
		t.Fatalf("got %+v %v", got, ok)
	}
}

func TestFeatures(t *testing.T) {
	s := scorer(t)
	got, _ := s.Features("I don't like it :( #NeverAgain 😠 https://x.example/a @bob")
	for _, want := range []string{"w:dont", "w:!like", "b:dont_!like", "w:!it", "e::(", "w:never", "w:!again", "e:😠"} {
		if !slices.Contains(got, want) {
			t.Errorf("features %q lack %q", got, want)
		}
	}
	for _, f := range got {
		if strings.Contains(f, "example") || strings.Contains(f, "bob") {
			t.Errorf("feature %q of a link or a mention", f)
		}
	}
}

func TestSplitTag(t *testing.T) {
	tests := map[string][]string{
		"NeverAgain":  {"Never", "Again"},
		"iphone15":    {"iphone", "15"},
		"golang":      {"golang"},
		"worst_ever":  {"worst", "ever"},
		"BBCNews":     {"BBCNews"},
		"LoveIt2024x": {"Love", "It", "2024", "x"},
	}
	for in, want := range tests {
		if got := splitTag(in); !slices.Equal(got, want) {
			t.Errorf("splitTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEmoticonAt(t *testing.T) {
	for _, yes := range []string{":)", ":-)", ";P", ":D", "<3", "</3", ":(", "(:", ":/ ok"} {
		if emoticonAt(yes) == 0 {
			t.Errorf("%q: no emoticon", yes)
		}
	}
	for _, no := range []string{":Donald", "8)", "a:)", "::", "http://x"} {
		if n := emoticonAt(no); n != 0 {
			t.Errorf("%q: emoticon of %d bytes", no, n)
		}
	}
}

func BenchmarkScore(b *testing.B) {
	s := scorer(b)
	post := "just watched the new episode and honestly the ending was great, can't wait for next week!! who else is watching 🚀 #TVTime"
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		s.Score(post, "en")
	}
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the processor time the process has used, so that a
// benchmark on a busy machine reports its own cost, not its wait.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
