// Package redact removes secrets from URLs before they reach a log line or
// an open document. Crawl targets are untrusted and often carry keys in
// their query string (a private feed's ?api_key=…) or credentials in their
// userinfo; an operator needs to see which feed failed, never its key.
package redact

import (
	"context"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
)

// Mark replaces what was removed.
const Mark = "REDACTED"

// urlPattern finds URLs inside free text (error messages, data source keys
// such as "rss:https://…").
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s,"'<>]+`)

// URL returns raw without userinfo and with its query string and fragment
// replaced by Mark. Scheme, host and path stay: they say which target it
// is. A string that does not parse as a URL is redacted by its shape: what
// stands before an '@' of its authority, and all after a '?' or a '#'.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsed(raw)
	}
	if u.User != nil {
		u.User = url.User(Mark)
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery = Mark
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = Mark, ""
	}
	return u.String()
}

// unparsed redacts a URL that does not parse, keeping its scheme, host and
// path.
func unparsed(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Mark
	}
	var tail string
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		if rest[i] == '?' {
			tail = "?" + Mark
		}
		if strings.Contains(rest[i:], "#") {
			tail += "#" + Mark
		}
		rest = rest[:i]
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = Mark + "@" + authority[i+1:]
	}
	return scheme + "://" + authority + path + tail
}

// Text redacts every URL in s. Punctuation that ends a clause after a URL
// ("register with http://hub:8700: refused", "(see https://a.example/x).")
// is not part of it.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlPattern.ReplaceAllStringFunc(s, func(m string) string {
		u, trail := splitTrail(m)
		return URL(u) + trail
	})
}

// splitTrail splits the punctuation that ends a clause off a URL found in
// text: '.', ',', ':', ';', '!' and '?', and a closing bracket the URL
// does not open.
func splitTrail(m string) (string, string) {
	end := len(m)
	for end > 0 {
		c := m[end-1]
		switch {
		case strings.IndexByte(".,:;!?", c) >= 0:
		case c == ')' && strings.Count(m[:end], "(") < strings.Count(m[:end], ")"):
		case c == ']' && strings.Count(m[:end], "[") < strings.Count(m[:end], "]"):
		default:
			return m[:end], m[end:]
		}
		end--
	}
	return m[:end], m[end:]
}

// Handler wraps a slog.Handler so that the message and every string or
// error attribute of each record are redacted: one place covers every log
// line of a binary, whatever the call site wrote.
type Handler struct{ next slog.Handler }

// NewHandler returns a redacting handler in front of next.
func NewHandler(next slog.Handler) *Handler { return &Handler{next: next} }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = attr(a)
	}
	return &Handler{next: h.next.WithAttrs(clean)}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler { return &Handler{next: h.next.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); strings.Contains(s, "://") {
			return slog.String(a.Key, Text(s))
		}
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if e, ok := v.Any().(error); ok && e != nil {
			if s := e.Error(); strings.Contains(s, "://") {
				return slog.String(a.Key, Text(s))
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
