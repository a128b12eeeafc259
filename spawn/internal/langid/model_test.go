package langid

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestAgreesWithLingua: on texts of every kind — the sentences of
// TestDetect, each cut after every word, and every two of them joined —
// the detector says what Lingua (low-accuracy mode, the same languages)
// says, unsure where it is unsure.
func TestAgreesWithLingua(t *testing.T) {
	d := loaded(t)
	ref := newLinguaRef()
	sentences := []string{
		"The weather is lovely today and we are going to the beach.",
		"Hoy hace muy buen tiempo y vamos a ir a la playa con mis amigos.",
		"Hoje o tempo está ótimo e nós vamos à praia com os amigos.",
		"Aujourd'hui il fait très beau et nous allons à la plage.",
		"Heute ist das Wetter schön und wir gehen an den Strand.",
		"Oggi il tempo è bellissimo e andiamo al mare con gli amici.",
		"Vandaag is het mooi weer en we gaan naar het strand.",
		"Idag är vädret fint och vi ska till stranden med våra vänner.",
		"I dag er vejret dejligt, og vi skal på stranden med vennerne.",
		"I dag er været fint, og vi skal på stranden med vennene.",
		"Tänään on kaunis sää ja menemme rannalle ystävien kanssa.",
		"Dzisiaj jest piękna pogoda i idziemy na plażę.",
		"Dnes je krásné počasí a jdeme s přáteli na pláž.",
		"Astăzi vremea este frumoasă și mergem la plajă cu prietenii.",
		"Ma gyönyörű az idő, és a barátainkkal a strandra megyünk.",
		"Bugün hava çok güzel ve arkadaşlarla plaja gidiyoruz.",
		"Сегодня прекрасная погода, и мы идём на пляж.",
		"Сьогодні чудова погода, і ми йдемо на пляж з друзями.",
		"今日はとても良い天気なので、友達と海に行きます。",
		"今天天气很好，我们和朋友一起去海边。",
		"오늘은 날씨가 좋아서 친구들과 해변에 갑니다.",
		"اليوم الطقس جميل ونحن ذاهبون إلى الشاطئ.",
		"امروز هوا خیلی خوب است و با دوستان به ساحل می رویم.",
		"Hôm nay trời rất đẹp và chúng tôi đi biển.",
		"Hari ini cuacanya sangat bagus dan kami pergi ke pantai.",
		"just watched the new episode and honestly the ending was great, can't wait for next week!!",
	}
	var texts []string
	for _, s := range sentences {
		words := strings.Fields(s)
		for i := 1; i <= len(words); i++ {
			texts = append(texts, strings.Join(words[:i], " "))
		}
	}
	for _, a := range sentences {
		for _, b := range sentences {
			texts = append(texts, a+" "+b)
		}
	}
	differ, sure := 0, 0
	for _, text := range texts {
		got, ok := d.Detect(text)
		want, wok := ref.Detect(text)
		if ok {
			sure++
		}
		if got != want || ok != wok {
			differ++
			t.Errorf("%q: detector %q %v, Lingua %q %v", text, got, ok, want, wok)
		}
	}
	if sure < len(texts)/2 {
		t.Errorf("sure of %d of %d texts only", sure, len(texts))
	}
	t.Logf("%d texts, %d sure, %d differ", len(texts), sure, differ)
}

// table writes an n-gram table as internal/gen does: langs, then for
// each language its unigrams, bigrams and trigrams with their
// log-probabilities.
func table(langs []string, models [][3]map[string]float32, tail ...byte) []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, "bwlangid 1\n"...)
	b = binary.AppendUvarint(b, uint64(len(langs)))
	for _, l := range langs {
		str(l)
	}
	for _, m := range models {
		for _, grams := range m {
			keys := slices.Sorted(maps.Keys(grams))
			b = binary.AppendUvarint(b, uint64(len(keys)))
			for _, k := range keys {
				str(k)
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(grams[k]))
			}
		}
	}
	b = append(b, tail...)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestModelScore: a trigram counts, in each language, its own
// log-probability, else its bigram's, else its first letter's, else
// nothing — Lingua's back-off — from one table for all languages.
func TestModelScore(t *testing.T) {
	langs := []string{"xa", "xb", "xc", "xd"}
	models := [][3]map[string]float32{
		{{"a": -3}, {"ab": -2}, {"abc": -1}}, // knows the trigram
		{{"a": -3}, {"ab": -2}, {"abd": -1}}, // its bigram
		{{"a": -3}, {"bc": -2}, {"bcd": -1}}, // its first letter
		{{"z": -3}, {"zz": -2}, {"zzz": -1}}, // nothing
	}
	m, err := loadModel(table(langs, models), langs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		keys []uint64
		want []float64
	}{
		{[]uint64{key3('a', 'b', 'c')}, []float64{-1, -2, -3, 0}},
		{[]uint64{key3('a', 'b', 'd')}, []float64{-2, -1, -3, 0}},
		{[]uint64{key3('a', 'x', 'y')}, []float64{-3, -3, -3, 0}},
		{[]uint64{key3('q', 'q', 'q')}, []float64{0, 0, 0, 0}},
		{[]uint64{key3('a', 'b', 'c'), key3('b', 'c', 'd')}, []float64{-1, -2, -4, 0}},
	} {
		sums := make([]float64, len(langs))
		m.score(c.keys, sums)
		if !slices.Equal(sums, c.want) {
			t.Errorf("keys %x: sums %v, want %v", c.keys, sums, c.want)
		}
	}
}

// TestDecide: the best language is the answer only when its likelihood
// (a softmax of the sums among the languages left, those with any) is
// ahead of the next one's by minDistance.
func TestDecide(t *testing.T) {
	all := langSet(0xf)
	for _, c := range []struct {
		sums []float64
		set  langSet
		want int
	}{
		{[]float64{-10, -20, 0, 0}, all, 0},        // far ahead
		{[]float64{-10, -10.2, 0, 0}, all, -1},     // too close
		{[]float64{-10, -10, 0, 0}, all, -1},       // tied
		{[]float64{0, 0, -5, 0}, all, 2},           // the only one with any
		{[]float64{0, 0, 0, 0}, all, -1},           // none
		{[]float64{-10, -20, -30, 0}, 0b110, 1},    // the best left out
		{[]float64{-10, -10.5, -40, -40}, all, -1}, // 0.62 against 0.38
		{[]float64{-10, -11.5, -40, -40}, all, 0},  // 0.82 against 0.18
	} {
		if got := decide(c.sums, c.set); got != c.want {
			t.Errorf("decide(%v, %b) = %d, want %d", c.sums, c.set, got, c.want)
		}
	}
}

// TestLoadModel_Bad: a damaged or foreign table is an error, never a
// panic or a half-built model.
func TestLoadModel_Bad(t *testing.T) {
	langs := []string{"xa", "xb"}
	good := [][3]map[string]float32{{{"a": -1}, {"ab": -1}, {"abc": -1}}, {{"b": -1}, {"bc": -1}, {"bcd": -1}}}
	if _, err := loadModel(table(langs, good), langs); err != nil {
		t.Fatalf("a good table: %v", err)
	}
	with := func(lang, order int, gram string, logp float32) [][3]map[string]float32 {
		m := [][3]map[string]float32{{{"a": -1}, {"ab": -1}, {"abc": -1}}, {{"b": -1}, {"bc": -1}, {"bcd": -1}}}
		m[lang][order][gram] = logp
		return m
	}
	valid := table(langs, good)
	for name, data := range map[string][]byte{
		"not gzip":            []byte("bwlangid 1\n"),
		"empty":               table(nil, nil)[:0],
		"no languages":        table(nil, nil),
		"trailing data":       table(langs, good, 0),
		"truncated":           valid[:len(valid)-8],
		"a positive log":      table(langs, with(0, 2, "xyz", 0.5)),
		"not a number":        table(langs, with(0, 2, "xyz", float32(math.NaN()))),
		"a bigram as trigram": table(langs, with(1, 2, "xy", -1)),
		"a 4-gram as trigram": table(langs, with(1, 2, "wxyz", -1)),
		"invalid UTF-8":       table(langs, with(1, 0, "\xff", -1)),
		"other languages":     table([]string{"xa", "xz"}, good),
		"languages reordered": table([]string{"xb", "xa"}, good),
		"fewer languages":     table(langs[:1], good[:1]),
	} {
		if m, err := loadModel(data, langs); err == nil || m != nil {
			t.Errorf("%s: loaded (%v)", name, err)
		}
	}
	if d := loaded(t); d.Err() != nil || d.m == nil {
		t.Fatalf("the embedded table: %v", d.Err())
	}
}
