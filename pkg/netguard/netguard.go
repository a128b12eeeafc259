// Package netguard builds HTTP clients for untrusted targets: the feeds a
// spawn crawls (a customer types a feed URL) and the webhooks the hub
// delivers alerts to (a customer types a webhook URL). The client refuses
// to connect to loopback, private, link-local (cloud metadata at
// 169.254.169.254 included), CGNAT, multicast and other non-public
// addresses unless an operator allowed their range (--allow-targets). The
// check runs on the resolved address at connect time, after DNS and on
// every redirect, so neither a hostname that resolves to 127.0.0.1 nor a
// redirect to the metadata service gets through; a refused dial sends no
// packet.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Defaults of Options. They cap how long one crawl request may hold a
// connection, so a slow or silent target cannot stall a data source.
const (
	// DefaultTimeout bounds a whole request: connect, headers and body.
	DefaultTimeout = 30 * time.Second
	// DefaultDialTimeout bounds establishing a TCP connection.
	DefaultDialTimeout = 10 * time.Second
	// DefaultTLSHandshakeTimeout bounds the TLS handshake.
	DefaultTLSHandshakeTimeout = 10 * time.Second
	// DefaultResponseHeaderTimeout bounds the wait for response headers
	// after the request was sent.
	DefaultResponseHeaderTimeout = 20 * time.Second
	// DefaultMaxRedirects is how many redirects one request may follow.
	DefaultMaxRedirects = 5
	// idleConnTimeout closes keep-alive connections a poller no longer uses.
	idleConnTimeout = 90 * time.Second
	// maxIdleConnsPerHost keeps a few connections per feed host warm.
	maxIdleConnsPerHost = 4
	// tcpKeepAlive probes idle connections so dead peers are noticed.
	tcpKeepAlive = 30 * time.Second
	// expectContinueTimeout bounds the wait for "100 Continue".
	expectContinueTimeout = time.Second
)

// ErrForbiddenTarget is wrapped by every refusal to connect to an address
// that is not a public unicast address and not allowed by Options.Allow.
var ErrForbiddenTarget = errors.New("netguard: forbidden target")

// ErrTooManyRedirects is returned when a target redirects more often than
// Options.MaxRedirects allows.
var ErrTooManyRedirects = errors.New("netguard: too many redirects")

// Options configure NewClient. The zero value refuses every non-public
// address and uses the default timeouts.
type Options struct {
	// Allow lists ranges that may be crawled although they are not public
	// (127.0.0.0/8 for tests, 10.0.0.0/8 for a private deployment).
	Allow []netip.Prefix
	// Timeout bounds a whole request; 0 means DefaultTimeout.
	Timeout time.Duration
	// DialTimeout bounds a TCP connect; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for headers; 0 means
	// DefaultResponseHeaderTimeout.
	ResponseHeaderTimeout time.Duration
	// MaxRedirects caps redirects per request; 0 means DefaultMaxRedirects
	// and a negative value refuses every redirect.
	MaxRedirects int
}

// blocked lists the ranges refused by default, with the reason a refusal
// names. IPv4-mapped IPv6 addresses are unmapped before the check, and the
// IPv4 address embedded in NAT64 and 6to4 addresses is checked as well.
var blocked = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (broadcast included)"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("fc00::/7"), "private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Prefixes whose addresses embed an IPv4 address that a gateway may
// forward to.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// Check returns nil when addr may be crawled: it is a public unicast
// address, or inside one of the allowed prefixes. Otherwise the error wraps
// ErrForbiddenTarget and says why.
func Check(addr netip.Addr, allow []netip.Prefix) error {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrForbiddenTarget)
	}
	for _, p := range allow {
		if p.Contains(addr.WithZone("")) {
			return nil
		}
	}
	if reason := forbiddenReason(addr.WithZone("")); reason != "" {
		return fmt.Errorf("%w: %s is %s", ErrForbiddenTarget, addr, reason)
	}
	return nil
}

func forbiddenReason(addr netip.Addr) string {
	for _, b := range blocked {
		if b.prefix.Contains(addr) {
			return b.reason
		}
	}
	// Catch-alls for anything the table does not name.
	switch {
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "link-local"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast"
	case addr.IsUnspecified():
		return "unspecified"
	}
	if addr.Is6() {
		b := addr.As16()
		var v4 netip.Addr
		switch {
		case nat64Prefix.Contains(addr):
			v4 = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFour.Contains(addr):
			v4 = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
		if v4.IsValid() {
			if r := forbiddenReason(v4); r != "" {
				return "an IPv6 address embedding " + v4.String() + ", which is " + r
			}
		}
	}
	return ""
}

// control runs after the socket is created and before connect, with the
// resolved address: refusing here sends nothing to the target.
func control(allow []netip.Prefix) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse dial address %q: %v", ErrForbiddenTarget, address, err)
		}
		// net.Dialer wraps this error in a *net.OpError that already names
		// the network and address.
		return Check(ap.Addr(), allow)
	}
}

// NewClient returns an HTTP client that connects only to permitted
// addresses and caps the time of every request. It ignores proxy settings
// from the environment: a proxy would connect on the client's behalf and
// bypass the address check.
func NewClient(opts Options) *http.Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.ResponseHeaderTimeout <= 0 {
		opts.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	}
	if opts.MaxRedirects == 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	allow := make([]netip.Prefix, len(opts.Allow))
	for i, p := range opts.Allow {
		allow[i] = p.Masked()
	}
	dialer := &net.Dialer{
		Timeout:   opts.DialTimeout,
		KeepAlive: tcpKeepAlive,
		Control:   control(allow),
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   DefaultTLSHandshakeTimeout,
		ResponseHeaderTimeout: opts.ResponseHeaderTimeout,
		ExpectContinueTimeout: expectContinueTimeout,
		IdleConnTimeout:       idleConnTimeout,
		MaxIdleConnsPerHost:   maxIdleConnsPerHost,
	}
	maxRedirects := opts.MaxRedirects
	return &http.Client{
		Transport: transport,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: redirect to non-HTTP URL %s", ErrForbiddenTarget, req.URL.Redacted())
			}
			return nil
		},
	}
}

// ParseAllow reads the --allow-targets list: CIDRs ("127.0.0.0/8",
// "fd00::/8") or single addresses ("10.1.2.3"). Entries may also be
// comma-separated within one string; blanks are ignored.
func ParseAllow(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range list {
		for _, s := range strings.Split(item, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if strings.Contains(s, "/") {
				p, err := netip.ParsePrefix(s)
				if err != nil {
					return nil, fmt.Errorf("netguard: allow-targets entry %q is not a CIDR such as 10.0.0.0/8: %w", s, err)
				}
				if p.Addr().Is4In6() && p.Bits() >= 96 {
					// Addresses are unmapped before the check, so unmap
					// the range too.
					p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
				}
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("netguard: allow-targets entry %q is neither a CIDR such as 10.0.0.0/8 nor an IP address", s)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("netguard: allow-targets entry %q must not carry a zone", s)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}
