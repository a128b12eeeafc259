package mastodon

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzDecodeFrame feeds arbitrary bytes through the path a WebSocket
// message takes: decoding the frame and its payload, then turning a status
// into an item. It must never panic; every error must wrap ErrMalformed or
// ErrTruncated, and every item must have an id and bounded fields.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		string(event("update", map[string]any{"id": "1", "uri": "https://a.example/s/1", "url": "https://a.example/@a/1",
			"created_at": "2024-06-01T10:00:00.000Z", "content": "<p>hi <b>there</b></p>", "spoiler_text": "cw",
			"language": "en", "in_reply_to_id": "9", "account": map[string]any{"acct": "a"}})),
		string(event("status.update", map[string]any{"id": "2", "uri": "u", "edited_at": "2024-06-01T10:00:00Z"})),
		string(event("update", map[string]any{"id": "3", "uri": "b", "reblog": map[string]any{"id": "4", "uri": "c"}})),
		`{"stream":["public"],"event":"delete","payload":"106692867363994015"}`,
		`{"error":"Unknown stream type","status":400}`,
		`{"error":"x","status":"401"}`,
		`{"event":"update","payload":"{\"id\":\"1\",\"uri\":\"x`,
		`{"event":"update","payload":{"id":"1","uri":"` + strings.Repeat("u", 600) + `"}}`,
		`{"event":"update","payload":"null"}`,
		`null`, `[]`, `"x"`, ``, `{"event":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeFrame(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error %v wraps neither ErrMalformed nor ErrTruncated", err)
			}
			return
		}
		if len(fr.errMsg) > 90 || len(fr.event) > 90 {
			t.Fatalf("unbounded error %d or event %d bytes", len(fr.errMsg), len(fr.event))
		}
		if fr.kind != frameStatus {
			return
		}
		now := time.Now()
		it, err := statusItem(fr.status, "a.example", &link{uri: "https://a.example/s/0"}, now)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("item error %v does not wrap ErrMalformed", err)
			}
			return
		}
		switch {
		case it.ID == "" || len(it.ID) > 256:
			t.Fatalf("item id %q", it.ID)
		case len(it.Text) > maxTextBytes || !utf8.ValidString(it.Text):
			t.Fatalf("text of %d bytes", len(it.Text))
		case len(it.Author) > maxAuthorBytes, len(it.Lang) > maxLangBytes, len(it.URL) > 2048, len(it.ReplyTo) > 256,
			len(it.AuthorID) > 2048, len(it.Links) > maxLinks:
			t.Fatalf("unbounded field in %+v", it)
		case it.PublishedAt.After(now):
			t.Fatalf("published %v after fetching %v", it.PublishedAt, now)
		case it.URL != "" && !strings.HasPrefix(it.URL, "http://") && !strings.HasPrefix(it.URL, "https://"):
			t.Fatalf("url %q", it.URL)
		}
	})
}
