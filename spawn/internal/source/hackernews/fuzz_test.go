package hackernews

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzDecodeItem feeds item answers, the recorded ones first, through the
// decoder and the mapping to an item: anything the API could send is
// refused with an error or becomes an item within its bounds, never a
// panic.
func FuzzDecodeItem(f *testing.F) {
	for _, line := range readLines(f, "items.jsonl") {
		var p struct {
			Item json.RawMessage `json:"item"`
		}
		if json.Unmarshal(line, &p) == nil {
			f.Add([]byte(p.Item))
		}
	}
	f.Add([]byte("null"))
	f.Add([]byte(`{"id":1,"type":"comment","parent":0,"text":"<a href=\"javascript:x\">a</a>&#x0;"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		w, err := decodeItem(body)
		if err != nil || w == nil {
			return
		}
		it := toItem(w, w.Parent, time.Now())
		if !strings.HasPrefix(it.ID, IDPrefix) || len(it.Text) > maxTextBytes || len(it.Author) > maxAuthorBytes ||
			len(it.Links) > maxLinks || !utf8.ValidString(it.Author) {
			t.Fatalf("item %+v from %q", it, body)
		}
	})
}

// FuzzDecodeSearch does the same for a search page.
func FuzzDecodeSearch(f *testing.F) {
	for _, line := range readLines(f, "hits.jsonl") {
		var p struct {
			Hit json.RawMessage `json:"hit"`
		}
		if json.Unmarshal(line, &p) == nil {
			f.Add([]byte(`{"hits":[` + string(p.Hit) + `],"nbHits":1,"nbPages":1}`))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		page, err := decodeSearch(body)
		if err != nil {
			return
		}
		for _, h := range page.Hits {
			if it, ok := h.item(time.Now()); ok && !strings.HasPrefix(it.ID, IDPrefix) {
				t.Fatalf("item %+v from %q", it, body)
			}
		}
	})
}

// readLines reads a testdata file's lines.
func readLines(tb testing.TB, name string) [][]byte {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, slices.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}
