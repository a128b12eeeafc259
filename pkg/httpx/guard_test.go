package httpx

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// guarded is a server bound to 10.0.3.17:8700, advertised as
// https://hub.internal:8700, with bw.example.com allowed (a reverse proxy's
// public name), whose one handler counts what reaches it.
func guarded(t *testing.T) (http.Handler, *int) {
	t.Helper()
	hosts, err := NewHosts(&net.TCPAddr{IP: net.ParseIP("10.0.3.17"), Port: 8700},
		[]string{"https://hub.internal:8700"}, []string{"bw.example.com", " 192.0.2.10 "})
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	return Guard(hosts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})), &reached
}

func TestGuard(t *testing.T) {
	type header = map[string]string
	cases := []struct {
		name, method, host, body string
		header                   header
		want                     int
		says                     string // in the error
	}{
		// Host: the server's names only.
		{name: "loopback address", method: "GET", host: "127.0.0.1:8700", want: 200},
		{name: "other loopback address", method: "GET", host: "127.9.9.9", want: 200},
		{name: "ipv6 loopback", method: "GET", host: "[::1]:8700", want: 200},
		{name: "localhost", method: "GET", host: "LocalHost.:8700", want: 200},
		{name: "bound address", method: "GET", host: "10.0.3.17:8700", want: 200},
		{name: "advertised name", method: "GET", host: "hub.internal:8700", want: 200},
		{name: "allowed name on any port", method: "GET", host: "BW.example.com", want: 200},
		{name: "allowed address", method: "GET", host: "192.0.2.10:443", want: 200},
		{name: "rebinding name", method: "GET", host: "evil.example:8700", want: 403, says: `host "evil.example:8700" is not a name of this server`},
		{name: "subdomain of an allowed name", method: "GET", host: "x.bw.example.com", want: 403, says: "--allowed-hosts"},
		{name: "another address", method: "GET", host: "10.0.3.18:8700", want: 403, says: "not a name"},
		{name: "no host", method: "GET", host: "", want: 403, says: "not a name"},
		{name: "rebinding name, write", method: "POST", host: "evil.example", body: `{}`, header: header{"Content-Type": "application/json"}, want: 403},

		// Origin: the server's own, or an allowed name.
		{name: "same origin write", method: "POST", host: "127.0.0.1:8700", body: `{}`, header: header{"Origin": "http://127.0.0.1:8700", "Content-Type": "application/json"}, want: 200},
		{name: "same origin over https", method: "DELETE", host: "hub.internal:8700", header: header{"Origin": "https://hub.internal:8700"}, want: 200},
		{name: "proxy's public origin", method: "PATCH", host: "127.0.0.1:8700", body: `{}`, header: header{"Origin": "https://bw.example.com", "Content-Type": "application/json"}, want: 200},
		{name: "other origin", method: "POST", host: "127.0.0.1:8700", body: `{}`, header: header{"Origin": "http://evil.example", "Content-Type": "application/json"}, want: 403, says: `cross-origin request from "http://evil.example" refused`},
		{name: "other port on loopback", method: "POST", host: "127.0.0.1:8700", header: header{"Origin": "http://127.0.0.1:3000"}, want: 403, says: "cross-origin"},
		{name: "localhost page to loopback address", method: "POST", host: "127.0.0.1:8700", header: header{"Origin": "http://localhost:8700"}, want: 403, says: "cross-origin"},
		{name: "opaque origin", method: "POST", host: "127.0.0.1:8700", header: header{"Origin": "null"}, want: 403, says: `from "null"`},
		{name: "other origin, read", method: "GET", host: "127.0.0.1:8700", header: header{"Origin": "http://evil.example"}, want: 403},
		{name: "other origin, bodiless write", method: "POST", host: "127.0.0.1:8700", header: header{"Origin": "http://evil.example"}, want: 403},

		// Content-Type: a write with a body is JSON.
		{name: "json write", method: "PUT", host: "127.0.0.1", body: `{}`, header: header{"Content-Type": "application/json"}, want: 200},
		{name: "json with charset", method: "POST", host: "127.0.0.1", body: `{}`, header: header{"Content-Type": "Application/JSON; charset=utf-8"}, want: 200},
		{name: "text/plain write", method: "POST", host: "127.0.0.1", body: `{"name":"x"}`, header: header{"Content-Type": "text/plain;charset=UTF-8"}, want: 415, says: `a POST with a body must have Content-Type: application/json, got "text/plain;charset=UTF-8"`},
		{name: "form write", method: "PATCH", host: "127.0.0.1", body: `a=b`, header: header{"Content-Type": "application/x-www-form-urlencoded"}, want: 415},
		{name: "multipart write", method: "POST", host: "127.0.0.1", body: `x`, header: header{"Content-Type": "multipart/form-data; boundary=x"}, want: 415},
		{name: "write without content type", method: "POST", host: "127.0.0.1", body: `{}`, want: 415, says: `got ""`},
		{name: "delete with a text body", method: "DELETE", host: "127.0.0.1", body: `x`, header: header{"Content-Type": "text/plain"}, want: 415},
		{name: "json lookalike", method: "POST", host: "127.0.0.1", body: `{}`, header: header{"Content-Type": "application/json-seq"}, want: 415},
		{name: "bodiless delete", method: "DELETE", host: "127.0.0.1", want: 200},
		{name: "bodiless post", method: "POST", host: "127.0.0.1", want: 200},
		{name: "read with any content type", method: "GET", host: "127.0.0.1", header: header{"Content-Type": "text/plain"}, want: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, reached := guarded(t)
			r := httptest.NewRequest(tc.method, "/v1/crawlers", strings.NewReader(tc.body))
			r.Host = tc.host
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d (%s)", w.Code, tc.want, w.Body)
			}
			if tc.want != 200 {
				if *reached != 0 {
					t.Error("a refused request reached the handler")
				}
				var e api.Error
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, tc.says) {
					t.Errorf("error %q (%v), want it to say %q", w.Body, err, tc.says)
				}
			}
		})
	}
}

func TestGuard_NilHostsAllowLoopbackOnly(t *testing.T) {
	h := Guard(nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for host, want := range map[string]int{"127.0.0.1:1": 200, "localhost": 200, "[::1]:1": 200, "10.1.2.3": 403, "hub.internal": 403} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("host %q: %d, want %d", host, w.Code, want)
		}
	}
}

func TestNewHosts_RefusesWhatIsNoHost(t *testing.T) {
	addr := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}
	for _, allowed := range []string{"https://bw.example.com", "bw.example.com/path", "user@bw.example.com", "bw example", ":8700"} {
		if _, err := NewHosts(addr, nil, []string{allowed}); !errors.Is(err, ErrBadHost) || !strings.Contains(err.Error(), allowed) {
			t.Errorf("--allowed-hosts %q: %v, want ErrBadHost naming it", allowed, err)
		}
	}
	if _, err := NewHosts(addr, []string{"not a url"}, nil); !errors.Is(err, ErrBadHost) {
		t.Errorf("advertised URL without a host: %v", err)
	}
	if _, err := NewHosts(addr, []string{"", "http://hub:8700"}, []string{"", "hub-2", "[2001:db8::1]:443"}); err != nil {
		t.Errorf("good names refused: %v", err)
	}
}

// TestNewHosts_EveryInterfaceAnswersByItsAddresses: a server bound to
// 0.0.0.0 is reached at any of the machine's addresses.
func TestNewHosts_EveryInterfaceAnswersByItsAddresses(t *testing.T) {
	hosts, err := NewHosts(&net.TCPAddr{IP: net.IPv4zero, Port: 8700}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		ip, _, err := net.ParseCIDR(a.String())
		if err != nil {
			continue
		}
		if !hosts.Allows(net.JoinHostPort(ip.String(), "8700")) {
			t.Errorf("interface address %s refused", ip)
		}
	}
	if hosts.Allows("203.0.113.7:8700") {
		t.Error("an address of no interface allowed")
	}
}

func TestCheckTokens(t *testing.T) {
	const (
		node  = "BW_NODE_TOKEN (--node-token)"
		admin = "BW_ADMIN_TOKEN (--admin-token)"
		good  = "0123456789abcdef" // 16 bytes
		other = "fedcba9876543210"
	)
	cases := []struct {
		name        string
		node, admin string
		want        []string // trimmed tokens; nil: refused
		says        string
	}{
		{"both unset", "", "", []string{"", ""}, ""},
		{"both good", good, other, []string{good, other}, ""},
		{"surrounding white space trimmed", " " + good + "\n", other, []string{good, other}, ""},
		{"one unset", good, "", []string{good, ""}, ""},
		{"blank", "   ", other, nil, node + " is blank"},
		{"one character", "x", other, nil, node + " is 1 bytes long; a token must have at least 16"},
		{"fifteen bytes", good, good[:15], nil, admin + " is 15 bytes long"},
		{"short once trimmed", "  0123456789abcde  ", other, nil, node + " is 15 bytes long"},
		{"admin equals node", good, good, nil, admin + " equals " + node},
		{"equal once trimmed", good, good + " ", nil, admin + " equals " + node},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckTokens(Token{Name: node, Value: tc.node}, Token{Name: admin, Value: tc.admin})
			if tc.want == nil {
				if !errors.Is(err, ErrWeakToken) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("err %v, want ErrWeakToken saying %q", err, tc.says)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
