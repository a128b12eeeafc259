// Package httpx holds the small HTTP pieces both servers and their clients
// share: JSON answers, size-capped request decoding, bearer-token checks and a
// server that shuts down gracefully.
package httpx

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// MaxBodyBytes caps every request body both servers read.
const MaxBodyBytes = 4 << 20

// ErrBadRequest marks a request that failed validation; it becomes a 400.
var ErrBadRequest = errors.New("bad request")

// WriteJSON writes v with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteError writes an api.Error with the given status.
func WriteError(w http.ResponseWriter, status int, format string, args ...any) {
	WriteJSON(w, status, api.Error{Error: fmt.Sprintf(format, args...)})
}

// DecodeJSON reads one JSON document of at most MaxBodyBytes into v, refusing
// unknown fields and trailing data. Its errors wrap ErrBadRequest and say
// what is wrong in words an operator can act on.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Errorf("%w: body larger than %d bytes", ErrBadRequest, MaxBodyBytes)
	}
	if err != nil {
		return fmt.Errorf("%w: unable to read the body: %v", ErrBadRequest, err)
	}
	// JSON decoding would replace invalid UTF-8 silently.
	if !utf8.Valid(raw) {
		return fmt.Errorf("%w: body is not valid UTF-8 (at byte %d)", ErrBadRequest, invalidUTF8At(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return fmt.Errorf("%w: body is empty, want a JSON object", ErrBadRequest)
		case errors.As(err, &syntax):
			return fmt.Errorf("%w: malformed JSON at byte %d: %v", ErrBadRequest, syntax.Offset, err)
		case errors.As(err, &typ):
			return fmt.Errorf("%w: field %q must be %s", ErrBadRequest, typ.Field, typ.Type)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: truncated JSON body", ErrBadRequest)
		default:
			return fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrBadRequest)
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of b that is not valid
// UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// CheckText refuses text an operator would not see as typed: control
// characters, bidirectional embedding, override and isolate controls (which
// make a name or query display as something other than what it is), other
// invisible characters (zero width spaces and joiners, the soft hyphen,
// variation selectors: "golang\u200b" looks like golang and could never
// match it, as matching ignores them; query.Invisible), and the replacement
// character (what broken encodings decode to). The error names the field,
// the character and its place (1-based, in characters).
func CheckText(field, s string) error {
	pos := 0
	for _, r := range s {
		pos++
		var what string
		switch {
		case r == utf8.RuneError:
			what = "the replacement character U+FFFD (broken encoding)"
		case unicode.IsControl(r):
			what = fmt.Sprintf("control character U+%04X", r)
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			what = fmt.Sprintf("bidirectional control U+%04X", r)
		case query.Invisible(r):
			what = fmt.Sprintf("invisible character U+%04X", r)
		default:
			continue
		}
		return fmt.Errorf("%w: %s contains %s at character %d", ErrBadRequest, field, what, pos)
	}
	return nil
}

// JSONErrors makes every error answer of h a JSON {"error": …} body, as the
// API promises for every non-2xx: the router's own 404 and 405 (and any
// other plain-text error) are rewritten, answers already in JSON pass.
func JSONErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&jsonErrorWriter{ResponseWriter: w}, r)
	})
}

type jsonErrorWriter struct {
	http.ResponseWriter
	swallow bool // a plain error body replaced by JSON
}

func (w *jsonErrorWriter) WriteHeader(code int) {
	ct := w.Header().Get("Content-Type")
	if code >= 400 && !strings.HasPrefix(ct, "application/json") {
		w.swallow = true
		w.Header().Del("Content-Length")
		w.Header().Del("X-Content-Type-Options")
		msg := strings.ToLower(http.StatusText(code))
		if code == http.StatusMethodNotAllowed {
			if allow := w.Header().Get("Allow"); allow != "" {
				msg += ": use " + allow
			}
		}
		WriteError(w.ResponseWriter, code, "%s", msg)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonErrorWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets streamed answers through the wrapper.
func (w *jsonErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (w *jsonErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// HasToken reports whether r carries "Authorization: Bearer token",
// compared in constant time.
func HasToken(r *http.Request, token string) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) == 1
}

// RequireToken wraps h so that only requests carrying "Authorization: Bearer
// <token>" reach it. The comparison takes constant time. An empty token turns
// the check off (for local demos only).
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="blackwidow"`)
			if len(got) == 0 {
				WriteError(w, http.StatusUnauthorized, "missing bearer token")
			} else {
				WriteError(w, http.StatusUnauthorized, "invalid bearer token")
			}
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Recover turns a panic in a handler into a 500 and a log line, so no panic
// reaches a user.
func Recover(logger *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logger.Error("handler panic", "path", r.URL.Path, "panic", v)
				WriteError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// Server timeouts: generous enough for batched polls, short enough that a
// slow client cannot hold a connection for long.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 90 * time.Second
	// ShutdownGrace is how long a server waits for requests in flight.
	ShutdownGrace = 10 * time.Second
)

// Serve runs h on ln until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("httpx: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ErrorFromResponse reads an api.Error body from a non-2xx response into an
// *api.StatusError.
func ErrorFromResponse(resp *http.Response) error { return api.ErrorFromResponse(resp) }

// CallJSON sends in as a JSON body with method to url, with the bearer
// token when one is set, and decodes a 2xx answer of at most maxAnswer bytes
// into out (out may be nil: the answer is then read and dropped). A non-2xx
// answer becomes an *api.StatusError.
func CallJSON(ctx context.Context, c *http.Client, method, url, token string, in, out any, maxAnswer int64) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("httpx: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("httpx: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return ErrorFromResponse(resp)
	}
	answer := io.LimitReader(resp.Body, maxAnswer)
	if out == nil {
		_, _ = io.Copy(io.Discard, answer)
		return nil
	}
	if err := json.NewDecoder(answer).Decode(out); err != nil {
		return fmt.Errorf("httpx: bad answer: %w", err)
	}
	return nil
}
