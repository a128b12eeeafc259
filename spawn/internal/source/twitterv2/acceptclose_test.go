package twitterv2

import (
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	fakex "github.com/blackwidow-crawl/blackwidow/internal/fakes/xv2"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// A stream X answers with 200 and ends before sending a byte (not even a
// keep-alive) is a network error like any other: the waits grow linearly
// as X's guide asks, instead of starting again from the first step.
func TestSource_StreamEndedBeforeAnyByteBacksOff(t *testing.T) {
	srv := fakex.New(fakex.Options{BearerToken: token})
	h := srv.Handler()
	var streams atomic.Int64
	url := fakehttp.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != fakex.StreamPath {
			h.ServeHTTP(w, r) // the rules work
			return
		}
		streams.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
	}), srv.Close)
	s, _, d := run(t, testOptions(t, url), spec(1, "golang"))
	testkit.WaitFor(t, wait, "four back-offs", func() bool { return len(d.all()) >= 4 })
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}
	if got := d.all()[:4]; !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
	if streams.Load() < 4 || !s.errs.Saw(ErrDisconnected) {
		t.Errorf("%d streams, Err %v", streams.Load(), s.Err())
	}
}
