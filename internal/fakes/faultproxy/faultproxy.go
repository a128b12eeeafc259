// Package faultproxy is an HTTP proxy a test puts between the hub and a
// spawn to make their link unreliable on purpose: it drops, delays,
// duplicates and replays messages, fails chosen requests, and cuts the link
// both ways until it is healed. Every fault is decided by a seeded random
// source, so a failing run can be repeated with the seed it logged.
package faultproxy

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/fakehttp"
)

// maxBody caps a forwarded request or response body.
const maxBody = 32 << 20

// Faults are the probabilities and delays applied to each request. The zero
// value forwards everything untouched.
type Faults struct {
	// Drop forwards the request, then drops the answer: the target acted,
	// the caller sees a broken connection.
	Drop float64
	// Refuse drops the request before it reaches the target.
	Refuse float64
	// Duplicate sends the request to the target a second time, right after
	// the first.
	Duplicate float64
	// Replay keeps a copy of the request and sends it again up to
	// ReplayAfter later, after newer requests: an old message arriving out
	// of order.
	Replay      float64
	ReplayAfter time.Duration
	// Delay holds each request for a random time up to Delay before
	// forwarding it, so concurrent requests overtake each other.
	Delay time.Duration
}

// Stats counts what the proxy did.
type Stats struct {
	Forwarded, Dropped, Refused, Duplicated, Replayed, Failed, Cut int
}

// Proxy forwards HTTP requests to a target with faults.
type Proxy struct {
	url    string
	client *http.Client
	ctx    context.Context // ends when the test does
	wg     sync.WaitGroup  // replays in flight

	mu       sync.Mutex
	target   string
	faults   Faults
	cut      bool
	severs   func(r *http.Request, body []byte) bool
	failNext map[string]int // "METHOD /path" → requests still to fail
	seen     map[string]int // "METHOD /path" → requests received
	rng      *rand.Rand
	stats    Stats
}

// Start runs a proxy on a loopback port until the test ends. target may be
// empty and set later with SetTarget (a spawn's URL is known only once it
// started, after it was told to advertise the proxy). At the end the proxy
// gives up delayed and replayed requests, shuts down, and waits for its
// replays to return.
func Start(tb fakehttp.TB, target string, seed uint64) *Proxy {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		client:   &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}},
		ctx:      ctx,
		target:   strings.TrimRight(target, "/"),
		failNext: map[string]int{},
		seen:     map[string]int{},
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	tb.Cleanup(func() { // after the server's shutdown
		p.wg.Wait()
		p.client.CloseIdleConnections()
	})
	p.url = fakehttp.Serve(tb, http.HandlerFunc(p.serve), cancel)
	return p
}

// URL is where callers send their requests instead of the target.
func (p *Proxy) URL() string { return p.url }

// SetTarget points the proxy at the real server.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = strings.TrimRight(target, "/")
}

// SetFaults replaces the random faults.
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Cut breaks the link: every request fails until Heal, and connections
// already open are closed.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.client.CloseIdleConnections()
}

// Sever breaks the link for the requests that sever reports true for
// (given the request and its body), as Cut does for all; nil restores
// them. Tests cut one caller off a target others still reach, such as a
// deposed hub whose requests carry its term.
func (p *Proxy) Sever(sever func(r *http.Request, body []byte) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.severs = sever
}

// Heal restores a cut link.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// FailNext answers the next n requests of method and path with 502 without
// forwarding them.
func (p *Proxy) FailNext(method, path string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext[method+" "+path] += n
}

// Seen reports how many requests of method and path reached the proxy.
func (p *Proxy) Seen(method, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[method+" "+path]
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// decision is what the proxy does with one request.
type decision struct {
	target                       string
	cut, fail, refuse, drop, dup bool
	replay                       bool
	delay, replayAfter           time.Duration
}

func (p *Proxy) decide(key string) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[key]++
	d := decision{target: p.target, cut: p.cut}
	if d.cut {
		p.stats.Cut++
		return d
	}
	if p.failNext[key] > 0 {
		p.failNext[key]--
		p.stats.Failed++
		d.fail = true
		return d
	}
	f := p.faults
	chance := func(x float64) bool { return x > 0 && p.rng.Float64() < x }
	if f.Delay > 0 {
		d.delay = time.Duration(p.rng.Int64N(int64(f.Delay)))
	}
	switch {
	case chance(f.Refuse):
		d.refuse = true
		p.stats.Refused++
		return d
	case chance(f.Drop):
		d.drop = true
		p.stats.Dropped++
	}
	if chance(f.Duplicate) {
		d.dup = true
		p.stats.Duplicated++
	}
	if chance(f.Replay) && f.ReplayAfter > 0 {
		d.replay = true
		d.replayAfter = time.Duration(p.rng.Int64N(int64(f.ReplayAfter))) + 1
		p.stats.Replayed++
	}
	p.stats.Forwarded++
	return d
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		abort(w)
		return
	}
	d := p.decide(r.Method + " " + r.URL.Path)
	p.mu.Lock()
	sever := p.severs
	p.mu.Unlock()
	if sever != nil && sever(r, body) {
		d.cut = true
	}
	switch {
	case d.cut, d.refuse:
		abort(w)
		return
	case d.fail:
		http.Error(w, `{"error":"faultproxy: injected failure"}`, http.StatusBadGateway)
		return
	case d.target == "":
		http.Error(w, `{"error":"faultproxy: no target yet"}`, http.StatusBadGateway)
		return
	}
	if d.delay > 0 {
		select {
		case <-time.After(d.delay):
		case <-r.Context().Done():
			return
		}
	}
	resp, respBody, err := p.forward(r.Context(), d.target, r, body)
	if d.dup {
		_, _, _ = p.forward(p.ctx, d.target, r, body)
	}
	if d.replay {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			select {
			case <-time.After(d.replayAfter):
				_, _, _ = p.forward(p.ctx, d.target, r, body)
			case <-p.ctx.Done():
			}
		}()
	}
	if err != nil || d.drop || p.isCut() {
		abort(w)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

func (p *Proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// forward sends a copy of r to the target and reads the whole answer.
func (p *Proxy) forward(ctx context.Context, target string, r *http.Request, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, nil, err
	}
	return resp, b, nil
}

// abort closes the caller's connection without an answer, as a broken
// network would.
func abort(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // reset, not a polite close
	}
	_ = conn.Close()
}
