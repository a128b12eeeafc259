package feedserver

import (
	"bytes"
	"net/http"
	"os"
	"testing"
)

// recordedFeed is a real ISO-8859-1 feed without an XML declaration, from
// the rss source's corpus (see its SOURCES.md).
const recordedFeed = "../../../spawn/internal/source/rss/testdata/corpus/miniflux-no_encoding_ISO-8859-1.xml"

// TestServer_ServesRecordedFeedsAsRecorded serves a real legacy-charset
// feed under each kind of Content-Type a publisher sends: the body comes
// back byte for byte, the header exactly as given (or absent, never
// sniffed), and a request sending the ETag back gets 304.
func TestServer_ServesRecordedFeedsAsRecorded(t *testing.T) {
	body, err := os.ReadFile(recordedFeed)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(body, 0xe9) < 0 {
		t.Fatal("the recorded feed should hold ISO-8859-1 bytes (é is 0xe9)")
	}
	s, base := Start(t, Options{})
	tests := []struct{ name, contentType string }{
		{"charset in the header only", "text/xml; charset=ISO-8859-1"},
		{"no charset", "application/rss+xml"},
		{"no content type at all", ""},
		{"header contradicting the bytes", "application/rss+xml; charset=utf-8"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "psy-" + string(rune('a'+i)) + ".xml"
			path := s.Record(name, Recorded{Body: body, ContentType: tt.contentType})
			resp, got := get(t, base+path, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got != string(body) {
				t.Fatalf("body differs from the recording (%d bytes, want %d)", len(got), len(body))
			}
			ct, sent := resp.Header["Content-Type"]
			switch {
			case tt.contentType == "" && sent:
				t.Fatalf("Content-Type %q sent, want none", ct)
			case tt.contentType != "" && (len(ct) != 1 || ct[0] != tt.contentType):
				t.Fatalf("Content-Type %q, want %q", ct, tt.contentType)
			}
			etag := resp.Header.Get("ETag")
			if resp, _ := get(t, base+path, map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
				t.Fatalf("conditional request answered %d, want 304", resp.StatusCode)
			}
			if n := s.RecordedRequests(name); n != 2 {
				t.Fatalf("%d requests counted, want 2", n)
			}
		})
	}
	if resp, _ := get(t, base+RecordedPrefix+"missing.xml", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown recording answered %d, want 404", resp.StatusCode)
	}
}

// TestServer_RecordedIgnoresConditionalWhenTold answers in full, as a
// publisher without conditional GET does.
func TestServer_RecordedIgnoresConditionalWhenTold(t *testing.T) {
	s, base := Start(t, Options{IgnoreConditional: true})
	path := s.Record("a.json", Recorded{Body: []byte(`{"version":"https://jsonfeed.org/version/1.1","items":[]}`), ContentType: "application/feed+json"})
	resp, _ := get(t, base+path, nil)
	if resp, _ := get(t, base+path, map[string]string{"If-None-Match": resp.Header.Get("ETag")}); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
}

func TestServer_RecordRefusesUnsafeNames(t *testing.T) {
	s := New(Options{})
	for _, name := range []string{"", "../etc", "a/b", "a b"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Record(%q) did not panic", name)
				}
			}()
			s.Record(name, Recorded{})
		}()
	}
}
