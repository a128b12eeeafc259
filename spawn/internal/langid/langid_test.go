package langid

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// loaded returns the default detector once its models are loaded.
func loaded(t testing.TB) *Detector {
	t.Helper()
	d := Default()
	select {
	case <-d.Ready():
	case <-time.After(2 * time.Minute):
		t.Fatal("the models did not load")
	}
	return d
}

func TestDetect(t *testing.T) {
	d := loaded(t)
	tests := []struct{ text, want string }{
		{"The weather is lovely today and we are going to the beach.", "en"},
		{"Hoy hace muy buen tiempo y vamos a ir a la playa con mis amigos.", "es"},
		{"Hoje o tempo está ótimo e nós vamos à praia com os amigos.", "pt"},
		{"Aujourd'hui il fait très beau et nous allons à la plage.", "fr"},
		{"Heute ist das Wetter schön und wir gehen an den Strand.", "de"},
		{"Oggi il tempo è bellissimo e andiamo al mare con gli amici.", "it"},
		{"Vandaag is het mooi weer en we gaan naar het strand.", "nl"},
		{"Dzisiaj jest piękna pogoda i idziemy na plażę.", "pl"},
		{"Bugün hava çok güzel ve arkadaşlarla plaja gidiyoruz.", "tr"},
		{"Сегодня прекрасная погода, и мы идём на пляж.", "ru"},
		{"今日はとても良い天気なので、友達と海に行きます。", "ja"},
		{"今天天气很好，我们和朋友一起去海边。", "zh"},
		{"오늘은 날씨가 좋아서 친구들과 해변에 갑니다.", "ko"},
		{"اليوم الطقس جميل ونحن ذاهبون إلى الشاطئ.", "ar"},
		{"आज मौसम बहुत अच्छा है और हम समुद्र तट पर जा रहे हैं।", "hi"},
		{"Σήμερα ο καιρός είναι υπέροχος και πάμε στην παραλία.", "el"},
		{"Hôm nay trời rất đẹp và chúng tôi đi biển.", "vi"},
		{"วันนี้อากาศดีมากและเราจะไปทะเล", "th"},
	}
	for _, tc := range tests {
		if got, ok := d.Detect(tc.text); !ok || got != tc.want {
			t.Errorf("%q: got %q %v, want %q", tc.text, got, ok, tc.want)
		}
	}
}

func TestDetect_UnsureUntilLoaded(t *testing.T) {
	d := &Detector{ready: make(chan struct{})}
	if got, ok := d.Detect("The weather is lovely today and we are going to the beach."); ok {
		t.Fatalf("detected %q before loading", got)
	}
}

// TestDetect_UnsureIsUnknown: what says too little to tell is left
// unknown, never guessed.
func TestDetect_UnsureIsUnknown(t *testing.T) {
	d := loaded(t)
	for _, text := range []string{"", "ok", "lol 😂😂", "https://example.com/a/b/c @someone #golang", "12345 678 !!!", "pizza"} {
		if got, ok := d.Detect(text); ok {
			t.Errorf("%q: detected %q", text, got)
		}
	}
}

func TestPrepare(t *testing.T) {
	got := prepare("Check this out https://example.com/x @bob #news it is great")
	if got != "Check this out it is great" {
		t.Fatalf("got %q", got)
	}
	long := strings.Repeat("é", maxDetectBytes)
	if p := prepare(long); len(p) > maxDetectBytes || !utf8.ValidString(p) {
		t.Fatalf("prepared %d bytes, valid %v", len(p), utf8.ValidString(p))
	}
}

// TestAccuracyReport prints the accuracy of the detector and of Lingua
// (low-accuracy mode, the same languages, behind the same preparation,
// length rule and script shortcut) on Lingua's test data
// (cmd/language-testdata of a checkout of github.com/pemistahl/lingua-go,
// named by BW_LANGID_TESTDATA; Lingua keeps it out of its models'
// training data) for the languages detected: paragraphs of three
// sentences, sentences, and short posts (sentences of at most 60
// characters and word pairs); and how often the two give the same
// answer. It is a measurement, run by hand; see docs/sentiment.md.
func TestAccuracyReport(t *testing.T) {
	dir := os.Getenv("BW_LANGID_TESTDATA")
	if dir == "" {
		t.Skip("BW_LANGID_TESTDATA names no Lingua test data")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	d := New()
	<-d.Ready()
	loadTook := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	fmt.Printf("detector: models loaded in %v, %.1f MB of heap\n", loadTook.Round(time.Millisecond),
		float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
	runtime.KeepAlive(d)
	runtime.GC()
	runtime.ReadMemStats(&before)
	start = time.Now()
	ref := newLinguaRef()
	loadTook = time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	fmt.Printf("Lingua:   models loaded in %v, %.1f MB of heap\n", loadTook.Round(time.Millisecond), float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
	read := func(kind, code string) []string {
		f, err := os.Open(filepath.Join(dir, kind, code+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if s := strings.TrimSpace(sc.Text()); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	type tally struct{ right, wrong, unsure, n int }
	type set struct {
		name       string
		det, lin   tally
		same       int
		detT, linT time.Duration
	}
	para, sent, short := &set{name: "paragraphs"}, &set{name: "sentences"}, &set{name: "short posts (<= 60 chars)"}
	add := func(tl *tally, code, got string, ok bool) {
		tl.n++
		switch {
		case !ok:
			tl.unsure++
		case got == code:
			tl.right++
		default:
			tl.wrong++
		}
	}
	count := func(s *set, code, text string) {
		start := time.Now()
		got, ok := d.Detect(text)
		s.detT += time.Since(start)
		start = time.Now()
		lgot, lok := ref.Detect(text)
		s.linT += time.Since(start)
		add(&s.det, code, got, ok)
		add(&s.lin, code, lgot, lok)
		if got == lgot && ok == lok {
			s.same++
		}
	}
	for _, c := range Languages {
		s := read("sentences", c)
		for i := 0; i+2 < len(s); i += 3 {
			count(para, c, s[i]+" "+s[i+1]+" "+s[i+2])
		}
		for _, x := range s {
			count(sent, c, x)
			if utf8.RuneCountInString(x) <= 60 {
				count(short, c, x)
			}
		}
		for _, x := range read("word-pairs", c) {
			count(short, c, x)
		}
	}
	frac := func(a, n int) float64 { return float64(a) / float64(n) }
	for _, s := range []*set{para, sent, short} {
		for _, r := range []struct {
			who  string
			t    tally
			took time.Duration
		}{{"detector", s.det, s.detT}, {"Lingua", s.lin, s.linT}} {
			fmt.Printf("%-26s %-8s %6d texts: right %.4f, wrong %.4f, unsure %.4f; %.1f µs a text\n", s.name, r.who, r.t.n,
				frac(r.t.right, r.t.n), frac(r.t.wrong, r.t.n), frac(r.t.unsure, r.t.n), float64(r.took.Microseconds())/float64(r.t.n))
		}
		fmt.Printf("%-26s same answer as Lingua: %.4f (%d differ)\n", s.name, frac(s.same, s.det.n), s.det.n-s.same)
	}
}

// post is a typical post of the Bluesky path.
const post = "just watched the new episode and honestly the ending was great, can't wait for next week!! who else is watching"

// BenchmarkDetect times the detector and Lingua (the same languages,
// preparation and rules) on the same post in the same run; the
// processor time of each is cpu-µs/op.
func BenchmarkDetect(b *testing.B) {
	d := loaded(b)
	ref := newLinguaRef()
	for _, c := range []struct {
		name   string
		detect func(string) (string, bool)
	}{{"detector", d.Detect}, {"lingua", ref.Detect}} {
		b.Run(c.name, func(b *testing.B) {
			if got, ok := c.detect(post); !ok || got != "en" {
				b.Fatalf("got %q %v", got, ok)
			}
			b.ReportAllocs()
			runtime.GC() // the models' loading garbage is not the detection's
			cpu := cpuTime()
			for b.Loop() {
				c.detect(post)
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkDetectTestData times the detector and Lingua, as
// BenchmarkDetect, on every sentence of Lingua's test data for the
// languages detected (BW_LANGID_TESTDATA, as TestAccuracyReport): an op
// is one sentence, taken in a stride that visits every language.
func BenchmarkDetectTestData(b *testing.B) {
	dir := os.Getenv("BW_LANGID_TESTDATA")
	if dir == "" {
		b.Skip("BW_LANGID_TESTDATA names no Lingua test data")
	}
	var texts []string
	for _, c := range Languages {
		data, err := os.ReadFile(filepath.Join(dir, "sentences", c+".txt"))
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				texts = append(texts, l)
			}
		}
	}
	d := loaded(b)
	ref := newLinguaRef()
	for _, c := range []struct {
		name   string
		detect func(string) (string, bool)
	}{{"detector", d.Detect}, {"lingua", ref.Detect}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.GC() // the models' loading garbage is not the detection's
			cpu := cpuTime()
			i := 0
			for b.Loop() {
				c.detect(texts[(i*7919)%len(texts)])
				i++
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the processor time the process has used, so that a
// benchmark on a busy machine reports its own cost, not its wait.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestTooShort(t *testing.T) {
	for text, want := range map[string]bool{
		"news":                    true,
		"ok @someone #golangnews": true,
		"日本語":                     true,
		"日本語です":                   false,
		"the weather is lovely":   false,
	} {
		if got := tooShort(prepare(text)); got != want {
			t.Errorf("tooShort(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestByScript: a text mostly in a script only one detected language is
// written in is that language; mixed, Han-only, Cyrillic, Arabic or
// Latin texts are left to the model.
func TestByScript(t *testing.T) {
	for _, c := range []struct {
		text, want string
		ok         bool
	}{
		{"오늘 날씨가 정말 좋네요", "ko", true},
		{"今日はとても良い天気ですね", "ja", true},
		{"วันนี้อากาศดีมาก", "th", true},
		{"Σήμερα ο καιρός είναι πολύ καλός", "el", true},
		{"היום מזג האוויר יפה מאוד", "he", true},
		{"আজ আবহাওয়া খুব ভালো", "bn", true},
		{"आज मौसम बहुत अच्छा है", "hi", true},
		{"今天天气很好", "", false},
		{"Сегодня очень хорошая погода", "", false},
		{"الطقس جميل جدا اليوم", "", false},
		{"the weather is very nice today", "", false},
		{"the weather is nice 오늘", "", false},
	} {
		got, ok := byScript(c.text)
		if got != c.want || ok != c.ok {
			t.Errorf("byScript(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}
