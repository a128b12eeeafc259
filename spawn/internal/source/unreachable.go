package source

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
)

// HTTPStatuser is an error that carries the HTTP status a service
// answered (a feed's 503, a stream's refused handshake).
type HTTPStatuser interface {
	HTTPStatus() int
}

// StatusError is a service's answer other than 2xx, as a source wraps it
// in its own error: its text is the status line ("503 Service
// Unavailable").
type StatusError struct {
	Code   int
	Status string // the status line as received; "" for the code's text
}

func (e StatusError) Error() string {
	if e.Status != "" {
		return e.Status
	}
	return fmt.Sprintf("%d %s", e.Code, http.StatusText(e.Code))
}

// HTTPStatus is the code the service answered.
func (e StatusError) HTTPStatus() int { return e.Code }

// Unreachable says, in a few words, why err means the service could not
// be reached — its name did not resolve, the connection was refused, reset
// or timed out, TLS failed, it answered an HTTP error — and "" when err is
// none of those (a malformed message, a query the service refused). The
// node shows a subscriber whose source cannot reach its service as
// degraded, with this reason first. An answer refusing the credentials
// (401, 403) is the credentials' fault, not reachability's: "".
func Unreachable(err error) string {
	if err == nil {
		return ""
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		switch {
		case dns.IsNotFound:
			return fmt.Sprintf("DNS: %s not found", dns.Name)
		case dns.IsTimeout:
			return fmt.Sprintf("DNS: no answer for %s in time", dns.Name)
		}
		return fmt.Sprintf("DNS: %s could not be looked up", dns.Name)
	}
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		record     tls.RecordHeaderError
		tlsAlert   tls.AlertError
		statusErr  HTTPStatuser
		netTimeout net.Error
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return "TLS: the server's certificate is not trusted"
	case errors.As(err, &record), errors.As(err, &tlsAlert):
		return "TLS: the handshake failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "network unreachable"
	case errors.As(err, &statusErr):
		code := statusErr.HTTPStatus()
		if code < 400 || code == http.StatusUnauthorized || code == http.StatusForbidden {
			return ""
		}
		return fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	case errors.As(err, &netTimeout) && netTimeout.Timeout():
		return "timed out"
	}
	return ""
}
