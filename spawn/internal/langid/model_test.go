package langid

import (
	"bytes"
	"compress/gzip"
	"io"
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

// TestLoadModel_Bad: a damaged or foreign table is an error, never a
// panic or a half-built model.
func TestLoadModel_Bad(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(ngramsGz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	for name, data := range map[string][]byte{
		"not gzip":        []byte("bwlangid 1\n"),
		"empty":           gz(nil),
		"other header":    gz(append([]byte("bwlangid 2\n"), raw[len("bwlangid 1\n"):]...)),
		"truncated":       gz(raw[:len(raw)/2]),
		"trailing data":   gz(append(append([]byte{}, raw...), 0)),
		"truncated bytes": ngramsGz[:len(ngramsGz)/2],
	} {
		if m, err := loadModel(data, Languages); err == nil || m != nil {
			t.Errorf("%s: loaded (%v)", name, err)
		}
	}
	other := append([]string{}, Languages...)
	other[0], other[1] = other[1], other[0]
	if _, err := loadModel(ngramsGz, other); err == nil {
		t.Error("loaded for languages in another order")
	}
	if _, err := loadModel(ngramsGz, Languages[:10]); err == nil {
		t.Error("loaded for fewer languages")
	}
	if m, err := loadModel(ngramsGz, Languages); err != nil || m.n != len(Languages) {
		t.Fatalf("the embedded table: %v", err)
	}
}
