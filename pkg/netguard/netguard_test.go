package netguard

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var loopbackAllowed = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func TestCheck_RefusesNonPublicAddresses(t *testing.T) {
	tests := []struct {
		addr   string
		allow  []netip.Prefix
		reason string // empty: allowed
	}{
		{addr: "8.8.8.8"},
		{addr: "1.1.1.1"},
		{addr: "172.32.0.1"},
		{addr: "100.128.0.1"},
		{addr: "2606:4700:4700::1111"},
		{addr: "127.0.0.1", reason: "loopback"},
		{addr: "127.8.9.10", reason: "loopback"},
		{addr: "10.1.2.3", reason: "private"},
		{addr: "172.16.0.1", reason: "private"},
		{addr: "192.168.1.1", reason: "private"},
		{addr: "169.254.169.254", reason: "link-local"},
		{addr: "100.64.0.1", reason: "CGNAT"},
		{addr: "0.0.0.0", reason: "unspecified"},
		{addr: "224.0.0.1", reason: "multicast"},
		{addr: "255.255.255.255", reason: "broadcast"},
		{addr: "::", reason: "unspecified"},
		{addr: "::1", reason: "loopback"},
		{addr: "fc00::1", reason: "private"},
		{addr: "fd12:3456::1", reason: "private"},
		{addr: "fe80::1%eth0", reason: "link-local"},
		{addr: "ff02::1", reason: "multicast"},
		{addr: "::ffff:127.0.0.1", reason: "loopback"},
		{addr: "::ffff:169.254.169.254", reason: "link-local"},
		{addr: "64:ff9b::a9fe:a9fe", reason: "embedding 169.254.169.254"},
		{addr: "2002:7f00:1::1", reason: "embedding 127.0.0.1"},
		{addr: "127.0.0.1", allow: loopbackAllowed},
		{addr: "::ffff:127.0.0.1", allow: loopbackAllowed},
		{addr: "10.9.8.7", allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		{addr: "169.254.169.254", allow: loopbackAllowed, reason: "link-local"},
		{addr: "10.9.8.7", allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, reason: "private"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := Check(netip.MustParseAddr(tt.addr), tt.allow)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", tt.addr, err)
				}
				return
			}
			if !errors.Is(err, ErrForbiddenTarget) {
				t.Fatalf("Check(%s) = %v, want ErrForbiddenTarget", tt.addr, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Check(%s) = %q, want the reason %q", tt.addr, err, tt.reason)
			}
		})
	}
}

func TestParseAllow(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{name: "empty", in: nil, want: nil},
		{name: "cidrs", in: []string{"127.0.0.0/8", "fd00::/8"}, want: []string{"127.0.0.0/8", "fd00::/8"}},
		{name: "comma separated with blanks", in: []string{" 10.0.0.0/8 , ,192.168.0.0/16", ""}, want: []string{"10.0.0.0/8", "192.168.0.0/16"}},
		{name: "host bits masked", in: []string{"127.0.0.1/8"}, want: []string{"127.0.0.0/8"}},
		{name: "single addresses", in: []string{"10.1.2.3", "::1"}, want: []string{"10.1.2.3/32", "::1/128"}},
		{name: "mapped range unmapped", in: []string{"::ffff:10.0.0.0/104"}, want: []string{"10.0.0.0/8"}},
		{name: "not an address", in: []string{"localhost"}, wantErr: `"localhost" is neither a CIDR`},
		{name: "bad prefix length", in: []string{"10.0.0.0/33"}, wantErr: `"10.0.0.0/33" is not a CIDR`},
		{name: "zone", in: []string{"fe80::1%eth0"}, wantErr: "zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAllow(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseAllow(%q) error = %v, want it to mention %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAllow(%q): %v", tt.in, err)
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if strings.Join(gotS, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("ParseAllow(%q) = %v, want %v", tt.in, gotS, tt.want)
			}
		})
	}
}

// countingServer starts an HTTP server on 127.0.0.1 that answers with h and
// counts the requests it receives.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestClient_GuardsEveryConnection(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }
	srv, _ := countingServer(t, ok)
	redirect := func(to string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) }
	}
	metadata, metadataHits := countingServer(t, redirect("http://169.254.169.254/latest/meta-data/"))
	loop, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path, http.StatusFound) })
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		allow   []netip.Prefix
		url     string
		wantErr error
	}{
		{name: "allowed loopback", allow: loopbackAllowed, url: srv.URL},
		{name: "loopback refused by default", url: srv.URL, wantErr: ErrForbiddenTarget},
		{name: "hostname resolving to loopback refused", url: "http://localhost:" + port + "/", wantErr: ErrForbiddenTarget},
		{name: "redirect to metadata refused", allow: loopbackAllowed, url: metadata.URL, wantErr: ErrForbiddenTarget},
		{name: "redirect loop stopped", allow: loopbackAllowed, url: loop.URL + "/again", wantErr: ErrTooManyRedirects},
		{name: "unspecified address refused", url: "http://0.0.0.0:" + port + "/", wantErr: ErrForbiddenTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The metadata address is not routable here: a dial that
			// reached connect() would hang until this short timeout.
			c := NewClient(Options{Allow: tt.allow, Timeout: 2 * time.Second, DialTimeout: time.Second})
			start := time.Now()
			resp, err := c.Get(tt.url)
			if resp != nil {
				resp.Body.Close()
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("GET %s: %v", tt.url, err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s: status %d", tt.url, resp.StatusCode)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("GET %s: err = %v, want %v", tt.url, err, tt.wantErr)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("GET %s took %v: the refusal must come before any connect", tt.url, d)
			}
		})
	}
	if n := metadataHits.Load(); n != 1 {
		t.Fatalf("redirecting server saw %d requests, want 1", n)
	}
}

func TestClient_RefusedBeforeServerSeesRequest(t *testing.T) {
	srv, hits := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {})
	c := NewClient(Options{Timeout: time.Second})
	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET to loopback without an allow-list succeeded")
	}
	if !errors.Is(err, ErrForbiddenTarget) || !strings.Contains(err.Error(), "127.0.0.1 is loopback") {
		t.Fatalf("err = %v, want a loopback refusal", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server saw %d requests, want 0", n)
	}
}

func TestClient_TimesOutSilentServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c := NewClient(Options{Allow: loopbackAllowed, Timeout: 200 * time.Millisecond})
	start := time.Now()
	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET to a silent server succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("GET took %v, want about the 200ms timeout", d)
	}
}
