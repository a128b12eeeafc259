package twitterv1

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
// takes: framing with a size cap, decoding each message into go-twitter's
// types, and turning tweets into items. It must never panic, never return a
// message over the cap, and every item must have a numeric id, bounded text
// and only tracked terms.
func FuzzDecodeLine(f *testing.F) {
	seeds := []string{
		`{"created_at":"Wed Oct 10 20:19:24 +0000 2018","id":1050118621198921728,"id_str":"1050118621198921728","text":"golang &amp; rust","user":{"screen_name":"gopher"},"retweet_count":0}` + "\r\n",
		`{"id_str":"5","text":"short","truncated":true,"extended_tweet":{"full_text":"short and then the long golang part"},"user":{"screen_name":"a"}}` + "\r\n\r\n",
		`{"id_str":"6","text":"RT @b: x","retweeted_status":{"id_str":"4","full_text":"x golang","user":{"screen_name":"b"}},"user":{"screen_name":"c"}}` + "\r\n",
		`{"limit":{"track":42}}` + "\r\n" + `{"disconnect":{"code":7,"stream_name":"s","reason":"admin logout"}}` + "\r\n",
		`{"warning":{"code":"FALLING_BEHIND","message":"m","percent_full":60}}` + "\r\n" + `{"delete":{"status":{"id":1,"id_str":"1"}}}` + "\r\n",
		`{"id_str":"x1","text":"not a number"}` + "\r\n",
		`{"id":-3,"text":"negative"}` + "\n",
		`{"limit":null}` + "\r\n" + `null` + "\r\n" + `[1,2]` + "\r\n",
		`{"id_str":"7","text":"half a tw`,
		"\r\n\r\n\n",
		`{"id_str":"9","text":"q https://t.co/a","entities":{"urls":[{"url":"https://t.co/a","expanded_url":"javascript:x"},{"url":"","expanded_url":"https://t.co/"}]},"quoted_status":{"id_str":"9","text":"self &amp;lt;","quoted_status":{"id_str":"1"}},"user":{"id_str":"-1"}}` + "\r\n",
		`{"id_str":"8","text":"` + strings.Repeat("é", 3000) + `"}` + "\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	const maxBytes = 4096
	m := newMatcher([]string{"golang", "new release", "rust"})
	f.Fuzz(func(t *testing.T, body []byte) {
		fr := newFramer(bytes.NewReader(body), maxBytes)
		now := time.Now()
		for {
			line, err := fr.Next()
			if err != nil {
				if !errors.Is(err, ErrMessageTooLarge) && !errors.Is(err, ErrTruncated) && !errors.Is(err, io.EOF) {
					t.Fatalf("unexpected framing error %v", err)
				}
				return
			}
			if len(line) > maxBytes {
				t.Fatalf("message of %d bytes passed a cap of %d", len(line), maxBytes)
			}
			if len(line) == 0 {
				continue
			}
			msg, err := decodeLine(line)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("decode error %v does not wrap ErrMalformed", err)
				}
				continue
			}
			if msg.kind != kindTweet {
				continue
			}
			it, err := tweetItem(msg.tweet, msg.engagement, m, now)
			if err != nil {
				continue
			}
			id, ok := strings.CutPrefix(it.ID, "tw:")
			if !ok || id == "" || strings.Trim(id, "0123456789") != "" {
				t.Fatalf("item id %q", it.ID)
			}
			for _, ref := range []string{it.ReplyTo, it.RepostOf} {
				if r, ok := strings.CutPrefix(ref, "tw:"); ref != "" && (!ok || !numeric(r)) {
					t.Fatalf("reference %q", ref)
				}
			}
			if it.AuthorID != "" && !numeric(it.AuthorID) {
				t.Fatalf("author id %q", it.AuthorID)
			}
			if len(it.Links) > xtext.MaxLinks || slices.ContainsFunc(it.Links, func(l string) bool { return source.WebURL(l) != l }) {
				t.Fatalf("links %q", it.Links)
			}
			if len(it.Text) > maxTextBytes {
				t.Fatalf("text of %d bytes", len(it.Text))
			}
			if it.PublishedAt.After(now) {
				t.Fatalf("published %v after fetching %v", it.PublishedAt, now)
			}
			for _, term := range it.Terms {
				if !slices.Contains(m.terms, term) {
					t.Fatalf("term %q is not tracked", term)
				}
			}
		}
	})
}
