package twitterv2

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/xtext"
)

// FuzzDecodeLine feeds arbitrary bytes through the path a stream body
// takes: lines split with a size cap, each decoded into a post. It must
// never panic, never hand out a line over the cap, and every post must
// have a numeric tw: id, bounded text, links and ids of its own kind, and
// no publication time after it was read.
func FuzzDecodeLine(f *testing.F) {
	seeds := []string{
		`{"data":{"id":"1800","text":"go &amp; rust","author_id":"42","created_at":"2025-03-01T11:00:00.000Z","lang":"en","conversation_id":"1700","referenced_tweets":[{"type":"replied_to","id":"1750"}]},"includes":{"users":[{"id":"42","username":"gopher"}]},"matching_rules":[{"id":"5","tag":"bw:a"}]}` + "\r\n",
		`{"data":{"id":"7","text":"x","note_tweet":{"text":"long"},"lang":"und"}}` + "\r\n\r\n",
		`{"errors":[{"title":"operational-disconnect","detail":"gone"}]}` + "\r\n",
		`{"title":"ConnectionException","connection_issue":"TooManyConnections"}` + "\r\n",
		`{"data":{"id":"-1","text":"x"}}` + "\r\n" + `{"data":{"id":"1e5"}}` + "\n",
		`{"data":{"id":"9","text":"x"},"includes":{"users":[{"id":"","username":"javascript:alert(1)"}]}}` + "\r\n",
		`{"data":{"id":"8","text":"half a po`,
		"\r\n\r\n\n",
		`{"data":{"id":"3","text":"RT @a: cut…","referenced_tweets":[{"type":"retweeted","id":"2"}]},"includes":{"tweets":[{"id":"2","text":"whole &amp;lt; https://t.co/a","entities":{"urls":[{"url":"https://t.co/a","expanded_url":"https://example.com/"}]},"referenced_tweets":[{"type":"quoted","id":"2"}]}]}}` + "\r\n",
		`{"data":{"id":"4","text":"q https://t.co/","entities":{"urls":[{"url":"","expanded_url":"javascript:x"},{"url":"https://t.co/","expanded_url":"https://t.co/x"}]},"referenced_tweets":[{"type":"quoted","id":"4"}]},"includes":{"tweets":[{"id":"4","text":"self"}]}}` + "\r\n",
		`{"data":{"id":"10","text":"` + strings.Repeat("é", 3000) + `"}}` + "\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	const maxBytes = 4096
	f.Fuzz(func(t *testing.T, body []byte) {
		lr := newLineReader(bytes.NewReader(body), maxBytes)
		now := time.Now()
		for {
			line, err := lr.Next()
			if errors.Is(err, ErrOversized) {
				continue
			}
			if err != nil {
				if !errors.Is(err, errTruncated) && !errors.Is(err, io.EOF) {
					t.Fatalf("unexpected reader error %v", err)
				}
				return
			}
			if len(line) > maxBytes {
				t.Fatalf("line of %d bytes passed a cap of %d", len(line), maxBytes)
			}
			if len(line) == 0 {
				continue
			}
			m, err := decodeLine(line, now)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("decode error %v does not wrap ErrMalformed", err)
				}
				continue
			}
			if !m.post {
				continue
			}
			it := m.item
			id, ok := strings.CutPrefix(it.ID, xtext.IDPrefix)
			if !ok || !numericID(id) {
				t.Fatalf("item id %q", it.ID)
			}
			for _, ref := range []string{it.ReplyTo, it.ThreadID, it.RepostOf} {
				if r, ok := strings.CutPrefix(ref, xtext.IDPrefix); ref != "" && (!ok || !numericID(r)) {
					t.Fatalf("reference %q", ref)
				}
			}
			if len(it.Links) > xtext.MaxLinks || slices.ContainsFunc(it.Links, func(l string) bool { return source.WebURL(l) != l }) {
				t.Fatalf("links %q", it.Links)
			}
			if len(it.Text) > maxTextBytes {
				t.Fatalf("text of %d bytes", len(it.Text))
			}
			if !strings.HasPrefix(it.URL, "https://twitter.com/") || !strings.HasSuffix(it.URL, "/status/"+id) {
				t.Fatalf("url %q", it.URL)
			}
			if it.PublishedAt.After(now) {
				t.Fatalf("published %v after reading %v", it.PublishedAt, now)
			}
		}
	})
}
