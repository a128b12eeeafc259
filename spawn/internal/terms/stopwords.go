package terms

import (
	"maps"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/hashtab"
)

// stopEnglish are English words too common to be terms; every comment is
// filtered by them, whatever its language, since mixed text is common.
var stopEnglish = words(`a about above after again against all am an and any are aren't as at be
because been before being below between both but by can can't cannot could couldn't did didn't do
does doesn't doing don't down during each few for from further get gets got had hadn't has hasn't
have haven't having he her here hers herself him himself his how i if in into is isn't it it's its
itself just let's like me more most much must my myself no nor not now of off on once one only or
other our ours ourselves out over own same she should so some such than that that's the their
theirs them themselves then there there's these they this those through to too under until up us
very via was wasn't we were weren't what when where which while who whom why will with won't would
you your yours yourself yourselves also new amp rt http https www com aren isn don doesn didn won
wasn weren hasn haven hadn couldn shouldn wouldn let ll ve re`)

// stopByLang are the stop-words of a few other languages, used for
// comments that say their language (api.Comment.Lang).
var stopByLang = map[string]*stopWords{
	"es": words(`de la que el en y a los del se las por un para con no una su al lo como más pero sus le ya o
este sí porque esta entre cuando muy sin sobre también me hasta hay donde quien desde todo nos
durante todos uno les ni contra otros ese eso ante ellos e esto mí antes algunos qué unos yo otro
otras otra él tanto esa estos mucho quienes nada muchos cual poco ella estar estas algunas algo
nosotros es son fue ha`),
	"fr": words(`au aux avec ce ces dans de des du elle en et eux il je la le les leur lui ma mais me même mes
moi mon ne nos notre nous on ou par pas pour qu que qui sa se ses son sur ta te tes toi ton tu un
une vos votre vous est sont été être avoir a ai c d j l m n s t y plus comme tout bien`),
	"de": words(`aber alle als also am an auch auf aus bei bin bis bist da damit dann der den des dem die das
dass du er es ein eine einem einen einer eines für hat hatte ich ihr im in ist ja kein mit nach
nicht noch nur oder sich sie sind so über um und uns von vor war was wie wir zu zum zur`),
	"pt": words(`de a o que e do da em um para é com não uma os no se na por mais as dos como mas foi ao ele
das tem à seu sua ou ser quando muito há nos já está eu também só pelo pela até isso ela entre era
depois sem mesmo aos ter seus quem nas me esse eles estão você tinha foram essa num nem suas meu
às minha têm numa pelos elas havia seja qual será nós tenho lhe deles essas esses pelas este`),
	"it": words(`il lo la i gli le di a da in con su per tra fra un una uno e ed o ma che chi cui non più
come anche del della dei delle al alla ai alle nel nella sono è sei siamo ho hai ha abbiamo questo
questa quello quella mi ti ci si vi`),
}

// stopWords is a set of stop-words, each looked up by its hash (hashOf).
type stopWords = hashtab.Table[struct{}]

func words(list string) *stopWords {
	t := &stopWords{}
	start := -1
	for i := 0; i <= len(list); i++ {
		if i == len(list) || list[i] == ' ' || list[i] == '\n' || list[i] == '\t' {
			if start >= 0 {
				w := list[start:i]
				h := hashOf([]byte(w))
				if _, dup := t.Get(h, w); !dup {
					t.Put(h, w, struct{}{})
				}
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return t
}

// longestStop is the length in bytes of the longest stop-word of any
// language: a longer word is no stop-word, without a lookup.
var longestStop = func() int {
	n := 0
	for _, t := range append([]*stopWords{stopEnglish}, slices.Collect(maps.Values(stopByLang))...) {
		for w := range t.All() {
			n = max(n, len(w))
		}
	}
	return n
}()

// stopsOf is the stop-words of lang besides English's: lang's own, or
// those of its base language ("pt" for "pt-br"); nil for none.
func stopsOf(lang string) *stopWords {
	if lang == "" {
		return nil
	}
	if t, ok := stopByLang[lang]; ok {
		return t
	}
	if i := strings.IndexByte(lang, '-'); i > 0 {
		return stopByLang[lang[:i]]
	}
	return nil
}

// isStop reports whether word, whose hash is h, is a stop-word of English
// or of the language whose stop-words are stops.
func isStop(word []byte, h uint64, stops *stopWords) bool {
	if len(word) > longestStop {
		return false
	}
	if _, ok := stopEnglish.GetBytes(h, word); ok {
		return true
	}
	if stops == nil {
		return false
	}
	_, ok := stops.GetBytes(h, word)
	return ok
}
