package reddit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeListing feeds listing answers, built on the recorded things
// first, through the decoding a poll and a re-check do: anything Reddit
// could send is skipped as malformed or becomes an item within its
// bounds, never a panic.
func FuzzDecodeListing(f *testing.F) {
	for _, name := range []string{"things.jsonl", "info.jsonl"} {
		for _, line := range readLines(f, name) {
			var p struct {
				Thing json.RawMessage `json:"thing"`
			}
			if json.Unmarshal(line, &p) == nil {
				f.Add([]byte(`{"kind":"Listing","data":{"after":null,"children":[` + string(p.Thing) + `]}}`))
			}
		}
	}
	f.Add([]byte(`{"kind":"Listing","data":{"children":[{"kind":"t1","data":{"id":"zz","name":"t1_zz","created_utc":-1,"edited":"x"}}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var doc listingDoc
		if json.Unmarshal(body, &doc) != nil {
			return
		}
		for _, th := range doc.Data.Children {
			for _, kind := range []string{kindComment, kindPost} {
				id, err := th.check(kind)
				if err != nil {
					continue
				}
				d := th.Data
				_ = d.gone()
				_ = d.editedAt()
				it := toItem(kind, &d, id, time.Now())
				if !strings.HasPrefix(it.ID, IDPrefix+kind+"_") || len(it.Text) > maxTextBytes || len(it.Links) > maxLinks {
					t.Fatalf("item %+v from %q", it, body)
				}
			}
		}
		_, _ = newestNames(strings.Fields(string(body)), 3)
	})
}
