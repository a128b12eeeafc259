package terms

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/hashtab"
)

// stopwordsISO is the stopwords-iso collection (version 1.1.0, MIT
// licence; see STOPWORDS.md): for each ISO 639-1 language, the words too
// common to be terms. It replaces the short lists this package kept by
// hand, which let "many", "well" and "long" rank as trends.
//
//go:embed stopwords-iso.json
var stopwordsISO []byte

// stopArtefacts are the tokenizer's leftovers that are no words of any
// language: the stems of English contractions (the tokenizer splits "don't"
// at the apostrophe) and the debris of links and retweets.
const stopArtefacts = `amp rt http https www com aren isn don doesn didn won wasn weren hasn haven hadn couldn
shouldn wouldn let ll ve re`

// stopEnglish are the stop-words every comment is filtered by, whatever
// its language, since mixed text is common: English's and the artefacts.
var stopEnglish = func() *stopWords {
	t := words(stopArtefacts)
	for _, w := range stopLists()["en"] {
		addWord(t, w)
	}
	return t
}()

// stopByLang are the stop-words of every other language of stopwords-iso,
// used for comments that say their language (api.Comment.Lang).
var stopByLang = func() map[string]*stopWords {
	out := map[string]*stopWords{}
	for lang, list := range stopLists() {
		if lang == "en" {
			continue
		}
		t := &stopWords{}
		for _, w := range list {
			addWord(t, w)
		}
		out[lang] = t
	}
	return out
}()

// stopLists decodes stopwordsISO; the file is part of the binary, so a
// failure is a build defect.
func stopLists() map[string][]string {
	var lists map[string][]string
	if err := json.Unmarshal(stopwordsISO, &lists); err != nil {
		panic(fmt.Sprintf("terms: stopwords-iso.json: %v", err))
	}
	return lists
}

// addWord adds one stop-word (lowercased, as terms are) to t.
func addWord(t *stopWords, w string) {
	w = strings.ToLower(strings.TrimSpace(w))
	if w == "" {
		return
	}
	h := hashOf([]byte(w))
	if _, dup := t.Get(h, w); !dup {
		t.Put(h, w, struct{}{})
	}
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
