package httpx

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
)

// maxPEMBytes caps a certificate or CA file, so a wrong path (a log, a
// device) fails clearly instead of filling memory.
const maxPEMBytes = 1 << 20

// ErrExposed is returned when a server would listen beyond loopback without
// the tokens that guard its APIs.
var ErrExposed = errors.New("httpx: refusing to serve without tokens on a non-loopback address")

// TLSFiles name a server's or client's PEM files. Empty fields are unused.
type TLSFiles struct {
	// Cert and Key are this side's certificate chain and private key: a
	// server presents them to its clients, a client to servers that ask
	// for client certificates.
	Cert, Key string
	// CA verifies the other side: a server's client certificates, or a
	// client's servers. Empty means: a server asks for no client
	// certificate; a client trusts the system's roots.
	CA string
}

// ServerTLS builds the TLS configuration of a server from its certificate
// and key, or nil when neither is given. With a CA, clients may present a
// certificate, which must then chain to it; RequireClientCert decides which
// routes insist on one.
func ServerTLS(f TLSFiles) (*tls.Config, error) {
	if f.Cert == "" && f.Key == "" {
		if f.CA != "" {
			return nil, errors.New("httpx: --client-ca needs --tls-cert and --tls-key: client certificates travel only over TLS")
		}
		return nil, nil
	}
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("httpx: --tls-cert and --tls-key go together")
	}
	cert, err := loadKeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pool, err := loadPool(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// ClientTLS builds the TLS configuration of a client: the servers' CA (none:
// the system's roots) and, when given, the certificate it presents to
// servers that ask for one. It returns nil when there is nothing to
// configure.
func ClientTLS(f TLSFiles) (*tls.Config, error) {
	if f.Cert == "" && f.Key == "" && f.CA == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pool, err := loadPool(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if f.Cert != "" || f.Key != "" {
		if f.Cert == "" || f.Key == "" {
			return nil, errors.New("httpx: a client certificate needs both its certificate and its key")
		}
		cert, err := loadKeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := readPEM(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := readPEM(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("httpx: certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

func loadPool(caFile string) (*x509.CertPool, error) {
	b, err := readPEM(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("httpx: CA file %s holds no PEM certificate", caFile)
	}
	return pool, nil
}

func readPEM(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("httpx: unable to read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMBytes+1))
	if err != nil {
		return nil, fmt.Errorf("httpx: unable to read %s: %w", path, err)
	}
	if len(b) > maxPEMBytes {
		return nil, fmt.Errorf("httpx: %s is larger than %d bytes: not a PEM file", path, maxPEMBytes)
	}
	return b, nil
}

// CheckExposure refuses a server bound to a non-loopback address (every
// interface included) without the tokens that guard its APIs, unless the
// operator said --insecure. Anyone who can reach such a server could
// otherwise register nodes or change crawlers.
func CheckExposure(addr net.Addr, haveTokens, insecure bool) error {
	if haveTokens || insecure {
		return nil
	}
	tcp, ok := addr.(*net.TCPAddr)
	if ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w %s: set the tokens (BW_NODE_TOKEN, and BW_ADMIN_TOKEN on a hub) or pass --insecure", ErrExposed, addr)
}

// RequireClientCert wraps h so that requests to the paths protected names
// reach it only over TLS with a client certificate the server verified
// (ServerTLS with a CA asks for one). Other paths pass untouched.
func RequireClientCert(protected func(path string) bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if protected(r.URL.Path) && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			WriteError(w, http.StatusUnauthorized, "a client certificate signed by the server's --client-ca is required")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// MinTokenBytes is the shortest token a server starts with: 16 bytes, what
// `openssl rand -hex 16` prints twice over. A short or guessable token is
// no token.
const MinTokenBytes = 16

// ErrWeakToken is returned for a token a server refuses to start with.
var ErrWeakToken = errors.New("httpx: weak token")

// Token is a secret a server checks, with the names an operator sets it by.
type Token struct {
	Name  string // "BW_NODE_TOKEN (--node-token)"
	Value string
}

// CheckTokens returns the tokens trimmed of surrounding white space (which
// no Authorization header can carry back), or an error naming the first that
// is set but shorter than MinTokenBytes once trimmed, blank included, or
// equal to another. A token left unset (empty) is not checked: the server
// then runs without it, which CheckExposure allows on loopback only.
func CheckTokens(tokens ...Token) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		if t.Value == "" {
			continue
		}
		v := strings.TrimSpace(t.Value)
		switch {
		case v == "":
			return nil, fmt.Errorf("%w: %s is blank (only white space): unset it to run without a token on loopback, or set one of at least %d bytes (openssl rand -hex 16)", ErrWeakToken, t.Name, MinTokenBytes)
		case len(v) < MinTokenBytes:
			return nil, fmt.Errorf("%w: %s is %d bytes long; a token must have at least %d (openssl rand -hex 16)", ErrWeakToken, t.Name, len(v), MinTokenBytes)
		}
		for j := range i {
			if out[j] == v {
				return nil, fmt.Errorf("%w: %s equals %s; each must be a secret of its own", ErrWeakToken, t.Name, tokens[j].Name)
			}
		}
		out[i] = v
	}
	return out, nil
}
