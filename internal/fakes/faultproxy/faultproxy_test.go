package faultproxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// waitTimeout bounds every condition a test waits for.
const waitTimeout = 5 * time.Second

// target returns the URL of a server that counts the requests that reach
// it.
func target(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	base := fakehttp.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Header.Get("X-Test"))
		_, _ = w.Write(append([]byte("echo:"), b...))
	}), nil)
	return base, &n
}

func post(p *Proxy, body string) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, p.URL()+"/v1/poll", strings.NewReader(body))
	req.Header.Set("X-Test", "h")
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), &statusErr{resp.StatusCode}
	}
	return resp.Header.Get("X-Echo") + " " + string(b), nil
}

type statusErr struct{ code int }

func (e *statusErr) Error() string { return http.StatusText(e.code) }

func waitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	testkit.WaitFor(t, waitTimeout, fmt.Sprintf("the target to see %d requests", want), func() bool { return n.Load() == want })
}

func TestProxy_ForwardsUntouchedByDefault(t *testing.T) {
	srv, n := target(t)
	p := Start(t, srv, 1)
	got, err := post(p, "hello")
	if err != nil || got != "h echo:hello" {
		t.Fatalf("got %q, %v", got, err)
	}
	waitCount(t, n, 1)
	if p.Seen(http.MethodPost, "/v1/poll") != 1 {
		t.Fatalf("seen = %d", p.Seen(http.MethodPost, "/v1/poll"))
	}
}

func TestProxy_Faults(t *testing.T) {
	cases := []struct {
		name       string
		faults     Faults
		wantErr    bool
		wantTarget int64
	}{
		{"drop answers after the target acted", Faults{Drop: 1}, true, 1},
		{"refuse before the target", Faults{Refuse: 1}, true, 0},
		{"duplicate reaches the target twice", Faults{Duplicate: 1}, false, 2},
		{"replay arrives again later", Faults{Replay: 1, ReplayAfter: 50 * time.Millisecond}, false, 2},
		{"delay still delivers", Faults{Delay: 30 * time.Millisecond}, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := target(t)
			p := Start(t, srv, 1)
			p.SetFaults(tc.faults)
			_, err := post(p, "x")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			waitCount(t, n, tc.wantTarget)
		})
	}
}

func TestProxy_CutAndHeal(t *testing.T) {
	srv, n := target(t)
	p := Start(t, srv, 1)
	p.Cut()
	if _, err := post(p, "x"); err == nil {
		t.Fatal("a cut link answered")
	}
	p.Heal()
	if _, err := post(p, "x"); err != nil {
		t.Fatalf("healed link failed: %v", err)
	}
	waitCount(t, n, 1)
	if s := p.Stats(); s.Cut != 1 || s.Forwarded != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestProxy_FailNextFailsOnlyThoseRequests(t *testing.T) {
	srv, n := target(t)
	p := Start(t, srv, 1)
	p.FailNext(http.MethodPost, "/v1/poll", 2)
	for i := range 3 {
		_, err := post(p, "x")
		if (err != nil) != (i < 2) {
			t.Fatalf("request %d: err = %v", i, err)
		}
	}
	waitCount(t, n, 1)
}

func TestProxy_SameSeedSameFaults(t *testing.T) {
	run := func() Stats {
		srv, _ := target(t)
		p := Start(t, srv, 1)
		p.SetFaults(Faults{Drop: 0.3, Duplicate: 0.3})
		for range 40 {
			_, _ = post(p, "x")
		}
		return p.Stats()
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("same seed, different faults: %+v vs %+v", a, b)
	}
}
