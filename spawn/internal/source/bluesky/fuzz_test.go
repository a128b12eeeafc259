package bluesky

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// FuzzDecodeEvent feeds arbitrary bytes through the path a WebSocket
// message takes: decoding into an event and turning a post into an item.
// It must never panic; every error must wrap ErrMalformed or ErrTruncated,
// and every item must have an at:// id and bounded fields.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		postFrame,
		`{"did":"did:plc:a","time_us":1,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.post","rkey":"k","record":{"text":"hi","createdAt":"2999-01-01T00:00:00Z","langs":["EN-us"]}}}`,
		`{"did":"did:web:example.com","time_us":1,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.post","rkey":"k","record":{"reply":{"parent":{"uri":"javascript:alert(1)"},"root":{"uri":"at://x"}}}}}`,
		`{"did":"did:plc:a","time_us":1,"kind":"identity","identity":{"handle":"alice.test"}}`,
		`{"did":"did:plc:a","time_us":1,"kind":"account","account":{"active":true}}`,
		`{"did":"did:plc:a","time_us":1,"kind":"commit","commit":{"operation":"delete","collection":"app.bsky.feed.post","rkey":"k"}}`,
		postFrame[:100],
		`null`, `[]`, `""`, ``, `{}`,
		`{"did":"did:plc:a","time_us":1,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.post","rkey":"` + strings.Repeat("k", 600) + `","record":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := decodeEvent(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error %v wraps neither ErrMalformed nor ErrTruncated", err)
			}
			return
		}
		if ev.timeUS <= 0 || !validDID(ev.did) {
			t.Fatalf("event with time_us %d and DID %q", ev.timeUS, ev.did)
		}
		if ev.kind == kindIdentity && ev.handle != "" && normalHandle(ev.handle) != ev.handle {
			t.Fatalf("handle %q", ev.handle)
		}
		if ev.kind != kindPost {
			return
		}
		now := time.Now()
		it := postItem(ev, ev.handle, now)
		if !strings.HasPrefix(it.ID, "at://"+ev.did+"/"+PostCollection+"/") || len(it.ID) > source.MaxIDBytes || source.ItemID(it.ID) != it.ID {
			t.Fatalf("item id %q", it.ID)
		}
		if len(it.Text) > maxTextBytes || !utf8.ValidString(it.Text) {
			t.Fatalf("text of %d bytes", len(it.Text))
		}
		if it.PublishedAt.After(now) || it.PublishedAt.Before(source.EarliestPublished) {
			t.Fatalf("published %v, fetched %v", it.PublishedAt, now)
		}
		if it.URL != "" && source.WebURL(it.URL) != it.URL {
			t.Fatalf("url %q", it.URL)
		}
		for _, uri := range []string{it.ReplyTo, it.ThreadID} {
			if uri != "" && (!strings.HasPrefix(uri, "at://") || len(uri) > source.MaxIDBytes) {
				t.Fatalf("reply uri %q", uri)
			}
		}
		if len(it.Lang) > maxLangBytes || it.Lang != strings.ToLower(it.Lang) || it.Position != ev.timeUS {
			t.Fatalf("lang %q position %d", it.Lang, it.Position)
		}
	})
}
