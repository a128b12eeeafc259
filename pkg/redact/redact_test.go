package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://example.com/feed/private?api_key=SECRET", "https://example.com/feed/private?REDACTED"},
		{"https://user:pw@example.com/feed", "https://REDACTED@example.com/feed"},
		{"https://example.com/feed#token=SECRET", "https://example.com/feed#REDACTED"},
		{"https://example.com/feed", "https://example.com/feed"},
		{"postgres://bw:secret@127.0.0.1:5432/bw?sslmode=disable", "postgres://REDACTED@127.0.0.1:5432/bw?REDACTED"},
		{"http://[::1/feed?k=SECRET", "http://[::1/feed?REDACTED"},
	}
	for _, tc := range cases {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	in := `rss: unable to fetch "https://example.com/p?api_key=SECRET": 403; mirror rss:http://u:pw@m.example/x,other`
	got := Text(in)
	if strings.Contains(got, "SECRET") || strings.Contains(got, "pw") {
		t.Fatalf("Text left a secret: %q", got)
	}
	if !strings.Contains(got, "https://example.com/p?REDACTED") || !strings.Contains(got, "rss:http://REDACTED@m.example/x,other") {
		t.Fatalf("Text = %q", got)
	}
	if plain := "no urls here: a?b=c"; Text(plain) != plain {
		t.Fatalf("Text changed %q", plain)
	}
}

// TestText_KeepsTheHostOfAURLBeforePunctuation redacts URLs that end a
// clause ("with http://hub:8700: dial tcp …") or that do not parse: the
// credentials, query and fragment go, the scheme, host and path stay, so
// an operator still sees which server failed.
func TestText_KeepsTheHostOfAURLBeforePunctuation(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`node: unable to register with http://127.0.0.1:8700: Post "http://127.0.0.1:8700/v1/nodes/register": dial tcp 127.0.0.1:8700: connect: connection refused`,
			`node: unable to register with http://127.0.0.1:8700: Post "http://127.0.0.1:8700/v1/nodes/register": dial tcp 127.0.0.1:8700: connect: connection refused`},
		{`unable to register with https://spawn:s3cret@hub.example:8700: refused`, `unable to register with https://REDACTED@hub.example:8700: refused`},
		{`fetch https://feeds.example/p?key=SECRET: 403`, `fetch https://feeds.example/p?REDACTED: 403`},
		{`see https://feeds.example/a.`, `see https://feeds.example/a.`},
		{`(mirror https://u:pw@m.example/x?k=SECRET).`, `(mirror https://REDACTED@m.example/x?REDACTED).`},
		{`bad http://u:pw@[::1/feed?k=SECRET here`, `bad http://REDACTED@[::1/feed?REDACTED here`},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q)\n got  %q\n want %q", tc.in, got, tc.want)
		}
	}
}

func TestHandler_RedactsEveryPlace(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil))).With("feed", "https://a.example/f?key=SECRET1")
	logger.WithGroup("g").Info("fetch of https://a.example/f?key=SECRET2 failed",
		"err", fmt.Errorf("rss: %w", errors.New("get https://a.example/f?key=SECRET3: refused")),
		slog.Group("inner", "url", "https://u:SECRET4@a.example/"),
		"count", 3)
	out := buf.String()
	for _, secret := range []string{"SECRET1", "SECRET2", "SECRET3", "SECRET4"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line carries %s: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"count":3`) || !strings.Contains(out, "a.example/f?REDACTED") {
		t.Errorf("log line lost its content: %s", out)
	}
}
