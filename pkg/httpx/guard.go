package httpx

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Origin, Host and Content-Type checks: what keeps a web page from using a
// server through the browser of someone who can reach it.
//
// A page on another origin may send a browser's "simple" requests to any
// address, without asking: a POST whose body is text/plain or a form, and
// any GET. A page on a name its owner points at 127.0.0.1 (DNS rebinding) is
// even same-origin with the server as far as the browser knows, and may read
// the answers. Bearer tokens are not sent by browsers on their own, so a
// server with tokens is safe from the first; the second reads whatever is
// open (health, metrics), and a server without tokens is open to both.
// Guard refuses them all, tokens or not:
//
//   - the Host of every request must be a name of the server (Hosts): a
//     rebinding page's Host is its own name;
//   - a request that carries an Origin (browsers send one with every write)
//     must come from the server's own origin, or from a name the operator
//     allowed;
//   - a write with a body must say Content-Type: application/json, which no
//     page can send to another origin without the server's consent (a CORS
//     preflight, which these servers never grant).

// Hosts are the names a server answers to: loopback names and addresses,
// the addresses it listens on, the host names of the URLs it is reached at
// (its advertised URL), and what the operator allowed (--allowed-hosts).
// The zero value allows loopback only.
type Hosts struct {
	names map[string]bool     // lowercase host names, no port
	ips   map[netip.Addr]bool // addresses, unmapped
	// allowed are the operator's names and addresses, which are also
	// trusted as the origin of a page (a reverse proxy's public name).
	allowed map[string]bool
}

// ErrBadHost marks an --allowed-hosts entry or URL that names no host.
var ErrBadHost = errors.New("httpx: not a host name or address")

// NewHosts builds the names of a server bound to listen that is reached at
// urls (its advertised URLs; empty ones are skipped) and allowed, from
// --allowed-hosts, the other names an operator reaches it by: each a host
// name or an IP address, without scheme or port. A server bound to every
// interface (0.0.0.0, ::) answers to the addresses of all of them.
func NewHosts(listen net.Addr, urls, allowed []string) (*Hosts, error) {
	h := &Hosts{names: map[string]bool{}, ips: map[netip.Addr]bool{}, allowed: map[string]bool{}}
	if tcp, ok := listen.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(tcp.IP); ok {
			ip = ip.Unmap()
			if ip.IsUnspecified() {
				h.addInterfaces()
			} else {
				h.ips[ip] = true
			}
		}
	}
	for _, raw := range urls {
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("%w: URL %q", ErrBadHost, raw)
		}
		h.add(u.Hostname())
	}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		name := hostOnly(a)
		if name == "" || strings.ContainsAny(a, "/@ ") {
			return nil, fmt.Errorf("%w: --allowed-hosts entry %q (want a host name or an IP address, e.g. bw.example.com)", ErrBadHost, a)
		}
		h.add(name)
		h.allowed[name] = true
	}
	return h, nil
}

// addInterfaces adds the addresses of the machine's interfaces.
func (h *Hosts) addInterfaces() {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return // loopback still answers
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			h.ips[p.Addr().Unmap()] = true
		}
	}
}

// add records a host name or address.
func (h *Hosts) add(host string) {
	if ip, err := netip.ParseAddr(host); err == nil {
		h.ips[ip.Unmap()] = true
		return
	}
	h.names[host] = true
}

// hostOnly is the lowercase host of a Host header or an --allowed-hosts
// entry: the port, the brackets of an IPv6 address and a final dot go.
func hostOnly(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if i := strings.IndexByte(host, '%'); i >= 0 { // an IPv6 zone
		host = host[:i]
	}
	return strings.ToLower(host)
}

// Allows reports whether host (a Host header, with or without its port) is
// a name of the server.
func (h *Hosts) Allows(host string) bool {
	name := hostOnly(host)
	if name == "" {
		return false
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap()
		return ip.IsLoopback() || (h != nil && h.ips[ip])
	}
	return name == "localhost" || (h != nil && h.names[name])
}

// trustsOrigin reports whether a page at origin may use the server that r
// reached: it is the server's own origin (the same host and port as r's
// Host), or its host is one the operator allowed.
func (h *Hosts) trustsOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // "null" (a sandboxed or file page) included
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return h != nil && h.allowed[hostOnly(u.Host)]
}

// isWrite reports whether a method changes something.
func isWrite(method string) bool {
	return !slices.Contains([]string{http.MethodGet, http.MethodHead, http.MethodOptions}, method)
}

// Guard wraps h with the Host, Origin and Content-Type checks (see above).
// A refused request gets 403 (Host, Origin) or 415 (Content-Type) with a
// JSON error saying what to change, and never reaches h.
func Guard(hosts *Hosts, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.Allows(r.Host) {
			WriteError(w, http.StatusForbidden, "host %q is not a name of this server (an operator reaching it by that name allows it with --allowed-hosts)", r.Host)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !hosts.trustsOrigin(origin, r) {
			WriteError(w, http.StatusForbidden, "cross-origin request from %q refused (a reverse proxy's public name is allowed with --allowed-hosts)", origin)
			return
		}
		if isWrite(r.Method) && r.ContentLength != 0 {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				WriteError(w, http.StatusUnsupportedMediaType, "a %s with a body must have Content-Type: application/json, got %q", r.Method, r.Header.Get("Content-Type"))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
