package stream

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeMessage feeds arbitrary bytes through the path a WebSocket
// message takes: decoding into the protocol's messages and turning data
// into an item. It must never panic; every error must wrap ErrMalformed or
// ErrTruncated, and every item must have an id and bounded text.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"hash":"4f3af38ad1c31646561bc814c3e69af5","data":{"interaction":{"id":"1e1a7d33","type":"twitter","content":"golang","author":{"username":"gopher","name":"G"},"link":"https://example.com/1","created_at":"Sat, 06 Jan 2024 10:00:00 +0000"}}}`,
		`{"hash":"h","deleted":true,"data":{"interaction":{"id":"2"}}}`,
		`{"tick":1311694603,"status":"connected","message":"Waiting for data"}`,
		`{"status":"failure","message":"Stream not found","hash":"h"}`,
		`{"status":"success","message":"Subscribed","hash":"h"}`,
		`{"hash":"h","data":{"interaction":{"id":"3","content":"trunc`,
		`{"hash":"h","data":{}}`,
		`{"tick":1} {"tick":2}`,
		`null`, `[]`, `"x"`, ``, `{"data":null}`,
		`{"hash":"h","data":{"interaction":{"id":"` + strings.Repeat("9", 300) + `"}}}`,
		`{"hash":"h","data":{"interaction":{"id":"4","created_at":"2999-01-01T00:00:00Z","link":"javascript:alert(1)"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := decodeMessage(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error %v wraps neither ErrMalformed nor ErrTruncated", err)
			}
			return
		}
		if msg.kind != kindData {
			return
		}
		if msg.hash == "" || msg.interaction == nil {
			t.Fatal("data message without hash or interaction")
		}
		now := time.Now()
		it, err := interactionItem(msg.interaction, now)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("item error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if !strings.HasPrefix(it.ID, "ds:") || len(it.ID) == len("ds:") || len(it.ID) > len("ds:")+maxIDBytes {
			t.Fatalf("item id %q", it.ID)
		}
		if len(it.Text) > maxTextBytes {
			t.Fatalf("text of %d bytes", len(it.Text))
		}
		if it.PublishedAt.After(now) {
			t.Fatalf("published %v after fetching %v", it.PublishedAt, now)
		}
		if it.URL != "" && !strings.HasPrefix(it.URL, "http://") && !strings.HasPrefix(it.URL, "https://") {
			t.Fatalf("url %q", it.URL)
		}
	})
}
