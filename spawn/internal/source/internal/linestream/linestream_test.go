package linestream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// item is what one call of Next gave: a line, or the error it matched.
type item struct {
	line string
	err  error
}

// readAll calls Next until an error other than ErrTooLong, or until stop
// matches the error.
func readAll(r *Reader, stopAtTooLong bool) []item {
	var out []item
	for {
		line, err := r.Next()
		switch {
		case err == nil:
			out = append(out, item{line: string(line)})
			continue
		case errors.Is(err, ErrTooLong):
			out = append(out, item{err: ErrTooLong})
			if !stopAtTooLong {
				continue
			}
		case errors.Is(err, ErrTruncated):
			out = append(out, item{err: ErrTruncated})
		default:
			out = append(out, item{err: err})
		}
		return out
	}
}

func TestReader_SplitsLinesAndSkipsOversizedOnes(t *testing.T) {
	long := strings.Repeat("x", 100)
	cases := []struct {
		name string
		body string
		max  int
		stop bool // the caller ends at the first line over the cap
		want []item
	}{
		{"lines and keep-alives", "a\r\n\r\nb\nc\r\n", 8, false,
			[]item{{line: "a"}, {line: ""}, {line: "b"}, {line: "c"}, {err: io.EOF}}},
		{"a line at the cap", "12345678\r\n", 8, false, []item{{line: "12345678"}, {err: io.EOF}}},
		{"oversized lines skipped", "first\r\n" + long + "\r\n\r\nsecond\r\n" + strings.Repeat("y", 40) + "\nthird\r\n", 32, false,
			[]item{{line: "first"}, {err: ErrTooLong}, {line: ""}, {line: "second"}, {err: ErrTooLong}, {line: "third"}, {err: io.EOF}}},
		{"one byte over the cap", "123456789\r\nok\r\n", 8, false, []item{{err: ErrTooLong}, {line: "ok"}, {err: io.EOF}}},
		{"oversized ends the stream for a caller that stops", `{"a":1}` + "\r\n" + long + "\r\n{}\r\n", 64, true,
			[]item{{line: `{"a":1}`}, {err: ErrTooLong}}},
		{"body ends inside a line", "a\r\nhalf", 8, false, []item{{line: "a"}, {err: ErrTruncated}}},
		{"body ends inside an oversized line", "a\r\n" + long, 8, false, []item{{line: "a"}, {err: ErrTooLong}, {err: ErrTruncated}}},
		{"body ends after whitespace", "a\r\n\r", 8, false, []item{{line: "a"}, {err: io.EOF}}},
		{"empty body", "", 8, false, []item{{err: io.EOF}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := readAll(NewReader(strings.NewReader(tc.body), tc.max, Errors{}), tc.stop)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReader_WrapsTheSourcesSentinels(t *testing.T) {
	tooLong := source.NewError("demo: stream message too large", ErrTooLong)
	truncated := source.NewError("demo: stream ended inside a message", ErrTruncated)
	r := NewReader(strings.NewReader(strings.Repeat("x", 20)+"\nhalf"), 8, Errors{TooLong: tooLong, Truncated: truncated})
	if _, err := r.Next(); !errors.Is(err, tooLong) || !errors.Is(err, ErrTooLong) {
		t.Fatalf("oversized line: %v", err)
	}
	if _, err := r.Next(); !errors.Is(err, truncated) || !errors.Is(err, ErrTruncated) || !errors.Is(err, io.EOF) {
		t.Fatalf("unfinished line: %v", err)
	}
}

func TestWatchdog_CutsASilentStreamButNotABusySource(t *testing.T) {
	// Wide margins: the writes come ten times as often as the timeout,
	// and go on for half as long again as it.
	const timeout = 300 * time.Millisecond
	const writes = 15
	ctx, cancel := context.WithCancelCause(t.Context())
	w := Watch(timeout, cancel)
	defer w.Stop()
	pr, pw := io.Pipe()
	r := w.Reader(pr)
	go func() {
		for range writes {
			time.Sleep(timeout / 10)
			_, _ = pw.Write([]byte("\r\n"))
		}
	}()
	buf := make([]byte, 8)
	for range writes {
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the watchdog fired while bytes were arriving")
	}
	w.Pause()
	time.Sleep(2 * timeout)
	if ctx.Err() != nil {
		t.Fatal("the watchdog fired while paused")
	}
	w.Resume()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watchdog did not fire on silence")
	}
	if !errors.Is(context.Cause(ctx), ErrSilent) {
		t.Fatalf("cause %v, want ErrSilent", context.Cause(ctx))
	}
}

func TestOpen_CancelsWhenNoHeadersCome(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := Open(srv.Client(), req, 30*time.Millisecond, cancel); err == nil || !errors.Is(context.Cause(ctx), ErrNoAnswer) {
		t.Fatalf("Open = %v with cause %v, want ErrNoAnswer", err, context.Cause(ctx))
	}
}

func TestBackoff_FollowsEachClass(t *testing.T) {
	b := NewBackoff(Policies{
		NetworkStep: 250 * time.Millisecond, NetworkMax: time.Second,
		HTTPMin: 5 * time.Second, HTTPMax: 20 * time.Second,
		RateLimitMin: time.Minute, RateLimitMax: 2 * time.Minute,
	})
	steps := []struct {
		class Class
		want  time.Duration
	}{
		{ClassNetwork, 250 * time.Millisecond},
		{ClassNetwork, 500 * time.Millisecond},
		{ClassHTTP, 5 * time.Second},
		{ClassNetwork, 750 * time.Millisecond},
		{ClassHTTP, 10 * time.Second},
		{ClassRateLimit, time.Minute},
		{ClassRateLimit, 2 * time.Minute},
		{ClassRateLimit, 2 * time.Minute},
		{ClassNone, 0},
	}
	for i, s := range steps {
		if got := b.Next(s.class); got != s.want {
			t.Fatalf("step %d: wait %v, want %v", i, got, s.want)
		}
	}
	b.Reset()
	if got := b.Next(ClassHTTP); got != 5*time.Second {
		t.Fatalf("after reset: wait %v", got)
	}
}
